// What tune keeps of one point's run, for the copy points and the aio points alike:
// the results a measurement writes (and whether each validated), and its notes, each
// once (the per-case reports, plan lines and "finished", are tune's own progress).
#pragma once

#include <set>
#include <string>
#include <vector>

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

}  // namespace ds
