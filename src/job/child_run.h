// One point run as a child process of this same program: a crash, an exit code
// or a stuck card stays that point's, and Ctrl-C reaches the child, which
// removes what it made before the job stops.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace ds {

struct ChildOutcome {
  int exit_code = 0;        // the child's, or 128 + its signal
  std::string out;          // its stdout, whole
  std::string first_error;  // the first "dev-sandbox: error: " line on its stderr (without that prefix),
                            // else its last stderr line; empty when it said nothing
  double seconds = 0;
  bool interrupted = false; // a stop (Ctrl-C, SIGTERM) arrived while it ran
};

// A started child, stopped and reaped when its owner unwinds before reaping it (a
// failed poll, an append that threw): SIGINT (it removes what it made), then after
// `grace_s` without its exit SIGKILL; waited for either way, so none is left behind.
class ChildGuard {
 public:
  ChildGuard(pid_t pid, double grace_s) : pid_(pid), grace_s_(grace_s) {}
  ~ChildGuard();
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  // Waits for its exit (EINTR retried); its wait status. RunError naming waitpid.
  int wait();

 private:
  pid_t pid_;
  double grace_s_;
  bool reaped_ = false;
};

struct ChildRunOptions {
  double stop_grace_s = 10;  // ChildGuard's, on an unwind
  // Once a turn while it runs, with what it has written to stdout so far (tests: a
  // stand-in that throws mid-run).
  std::function<void(pid_t pid, const std::string& out)> each_turn;
};

// Runs `program` with `args` (argv[0] first): stdout collected, stderr passed
// through to ours line by line (and read for first_error). A stop arriving while
// it runs is passed on to it (SIGINT) and waited for. RunError naming the call
// when the child cannot be started; on any exception the child is stopped and
// reaped (ChildGuard) before it leaves.
ChildOutcome run_child(const std::string& program, const std::vector<std::string>& args,
                       const ChildRunOptions& options = {});

// The path of this program (/proc/self/exe), for run_child.
std::string self_program();

}  // namespace ds
