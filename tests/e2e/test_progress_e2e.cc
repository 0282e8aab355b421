// Progress on stderr: shown under a terminal, absent in a pipe.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "cli_harness.h"
#include "pty_harness.h"

using namespace dstest;

namespace {

const std::vector<std::string> kArgs = {"copy", "-t", "host_to_device_ce", "-t",
                                        "all_host_to_all_device_ce_multi_stream", "-d", "2",
                                        "-s", "16K", "-n", "2", "-i", "20", "--warmup", "0",
                                        "--backend", "sim"};

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// What a terminal got without the whole lines the run says about itself (is_run_line;
// the terminal ends them with \r\n): the progress updates. Each such line starts
// with "dev-sandbox: " right after a cleared progress line (or at the start).
std::string progress_only(const std::string& tty) {
  std::string out;
  size_t at = 0;
  while (at < tty.size()) {
    const size_t start = tty.find("dev-sandbox: ", at);
    const size_t end = start == std::string::npos ? std::string::npos : tty.find("\r\n", start);
    if (end == std::string::npos || !is_run_line(tty.substr(start, end - start))) {
      out += tty.substr(at);
      break;
    }
    out += tty.substr(at, start - at);
    at = end + 2;
  }
  return out;
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
  // Every update rewrites one line; the last thing written clears it. Between the
  // updates only the lines the run says about itself (the backend, each case's plan),
  // whole and by their exact forms; no "finished" line on a terminal.
  const std::string progress = progress_only(tty);
  EXPECT_EQ(progress.find('\n'), std::string::npos) << tty;
  EXPECT_EQ(tty.find("dev-sandbox: finished "), std::string::npos) << tty;
  EXPECT_EQ(count_of(tty, " will allocate host "), 2u) << tty;
  const std::string clear = "\r\033[K";
  ASSERT_GE(progress.size(), clear.size());
  EXPECT_EQ(progress.substr(progress.size() - clear.size()), clear);
}

// A setup that takes a while shows itself: "<case> (<size> blocks): setting up:
// R/W devices, T s", refreshed, before the first iteration's counter.
TEST(ProgressE2e, SetupIsShownOnATerminal) {
  const std::string why = no_pty_reason();
  if (!why.empty()) GTEST_SKIP() << "no pseudo-terminal here (" << why << ")";
  int code = -1;
  const std::string tty = run_in_pty({"copy", "-t", "all_host_to_all_device_ce_multi_stream", "-d", "2", "-s", "32M",
                                      "-n", "4", "-i", "1", "--warmup", "0", "--validate", "--backend", "sim"},
                                     &code);
  ASSERT_EQ(code, 0) << tty;
  // The label is shortened to the terminal's width (80 columns here), the counter never.
  const std::regex setup(R"(\r\x1b\[Kall_host_to_all_device_ce_multi_stream[^\r]*: setting up: [01]/2 devices, [0-9]+\.[0-9] s)");
  EXPECT_TRUE(std::regex_search(tty, setup)) << tty;
  const size_t first_setup = tty.find(": setting up: "), first_iteration = tty.find(": iteration 1/1, ");
  ASSERT_NE(first_iteration, std::string::npos) << tty;
  EXPECT_LT(first_setup, first_iteration) << tty;
  EXPECT_EQ(progress_only(tty).find('\n'), std::string::npos) << tty;
}

// Piped: no progress line, but one line per finished case instead, each exact.
TEST(ProgressE2e, AbsentWhenStderrIsAPipeWithALinePerFinishedCase) {
  const RunResult r = run_tool(kArgs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_run_lines(r.err), "");
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  const std::vector<std::string> finished = lines_starting(r.err, "dev-sandbox: finished ");
  ASSERT_EQ(finished.size(), 2u) << r.err;
  const std::regex line(R"(dev-sandbox: finished (\S+) in [0-9]+\.[0-9] s \(setup [0-9]+\.[0-9] s\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(finished[0], m, line)) << finished[0];
  EXPECT_EQ(m[1], "host_to_device_ce");
  ASSERT_TRUE(std::regex_match(finished[1], m, line)) << finished[1];
  EXPECT_EQ(m[1], "all_host_to_all_device_ce_multi_stream");
  // Each after its case's plan line, the second case's plan after the first's finish.
  EXPECT_LT(r.err.find(finished[0]), r.err.find("all_host_to_all_device_ce_multi_stream will allocate")) << r.err;
}
