// Progress on stderr while a case runs: only when stderr is a
// terminal, so logs and pipes stay clean. Worker 0 reports after each
// iteration's `done` timestamp, never inside the timed part.
#pragma once

#include <cstdint>
#include <string>

namespace ds {

// Made before the workers start (fork children inherit the state), it clears the
// line when it goes out of scope, also on failure. Nothing at all when stderr is
// not a terminal.
class ProgressScope {
 public:
  ProgressScope(const std::string& case_name, uint64_t block_bytes, int warmup, int iterations);
  ~ProgressScope();
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;
};

// Whether stderr is a terminal: progress lines there; otherwise a line per
// finished case (the measurement harness).
bool progress_on_terminal();

// This process, while the workers set up (before their first iteration): "<case>:
// setting up: 3/8 devices, 4.2 s", at most about ten updates a second; nothing once
// every worker is ready (worker 0's iteration counter takes over). `unit`: what a
// worker is ("device"). Only on a terminal, within a ProgressScope.
void progress_setup(int ready, int workers, const std::string& unit);

// Worker 0, after iteration `done` (1-based, warm-up included) finished. Writes
// at most about ten updates a second.
void progress_iteration(int done);

}  // namespace ds
