// The pre-flight: host memory, /dev/shm and RLIMIT_MEMLOCK against what a run
// needs, device memory, and the device count, each refusal in its words.
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "runner/preflight.h"

namespace {

using ds::MemoryNeeds;
using ds::NeedsText;

NeedsText text() { return NeedsText{"host_to_device_ce", "host buffers", "2 devices x 4 blocks", "lower -s, -n or -d"}; }

// check_host_needs' message, or "" when it passed.
std::string refusal(const MemoryNeeds& n, const NeedsText& t) {
  try {
    ds::check_host_needs(n, t);
  } catch (const ds::RunError& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(CheckHostNeeds, WhatFitsPasses) {
  MemoryNeeds n;
  n.host = 1 << 20;
  n.shm = 4096;
  n.locked_per_process = 0;
  EXPECT_EQ(refusal(n, text()), "");
}

TEST(CheckHostNeeds, RefusesMoreHostMemoryThanIsAvailable) {
  MemoryNeeds n;
  n.host = UINT64_MAX / 2;
  const std::string e = refusal(n, text());
  EXPECT_TRUE(starts_with(e, "not enough memory for host_to_device_ce: it needs " + ds::format_bytes(n.host) +
                                 " of host buffers (2 devices x 4 blocks) but MemAvailable is "))
      << e;
  EXPECT_TRUE(ends_with(e, "; lower -s, -n or -d")) << e;
}

// A need made of parts shows its sum, and the margin it keeps.
TEST(CheckHostNeeds, ARefusalShowsTheSumOfItsParts) {
  MemoryNeeds n;
  n.add_host("sources", UINT64_MAX / 8);
  n.add_host("destinations", UINT64_MAX / 8);
  n.add_host("staging", 0);  // nothing: not shown
  n.add_host("records", 4096);
  const std::string e = refusal(n, text());
  const std::string part = ds::format_bytes(UINT64_MAX / 8);
  EXPECT_NE(e.find(" (2 devices x 4 blocks: sources " + part + " + destinations " + part + " + records 4.00 KiB = " +
                   ds::format_bytes(n.host) + ") but MemAvailable is "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(", of which 256.00 MiB stay free for the rest of the machine; lower -s, -n or -d"), std::string::npos)
      << e;
  EXPECT_THROW(n.add_host("more", UINT64_MAX), ds::UsageError);  // the sum would wrap
}

// A need within the margin of 2^64 must not wrap around into "it fits".
TEST(CheckHostNeeds, ANeedNear64BitsIsStillRefused) {
  for (uint64_t host : {uint64_t{UINT64_MAX}, uint64_t{UINT64_MAX - 1}, uint64_t{UINT64_MAX - (100ULL << 20)}}) {
    MemoryNeeds n;
    n.host = host;
    EXPECT_TRUE(starts_with(refusal(n, text()), "not enough memory for ")) << "needs " << host;
  }
}

TEST(CheckHostNeeds, KeepsAMarginBelowMemAvailable) {
  MemoryNeeds n;
  n.host = ds::mem_available_bytes();  // all of it: nothing left for the rest of the machine
  EXPECT_TRUE(starts_with(refusal(n, text()), "not enough memory for ")) << "needs " << n.host;
}

TEST(CheckHostNeeds, WithoutDetailOrOptionsToLower) {
  MemoryNeeds n;
  n.host = UINT64_MAX / 2;
  NeedsText t;
  t.what = "aio";
  t.host_what = "host memory";
  const std::string e = refusal(n, t);
  EXPECT_TRUE(starts_with(e, "not enough memory for aio: it needs " + ds::format_bytes(n.host) +
                                 " of host memory but MemAvailable is "))
      << e;
  EXPECT_EQ(e.find(';'), std::string::npos) << e;
}

TEST(CheckHostNeeds, RefusesMoreSharedMemoryThanIsFree) {
  MemoryNeeds n;
  n.host = 4096;
  n.shm = ds::shm_free_bytes() + (1ULL << 30);
  const std::string e = refusal(n, text());
  EXPECT_TRUE(starts_with(e, "not enough shared memory for host_to_device_ce: it needs " + ds::format_bytes(n.shm) +
                                 " in /dev/shm but "))
      << e;
  // The room is given to /dev/shm (a container's --shm-size) before the sizes are lowered.
  const uint64_t gib = (n.shm + ds::shm_total_bytes() - ds::shm_free_bytes() + (1ULL << 30) - 1) >> 30;
  EXPECT_NE(e.find("--shm-size=" + std::to_string(gib) + "g (Docker's default is 64 MiB"), std::string::npos) << e;
  EXPECT_TRUE(ends_with(e, "; otherwise, measuring something smaller, lower -s, -n or -d")) << e;
}

// Drops CAP_IPC_LOCK from this process (bounding, permitted and effective sets).
void drop_ipc_lock() {
  prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return;
  data[0].effective &= ~(1u << CAP_IPC_LOCK);
  data[0].permitted &= ~(1u << CAP_IPC_LOCK);
  syscall(SYS_capset, &header, data);
}

// In a child with RLIMIT_MEMLOCK at `limit` and no CAP_IPC_LOCK: check_host_needs
// with `locked` bytes locked per process. Returns its message ("" when it passed),
// or "skip: ..." when the limit could not be made to bind here.
std::string refusal_under_memlock(uint64_t limit, uint64_t locked) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return "skip: pipe";
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string out;
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = limit;
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
      out = "skip: setrlimit(RLIMIT_MEMLOCK) refused";
    } else {
      drop_ipc_lock();
      if (ds::memlock_limit_bytes() != limit) {
        out = "skip: RLIMIT_MEMLOCK does not bind here (CAP_IPC_LOCK kept)";
      } else {
        MemoryNeeds n;
        n.locked_per_process = locked;
        out = refusal(n, text());
      }
    }
    const ssize_t w = write(pipe_fds[1], out.data(), out.size());
    _exit(w == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string out;
  char buf[512];
  ssize_t got;
  while ((got = read(pipe_fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(got));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed";
  return out;
}

TEST(CheckHostNeeds, RefusesToLockMoreThanRlimitMemlock) {
  const std::string e = refusal_under_memlock(64 << 10, 1 << 20);
  if (starts_with(e, "skip: ")) GTEST_SKIP() << e.substr(6);
  EXPECT_EQ(e, "memory locking refused for host_to_device_ce: it locks " + ds::format_bytes(1 << 20) +
                   " per process but RLIMIT_MEMLOCK is " + ds::format_bytes(64 << 10) +
                   "; raise it with `ulimit -l unlimited`; lower -s, -n or -d");
  EXPECT_EQ(refusal_under_memlock(64 << 10, 64 << 10), "") << "exactly the limit fits";
}

TEST(CheckDeviceNeeds, RefusesMoreThanIsFree) {
  EXPECT_NO_THROW(ds::check_device_needs(1 << 30, 1 << 30, 3, text()));
  try {
    ds::check_device_needs((1ULL << 30) + 1, 1 << 30, 3, text());
    FAIL() << "more than is free passed";
  } catch (const ds::RunError& e) {
    EXPECT_EQ(std::string(e.what()), "not enough device memory: host_to_device_ce needs " +
                                         ds::format_bytes((1ULL << 30) + 1) + " on device 3 but " +
                                         ds::format_bytes(1 << 30) + " is free; lower -s, -n or -d");
  }
}

// check_device_count's UsageError message, or "" when it passed.
std::string count_refusal(const std::string& option, int value, int needed, int seen, const std::string& backend) {
  try {
    ds::check_device_count(option, value, needed, seen, backend);
  } catch (const ds::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckDeviceCount, NamesTheOptionValueAndWhatTheBackendSees) {
  EXPECT_EQ(count_refusal("-d", 8, 8, 8, "sim"), "");
  EXPECT_EQ(count_refusal("-d", 9, 9, 8, "sim"), "option -d got 9 but the sim backend sees 8 devices");
  EXPECT_EQ(count_refusal("--device", 1, 2, 1, "cuda"), "option --device got 1 but the cuda backend sees 1 device");
  EXPECT_EQ(count_refusal("-d", 2, 2, 0, "ascend"), "option -d got 2 but the ascend backend sees 0 devices");
}

}  // namespace
