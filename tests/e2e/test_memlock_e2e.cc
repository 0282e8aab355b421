// Memory locking (docs/measurement.md, "Pre-flight"): only memory our own code locks with mlock() counts against
// RLIMIT_MEMLOCK. sim locks its pinned and registered buffers itself; the NVIDIA and
// Ascend drivers pin in their kernel modules, so a pinned cuda or ascend run must go
// ahead under a container's small default limit; ascend on kernels 5.10 and older locks
// its own mappings before registering them, and that is charged. Runs as an
// unprivileged user (uid 65534 where it can reach the build, else without
// CAP_IPC_LOCK) with `ulimit -l 64`.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_harness.h"

using namespace dstest;

namespace {

constexpr long kSmallLimit = 64 * 1024;  // `ulimit -l 64`

// A call log the (possibly unprivileged) tool can append to; removed afterwards.
struct Log : TempFile {
  Log() : TempFile("ds-memlock-log", /*shared=*/true) {}
};

size_t count_lines(const std::string& text, const std::string& what) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(what) != std::string::npos;
  return n;
}

RunResult run_limited(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                      long limit = kSmallLimit) {
  RunOptions o;
  o.env = env;
  o.memlock_limit = limit;
  o.unprivileged = true;
  return run_tool_opts(args, o);
}

std::map<std::string, std::string> cuda_env(const Log& log) {
  return {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_LOG", log.path()},
          {"DS_CUDA_DOUBLE_DEVICES", "4"}, {"DEV_SANDBOX_BACKEND", "cuda"}};
}

std::map<std::string, std::string> acl_env(const Log& log, const std::string& kernel = "6.6.0-28.0.0.34.oe2403") {
  return {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
          {"DS_ACL_DOUBLE_LOG", log.path()},
          {"DS_ACL_DOUBLE_DEVICES", "8"},
          {"DEV_SANDBOX_BACKEND", "ascend"},
          {"DEV_SANDBOX_KERNEL_RELEASE", kernel}};
}

// 512 KiB of pinned or registered memory per process: eight times the limit.
const std::vector<std::string> kBig = {"-s", "64K", "-n", "8", "-i", "2", "--validate"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST(Memlock, SimCountsWhatItLocksItself) {
  const RunResult r = run_limited(with({"--backend", "sim", "copy", "-t", "host_to_device_ce"}, kBig), {});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("memory locking refused for host_to_device_ce"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RLIMIT_MEMLOCK is 64.00 KiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ulimit -l"), std::string::npos) << r.err;
}

TEST(Memlock, CudaPinnedAndRegisteredMemoryIsTheDriversBusiness) {
  Log log;
  SCOPED_TRACE("running " + unprivileged_mode(cuda_env(log)));
  for (const char* c : {"host_to_device_ce", "all_host_to_all_device_ce_multi_stream",
                        "all_odirect_host_to_all_device_ce_multi_stream",
                        "one_share_host_to_all_device_ffts_direct_h2d"}) {
    const RunResult r = run_limited(with({"copy", "-t", c, "-d", "2"}, kBig), cuda_env(log));
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("[validation] ") + c + " PASS"), std::string::npos) << r.out;
  }
  EXPECT_GT(count_lines(log.text(), "cuMemHostAlloc"), 0u) << "the double logged the pinned allocations";
  // The seed's command line, eight cards' worth of pinned buffers.
  const RunResult q = run_limited({"--model-type", "gqa", "--iodirect", "false", "--sdma", "false", "-s", "16K",
                                   "-n", "64", "-i", "2", "-d", "4"},
                                  cuda_env(log));
  EXPECT_EQ(q.exit_code, 0) << q.err;
  // aio's pinned buffers (--io-type alloc): 4 x 1 MiB.
  char dir[] = "/tmp/ds-memlock-aio-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  chmod(dir, 0777);
  const RunResult a = run_limited({"aio", "--create-workspace", "--workspace", std::string(dir) + "/ws", "--io-type", "alloc", "--io-size",
                                   "1M", "--io-number", "4", "--epoch-number", "1", "--buffered"},
                                  cuda_env(log));
  EXPECT_EQ(a.err.find("memory locking refused"), std::string::npos) << a.err;
  EXPECT_EQ(a.exit_code, 0) << a.err;
  rmdir(dir);
}

TEST(Memlock, AscendPinnedAndRegisteredMemoryIsTheDriversBusiness) {
  Log log;
  SCOPED_TRACE("running " + unprivileged_mode(acl_env(log)));
  for (const char* c : {"host_to_device_ce", "all_host_to_all_device_ce_multi_stream",
                        "all_host_to_all_device_ffts_direct_h2d", "all_odirect_host_to_all_device_ce_multi_stream",
                        "one_share_host_to_all_device_ffts_direct_h2d"}) {
    const RunResult r = run_limited(with({"copy", "-t", c, "-d", "2"}, kBig), acl_env(log));
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("[validation] ") + c + " PASS"), std::string::npos) << r.out;
  }
  EXPECT_GT(count_lines(log.text(), "aclrtMallocHost"), 0u);
}

// Kernels 5.10 and older: our own mappings are locked with mlock before registration
// (as UCM does), and that counts against the limit; the driver's pinning still does not.
// The direct path needs the registration, so a limit too small for it is refused up
// front; a CE case copies from the memory unregistered instead, with a note.
TEST(Memlock, AscendOnKernel510LocksItsOwnMappingsAndThatIsCharged) {
  Log log;
  const auto env = acl_env(log, "5.10.0-136.12.0.86.h1.aarch64");
  SCOPED_TRACE("running " + unprivileged_mode(env));
  const std::vector<std::string> odirect = with({"copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d", "-d", "2"}, kBig);
  const RunResult refused = run_limited(odirect, env);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("memory locking refused for all_odirect_host_to_all_device_ffts_direct_h2d: it locks "
                             "512.00 KiB per process but RLIMIT_MEMLOCK is 64.00 KiB"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(count_lines(log.text(), "aclrtHostRegisterV2"), 0u) << "refused before any worker started";
  const RunResult ce = run_limited(with({"copy", "-t", "all_odirect_host_to_all_device_ce_multi_stream", "-d", "2"}, kBig), env);
  EXPECT_EQ(ce.exit_code, 0) << ce.err;
  EXPECT_NE(ce.out.find("[validation] all_odirect_host_to_all_device_ce_multi_stream PASS"), std::string::npos);
  EXPECT_NE(ce.err.find("note: all_odirect_host_to_all_device_ce_multi_stream: source memory (odirect_mmap) not "
                        "registered with the device: mlock"),
            std::string::npos)
      << ce.err;
  EXPECT_EQ(count_lines(log.text(), "aclrtHostRegisterV2"), 0u) << "the lock failed before registration";

  // A limit that holds the 512 KiB, within the hard limit this test may not raise.
  struct rlimit hard {};
  getrlimit(RLIMIT_MEMLOCK, &hard);
  const long fits = hard.rlim_max == RLIM_INFINITY || hard.rlim_max >= (2u << 20) ? 2L << 20
                                                                                 : static_cast<long>(hard.rlim_max);
  if (fits < (1L << 20)) GTEST_SKIP() << "RLIMIT_MEMLOCK's hard limit " << fits << " is too low to show a run that fits";
  const RunResult ok = run_limited(odirect, env, fits);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("[validation] all_odirect_host_to_all_device_ffts_direct_h2d PASS"), std::string::npos);
  // The double registers foreign memory on such a kernel only when its pages are locked.
  EXPECT_EQ(count_lines(log.text(), "aclrtHostRegisterV2 ptr="), 2u) << log.text();
  EXPECT_EQ(count_lines(log.text(), "error="), 0u) << log.text();

  // Pinned memory is still the driver's: no charge.
  const RunResult pinned = run_limited(with({"copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-d", "2"}, kBig), env);
  EXPECT_EQ(pinned.exit_code, 0) << pinned.err;
}

// Where the runtime's own pinning fails: the call, its error, and the limit to look at.
TEST(Memlock, RuntimePinningFailureNamesTheCallAndTheLimit) {
  Log log;
  auto env = acl_env(log);
  env["DS_ACL_DOUBLE_FAIL"] = "aclrtMallocHost:1";
  const RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("aclrtMallocHost (device 0, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("failed with error 507899"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`ulimit -l unlimited`"), std::string::npos) << r.err;
  env["DS_ACL_DOUBLE_FAIL"] = "aclrtHostRegisterV2:1";
  const RunResult g = run_tool({"copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d", "-s", "4K", "-n",
                                "2", "-i", "1", "-d", "1"},
                               env);
  EXPECT_EQ(g.exit_code, 1) << g.out;
  EXPECT_NE(g.err.find("aclrtHostRegisterV2 (device 0, 8.00 KiB, MAPPED | PINNED) failed with error 507899"),
            std::string::npos)
      << g.err;
  EXPECT_NE(g.err.find("`ulimit -l unlimited`"), std::string::npos) << g.err;
}
