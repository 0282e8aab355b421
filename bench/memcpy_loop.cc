// The reference for bench/sim-vs-memcpy: the same bytes with the same
// parallelism as a copy case, moved by plain memcpy. G groups (one per device),
// each with its own source and destination of N blocks; S threads per group,
// thread k copying blocks k, k+S, k+2S ... (the round-robin a multi-stream case
// uses). All threads start together every iteration.
//
// It times each iteration the way dev-sandbox does (docs/measurement.md, "Timing"):
//   copy = max over groups of (the group's last end - the group's first start),
//          like the Copy stage: the slowest device's span from its first copy's
//          begin to its last copy's end;
//   wall = latest end - earliest start over all threads, like Wall.
// With an eighth argument, D2H_BLOCK_BYTES (bench/duplex-vs-reference), each group
// has a second direction as a duplex case's together pass has: S more threads
// copying N blocks of that size between buffers of their own, both directions'
// threads started together; a group's copy is the longer direction's span (per
// card the longer direction's Copy, as ours), bytes = (BLOCK + D2H_BLOCK) x N x G.
// Prints one JSON object over the measured iterations, bytes = BLOCK x N x G:
//   copy_gib_s, wall_gib_s: bytes / mean(copy), bytes / mean(wall) in GiB/s (our BW and
//   wall_bandwidth_gib_s); copy_us, wall_us: {"avg", "p50", "min"} in microseconds,
//   P50 by nearest rank as ours (docs/measurement.md, "Statistics").
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double mean(const std::vector<long long>& v) {
  double sum = 0;
  for (long long x : v) sum += static_cast<double>(x);
  return sum / static_cast<double>(v.size());
}

// {"avg", "p50", "min"} in microseconds; P50 is the ceil(N/2)-th smallest.
std::string stats_json(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"avg\": %.3f, \"p50\": %.3f, \"min\": %.3f}", mean(v) / 1e3,
                static_cast<double>(v[(v.size() + 1) / 2 - 1]) / 1e3, static_cast<double>(v.front()) / 1e3);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr,
                 "usage: memcpy_loop BLOCK_BYTES BLOCKS_PER_GROUP GROUPS THREADS_PER_GROUP ITERS WARMUP "
                 "[D2H_BLOCK_BYTES]\n");
    return 2;
  }
  const size_t block = std::strtoull(argv[1], nullptr, 10);
  const size_t blocks = std::strtoull(argv[2], nullptr, 10);
  const int groups = std::atoi(argv[3]);
  const int per_group = std::atoi(argv[4]);
  const int iters = std::atoi(argv[5]);
  const int warmup = std::atoi(argv[6]);
  const size_t down_block = argc == 8 ? std::strtoull(argv[7], nullptr, 10) : 0;
  if (block == 0 || blocks == 0 || groups < 1 || per_group < 1 || iters < 1 || warmup < 0 ||
      (argc == 8 && down_block == 0)) {
    std::fprintf(stderr, "memcpy_loop: every count must be positive (WARMUP may be 0)\n");
    return 2;
  }
  const int dirs = argc == 8 ? 2 : 1;
  const size_t dir_block[2] = {block, down_block};
  const int per_dir = per_group;       // threads of one direction of a group
  const int per_grp = per_group * dirs;  // threads of a group
  const int threads = groups * per_grp;
  // buffers[g * dirs + d]: group g's direction d.
  std::vector<char*> src(static_cast<size_t>(groups * dirs)), dst(static_cast<size_t>(groups * dirs));
  for (int i = 0; i < groups * dirs; ++i) {
    const size_t bytes = dir_block[i % dirs] * blocks;
    src[i] = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    dst[i] = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    if (src[i] == MAP_FAILED || dst[i] == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    std::memset(src[i], 0x5a + i, bytes);
  }
  std::vector<long long> start(threads), end(threads);
  std::vector<long long> copies, walls;
  copies.reserve(static_cast<size_t>(iters));
  walls.reserve(static_cast<size_t>(iters));
  std::atomic<int> arrived{0};
  std::atomic<uint32_t> generation{0};
  // The last thread to arrive runs `last`, alone, then releases the others. Waiters
  // spin briefly, then sleep on a futex, as dev-sandbox's engines do: a
  // waiter that yielded in a loop would take CPU from the threads still copying
  // whenever there are more threads than CPUs.
  auto barrier = [&](auto last) {
    const uint32_t gen = generation.load();
    if (arrived.fetch_add(1) + 1 == threads) {
      arrived.store(0);
      last();
      generation.fetch_add(1);
      futex(&generation, FUTEX_WAKE_PRIVATE, INT_MAX);
      return;
    }
    const long long deadline = now_ns() + 3000;  // dev-sandbox's spin: 3 us
    while (generation.load() == gen && now_ns() < deadline) cpu_pause();
    while (generation.load() == gen) futex(&generation, FUTEX_WAIT_PRIVATE, gen);
  };
  auto body = [&](int t) {
    const int g = t / per_grp, d = (t % per_grp) / per_dir, k = t % per_dir;
    const size_t b_bytes = dir_block[d];
    char* const from = src[static_cast<size_t>(g * dirs + d)];
    char* const to = dst[static_cast<size_t>(g * dirs + d)];
    for (int it = 0; it < warmup + iters; ++it) {
      barrier([] {});
      start[t] = now_ns();
      for (size_t b = static_cast<size_t>(k); b < blocks; b += static_cast<size_t>(per_dir))
        std::memcpy(to + b * b_bytes, from + b * b_bytes, b_bytes);
      end[t] = now_ns();
      // Every record of this iteration is written when the last thread arrives.
      barrier([&] {
        if (it < warmup) return;
        long long copy = 0;  // the slowest group's longer direction
        for (int x = 0; x < groups * dirs; ++x) {
          const auto s = start.begin() + x * per_dir, e = end.begin() + x * per_dir;
          copy = std::max(copy, *std::max_element(e, e + per_dir) - *std::min_element(s, s + per_dir));
        }
        copies.push_back(copy);
        walls.push_back(*std::max_element(end.begin(), end.end()) - *std::min_element(start.begin(), start.end()));
      });
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
  const double gib = static_cast<double>((block + down_block) * blocks) * groups / (1ULL << 30);
  std::printf("{\"copy_gib_s\": %.3f, \"wall_gib_s\": %.3f, \"copy_us\": %s, \"wall_us\": %s}\n",
              gib / (mean(copies) * 1e-9), gib / (mean(walls) * 1e-9), stats_json(copies).c_str(),
              stats_json(walls).c_str());
  return 0;
}
