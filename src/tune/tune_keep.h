// What tune keeps of one point's run, for the copy points and the aio points alike:
// the results a measurement writes (and whether each validated), its notes, each
// once (the per-case reports, plan lines and "finished", are tune's own progress),
// its error, and the spread of its measured stage.
#pragma once

#include <exception>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/notes.h"
#include "output/result.h"

namespace ds {

class KeepWriter : public ResultWriter {
 public:
  void begin(const RunInfo&) override {}
  void add(const CaseResult& r) override { results.push_back(r); }
  void validation(const std::string&, bool pass) override {
    if (!results.empty()) results.back().validated = pass;
  }
  void fail(const std::string&, const std::string&) override {}
  void finish() override {}
  std::vector<CaseResult> results;
};

class KeepNotes : public Notes {
 public:
  explicit KeepNotes(std::vector<std::string>& into) : into_(into) {}
  void note(const std::string& line) override {
    if (seen_.insert(line).second) into_.push_back(line);
  }
  void tell(const std::string&) override {}

 private:
  std::vector<std::string>& into_;
  std::set<std::string> seen_;
};

// Runs one point's measurement; its failure's text ("" when it ran). An interrupt
// and a closed output end the whole tune run instead.
template <class F>
std::string point_error(F&& measure) {
  try {
    measure();
  } catch (const Interrupted&) {
    throw;
  } catch (const OutputClosed&) {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// P90/P50 of the result's measured stage (1 when there is no P50).
inline double stage_spread(const CaseResult& r) {
  const Stats& s = r.stage(r.measured);
  return s.p50 > 0 ? static_cast<double>(s.p90) / static_cast<double>(s.p50) : 1.0;
}

}  // namespace ds
