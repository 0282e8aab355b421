// The reference for bench/scattered-vs-memcpy: a paged request's chunk list moved
// by plain memcpy, as a load's copy-alone pass moves it. A block is C chunks of
// CHUNK_BYTES (an engine layout's layers: vllm-flash's K and V of every layer), the
// block files' staging side contiguous per block (chunk j at j x CHUNK_BYTES of
// staging buffer b % K), the device side a paged pool of POOL slots with one region
// per chunk kind (chunk j of block b at region j's start + slot(b) x CHUNK_BYTES,
// region j at j x POOL x CHUNK_BYTES), slot(b) line b of TABLE_FILE. T threads,
// thread k copying blocks k, k+T, ... (the blocks round-robin on the streams), all
// started together every iteration; an iteration's time is the latest end - the
// earliest start (as copy alone: first submission to last completion).
// SOURCE (optional, default staging): "regions" puts the source where copy's
// contiguous host side of a block layout has it instead (chunk j of block b at
// (j x blocks + b) x CHUNK_BYTES: each chunk kind its own region), for `copy`'s
// host_to_device_ce with --kv-layout and --block-table.
// REFILL_FILE (optional, with SOURCE staging): before every iteration, outside its
// time, the staging buffers are read from this file with O_DIRECT, as load's disk
// passes leave them for its copy-alone pass: just written by the disk's DMA, not in
// the CPU's caches (the file must hold the staging buffers' bytes).
// IDLE_US (optional, after REFILL_FILE): then every thread sleeps this long before
// the iteration starts, as the CPUs idle through load's disk-alone pass before its
// copy-alone pass (on the development VM a pass after 40 ms of idle vCPUs ran 12-16%
// slower than one after none: docs/development.md, "Readied copy threads").
// Prints {"copy_gib_s": ..., "copy_us": {"avg", "p50", "min"}}, bytes = blocks x C x CHUNK_BYTES.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

char* mapped(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  return static_cast<char*>(p);
}

struct Chunk {
  char* to;
  const char* from;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 9 || argc > 12) {
    std::fprintf(stderr,
                 "usage: scatter_memcpy CHUNK_BYTES CHUNKS_PER_BLOCK TABLE_FILE POOL STAGING_K THREADS ITERS WARMUP "
                 "[staging|regions [REFILL_FILE [IDLE_US]]]\n");
    return 2;
  }
  const std::string source = argc >= 10 ? argv[9] : "staging";
  const char* refill = argc >= 11 ? argv[10] : nullptr;
  const long long idle_us = argc == 12 ? std::strtoll(argv[11], nullptr, 10) : 0;
  if (idle_us < 0) {
    std::fprintf(stderr, "scatter_memcpy: IDLE_US is a count of microseconds, not '%s'\n", argv[11]);
    return 2;
  }
  if (refill && source != "staging") {
    std::fprintf(stderr, "scatter_memcpy: REFILL_FILE refills the staging buffers: SOURCE staging only\n");
    return 2;
  }
  if (source != "staging" && source != "regions") {
    std::fprintf(stderr, "scatter_memcpy: SOURCE is staging or regions, not '%s'\n", source.c_str());
    return 2;
  }
  const size_t chunk = std::strtoull(argv[1], nullptr, 10), per_block = std::strtoull(argv[2], nullptr, 10);
  const size_t pool = std::strtoull(argv[4], nullptr, 10), k = std::strtoull(argv[5], nullptr, 10);
  const int threads = std::atoi(argv[6]), iters = std::atoi(argv[7]), warmup = std::atoi(argv[8]);
  std::vector<size_t> slots;
  std::ifstream in(argv[3]);
  for (size_t s; in >> s;) slots.push_back(s);
  if (chunk == 0 || per_block == 0 || slots.empty() || k == 0 || threads < 1 || iters < 1 || warmup < 0) {
    std::fprintf(stderr, "scatter_memcpy: every count must be positive and the table not empty\n");
    return 2;
  }
  const size_t blocks = slots.size(), block_bytes = chunk * per_block;
  const bool regions = source == "regions";
  const size_t source_bytes = (regions ? blocks : std::min(k, blocks)) * block_bytes;
  char* staging = mapped(source_bytes);
  char* region = mapped(pool * block_bytes);
  std::memset(staging, 0x5a, source_bytes);
  // The chunk list, made before any timing, in the order the pass copies it.
  std::vector<Chunk> list;
  list.reserve(blocks * per_block);
  for (size_t b = 0; b < blocks; ++b)
    for (size_t j = 0; j < per_block; ++j)
      list.push_back({region + j * pool * chunk + slots[b] * chunk,
                      regions ? staging + (j * blocks + b) * chunk : staging + (b % k) * block_bytes + j * chunk});
  std::vector<long long> start(static_cast<size_t>(threads)), end(static_cast<size_t>(threads)), times;
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
  auto barrier = [&](auto last) {
    const int gen = generation.load();
    if (arrived.fetch_add(1) + 1 == threads) {
      arrived.store(0);
      last();
      generation.fetch_add(1);
      return;
    }
    while (generation.load() == gen) std::this_thread::yield();
  };
  // The staging buffers as a disk pass leaves them (REFILL_FILE), untimed.
  auto refill_staging = [&] {
    if (!refill) return;
    const int fd = open(refill, O_RDONLY | O_DIRECT);
    if (fd < 0) {
      std::perror(refill);
      std::exit(1);
    }
    for (size_t off = 0; off < source_bytes;) {
      const ssize_t n = pread(fd, staging + off, std::min<size_t>(size_t{4} << 20, source_bytes - off),
                              static_cast<off_t>(off));
      if (n <= 0) {
        std::fprintf(stderr, "scatter_memcpy: %s holds fewer than the staging's %zu bytes\n", refill, source_bytes);
        std::exit(1);
      }
      off += static_cast<size_t>(n);
    }
    close(fd);
  };
  auto body = [&](int t) {
    for (int it = 0; it < warmup + iters; ++it) {
      barrier(refill_staging);
      if (idle_us > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
        barrier([] {});
      }
      start[static_cast<size_t>(t)] = now_ns();
      for (size_t b = static_cast<size_t>(t); b < blocks; b += static_cast<size_t>(threads))
        for (const Chunk* c = &list[b * per_block]; c != &list[b * per_block] + per_block; ++c)
          std::memcpy(c->to, c->from, chunk);
      end[static_cast<size_t>(t)] = now_ns();
      barrier([&] {
        if (it >= warmup)
          times.push_back(*std::max_element(end.begin(), end.end()) - *std::min_element(start.begin(), start.end()));
      });
    }
  };
  std::vector<std::thread> pool_threads;
  for (int t = 0; t < threads; ++t) pool_threads.emplace_back(body, t);
  for (auto& th : pool_threads) th.join();
  double sum = 0;
  for (long long x : times) sum += static_cast<double>(x);
  const double avg = sum / static_cast<double>(times.size());
  std::sort(times.begin(), times.end());
  const double gib = static_cast<double>(blocks * block_bytes) / (1ULL << 30);
  std::printf("{\"copy_gib_s\": %.3f, \"copy_us\": {\"avg\": %.3f, \"p50\": %.3f, \"min\": %.3f}}\n", gib / (avg * 1e-9),
              avg / 1e3, static_cast<double>(times[(times.size() + 1) / 2 - 1]) / 1e3,
              static_cast<double>(times.front()) / 1e3);
  return 0;
}
