// One point run as a child process of this same program: a crash, an exit code
// or a stuck card stays that point's, and Ctrl-C reaches the child, which
// removes what it made before the job stops.
#pragma once

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

// Runs `program` with `args` (argv[0] first): stdout collected, stderr passed
// through to ours line by line (and read for first_error). A stop arriving while
// it runs is passed on to it (SIGINT) and waited for. RunError naming the call
// when the child cannot be started.
ChildOutcome run_child(const std::string& program, const std::vector<std::string>& args);

// The path of this program (/proc/self/exe), for run_child.
std::string self_program();

}  // namespace ds
