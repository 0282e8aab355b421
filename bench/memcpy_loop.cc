// The reference for bench/sim-vs-memcpy: the same bytes with the same
// parallelism as a copy case, moved by plain memcpy. G groups (one per device),
// each with its own source and destination of N blocks; S threads per group,
// thread k copying blocks k, k+S, k+2S ... (the round-robin a multi-stream case
// uses). All threads start together every iteration. Prints the average
// bandwidth in GiB/s over the measured iterations (max end - min start).
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

namespace {

long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: memcpy_loop BLOCK_BYTES BLOCKS_PER_GROUP GROUPS THREADS_PER_GROUP ITERS WARMUP\n");
    return 2;
  }
  const size_t block = std::strtoull(argv[1], nullptr, 10);
  const size_t blocks = std::strtoull(argv[2], nullptr, 10);
  const int groups = std::atoi(argv[3]);
  const int per_group = std::atoi(argv[4]);
  const int iters = std::atoi(argv[5]);
  const int warmup = std::atoi(argv[6]);
  const int threads = groups * per_group;
  const size_t bytes = block * blocks;
  std::vector<char*> src(groups), dst(groups);
  for (int t = 0; t < groups; ++t) {
    src[t] = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    dst[t] = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    if (src[t] == MAP_FAILED || dst[t] == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    std::memset(src[t], 0x5a + t, bytes);
  }
  std::vector<long long> start(threads), end(threads);
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
  double total = 0;
  auto body = [&](int t) {
    for (int it = 0; it < warmup + iters; ++it) {
      // Barrier: the last to arrive releases the others.
      const int gen = generation.load();
      if (arrived.fetch_add(1) + 1 == threads) {
        arrived.store(0);
        generation.fetch_add(1);
      } else {
        while (generation.load() == gen) std::this_thread::yield();
      }
      start[t] = now_ns();
      const int g = t / per_group;
      for (size_t b = static_cast<size_t>(t % per_group); b < blocks; b += static_cast<size_t>(per_group))
        std::memcpy(dst[g] + b * block, src[g] + b * block, block);
      end[t] = now_ns();
      // Second barrier so thread 0 reads complete records.
      const int gen2 = generation.load();
      if (arrived.fetch_add(1) + 1 == threads) {
        arrived.store(0);
        if (it >= warmup)
          total += static_cast<double>(*std::max_element(end.begin(), end.end()) -
                                       *std::min_element(start.begin(), start.end()));
        generation.fetch_add(1);
      } else {
        while (generation.load() == gen2) std::this_thread::yield();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
  const double avg_s = total / iters * 1e-9;
  std::printf("%.3f\n", static_cast<double>(bytes) * groups / avg_s / (1ULL << 30));
  return 0;
}
