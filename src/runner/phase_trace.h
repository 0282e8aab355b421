// DEV_SANDBOX_PHASE_TRACE=path, a debugging aid (docs/measurement.md): every worker of
// the timed loop appends its timed windows to that file once its iterations are over,
// one line per iteration, warm-up included:
//   <pid> <worker> <iteration> <begin ns> <end ns>
// begin and end are the loop's `start` and `done` stamps, on CLOCK_MONOTONIC (the clock
// the test doubles stamp their calls with), so a tool can tell what ran inside a timed
// window. Inside a window nothing is written or called: the marks go to a buffer
// reserved before the first iteration; the lines are written after the last one, in one
// write(2) per worker, so that processes do not interleave.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

class PhaseTrace {
 public:
  // Reads the variable (unset or empty: off, and mark() does nothing).
  PhaseTrace(int worker, int iterations);
  ~PhaseTrace();  // writes what was marked (also after a failed iteration)
  PhaseTrace(const PhaseTrace&) = delete;
  PhaseTrace& operator=(const PhaseTrace&) = delete;

  void mark(int64_t begin_ns, int64_t end_ns) {
    if (on_) marks_.push_back({begin_ns, end_ns});
  }

 private:
  struct Mark {
    int64_t begin, end;
  };
  bool on_ = false;
  int worker_;
  std::string path_;
  std::vector<Mark> marks_;
};

}  // namespace ds
