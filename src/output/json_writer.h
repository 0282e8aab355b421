// JSON output: one document, written at finish(), also when the run
// failed (then "status" is "failed" and "error" names the case and the reason).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

class JsonWriter : public ResultWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}
  void begin(const RunInfo& info) override { info_ = info; }
  void add(const CaseResult& result) override { results_.push_back(result); }
  void validation(const std::string& case_name, bool pass) override;
  void fail(const std::string& case_name, const std::string& error) override;
  // Across ranks: "nodes": [{"node", "ranks", "results": [every result of that node]}].
  void nodes(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels) override;
  void finish() override;

 private:
  std::ostream& out_;
  std::optional<RunInfo> info_;
  std::vector<CaseResult> results_;
  std::vector<NodeShare> nodes_;
  bool failed_ = false;
  std::string fail_case_, fail_error_;
};

}  // namespace ds
