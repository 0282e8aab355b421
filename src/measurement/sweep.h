// Several runs of a measurement in one document: --sweep FROM:TO (copy, quick
// mode, trans, aio, load: every power-of-two block or shard size in the range, the
// count scaled down as blocks grow so that the bytes per iteration stay at most
// those of the first step), and aio's list of --engine. Each run is its own
// measurement with its own setup; their results go to the one writer in order
// and, for --plot, are kept.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

struct SweepStep {
  uint64_t block_bytes;
  uint64_t blocks;  // -n (aio: --io-number) at this size
};

// "4K:64M": both powers of two, FROM <= TO; UsageError naming --sweep otherwise.
std::vector<SweepStep> sweep_steps(const std::string& range, uint64_t blocks);

// What the count a sweep lowers is called and what its bytes are per, for the note:
// {"-n", "per device per iteration"}, {"--io-number", "per worker per epoch"}.
struct SweepCount {
  std::string option;
  std::string per;
  // Bytes one block moves per byte of the swept size (-f fragments, shards per
  // file): the first size's bytes per iteration are block_bytes x blocks x this.
  uint64_t bytes_per_block_byte = 1;
};

// The one note a sweep gives when it lowers the count (empty when it never does):
// "--sweep keeps the first size's 16.00 KiB per device per iteration: -n 4 becomes
// 2 at 8K, 1 at 16K to 32K (from 32K, -n 1 is more than that)". Sizes in a row
// with the same count are one range.
std::string lowered_count_note(const std::vector<SweepStep>& steps, uint64_t blocks, const SweepCount& count);

// Forwards to the command's writer but keeps it open across the runs (each run
// finishes its writer), and keeps the results for the plot. The caller begins the
// real writer once; a failure finishes it at once.
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

// Runs `run(i, writer)` for i = 0 .. runs - 1 in order into `out` (already begun),
// one document, then finishes `out`; returns every run's results, in order.
std::vector<CaseResult> run_in_turn(size_t runs, ResultWriter& out,
                                    const std::function<void(size_t, ResultWriter&)>& run);

}  // namespace ds
