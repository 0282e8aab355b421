// Progress on stderr: shown under a terminal, absent in a pipe.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli_harness.h"

using namespace dstest;

namespace {

const std::vector<std::string> kArgs = {"copy", "-t", "host_to_device_ce", "-t",
                                        "all_host_to_all_device_ce_multi_stream", "-d", "2",
                                        "-s", "16K", "-n", "2", "-i", "20", "--warmup", "0",
                                        "--backend", "sim"};

// Whether this machine can give us a pseudo-terminal: a minimal container may have
// no /dev/pts. Empty when it can, else why not.
std::string no_pty_reason() {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) return std::string("posix_openpt: ") + std::strerror(errno);
  std::string why;
  if (grantpt(master) != 0 || unlockpt(master) != 0) {
    why = std::string("grantpt/unlockpt: ") + std::strerror(errno);
  } else {
    const char* name = ptsname(master);
    const int slave = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    if (slave < 0)
      why = std::string("open ") + (name ? name : "the terminal") + ": " + std::strerror(errno);
    else
      close(slave);
  }
  close(master);
  return why;
}

// Runs the tool with stderr on a pseudo-terminal (stdout to /dev/null); what
// the terminal received, and the exit code.
std::string run_in_pty(const std::vector<std::string>& args, int* exit_code) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return "forkpty failed";
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    std::vector<std::string> copy = args;
    std::string bin = DS_BINARY;
    std::vector<char*> argv{&bin[0]};
    for (auto& a : copy) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  std::string seen;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) {
      seen.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child closed the terminal
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return seen;
}

}  // namespace

TEST(ProgressE2e, ShownOnATerminalThenCleared) {
  const std::string why = no_pty_reason();
  if (!why.empty()) GTEST_SKIP() << "no pseudo-terminal here (" << why << ")";
  int code = -1;
  const std::string tty = run_in_pty(kArgs, &code);
  ASSERT_EQ(code, 0) << tty;
  // Both cases report, the fork case from its worker-0 child.
  EXPECT_NE(tty.find("host_to_device_ce (16K blocks): "), std::string::npos) << tty;
  EXPECT_NE(tty.find("all_host_to_all_device_ce_multi_stream (16K blocks): "), std::string::npos)
      << tty;
  // The first update is never held back by the rate limit.
  EXPECT_NE(tty.find(": iteration 1/20, "), std::string::npos) << tty;
  // Every update rewrites one line; the last thing written clears it.
  EXPECT_EQ(tty.find('\n'), std::string::npos) << tty;
  const std::string clear = "\r\033[K";
  ASSERT_GE(tty.size(), clear.size());
  EXPECT_EQ(tty.substr(tty.size() - clear.size()), clear);
}

TEST(ProgressE2e, AbsentWhenStderrIsAPipe) {
  const RunResult r = run_tool(kArgs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
}
