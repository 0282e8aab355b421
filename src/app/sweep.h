// --sweep FROM:TO and --plot for copy and quick mode: every power-of-two block
// size in the range, -n scaled down as blocks grow so that the bytes one
// device copies per iteration stay at most those of the first step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

struct SweepStep {
  uint64_t block_bytes;
  uint64_t blocks;  // -n at this size
};

// "4K:64M": both powers of two, FROM <= TO; UsageError naming --sweep otherwise.
std::vector<SweepStep> sweep_steps(const std::string& range, uint64_t blocks);

// Forwards to the command's writer but keeps it open across the sizes (each
// size is one run_cases call, which finishes its writer), and keeps the results
// for the plot. A failure finishes the real writer at once.
class SweepWriter : public ResultWriter {
 public:
  explicit SweepWriter(ResultWriter& out) : out_(out) {}
  void begin(const RunInfo&) override {}
  void add(const CaseResult& r) override {
    results_.push_back(r);
    out_.add(r);
  }
  void validation(const std::string& c, bool pass) override { out_.validation(c, pass); }
  void fail(const std::string& c, const std::string& error) override {
    failed_ = true;
    out_.fail(c, error);
  }
  void finish() override {
    if (failed_) out_.finish();
  }
  const std::vector<CaseResult>& results() const { return results_; }

 private:
  ResultWriter& out_;
  std::vector<CaseResult> results_;
  bool failed_ = false;
};

// Writes `svg` to `path`; RunError naming the path when that fails.
void write_plot_file(const std::string& path, const std::string& svg);

// RunError naming the path when `path` cannot be created or written, checked
// before a long sweep; leaves nothing behind.
void check_plot_path(const std::string& path);

}  // namespace ds
