// What a staged result (load, offload) carries beyond the common columns (an extra,
// output/result_extra.h): the two stages alone, measured in the same run, the
// pipelined passes' busy times, and how the pipelined result compares (the
// "Stages:" line; JSON "load_stages" or "offload_stages").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

// The verdict of the Stages line: the slower stage when the pipeline reaches at
// least 90% of it (that stage is what to fix), else neither (the overlap is lost:
// staging, depth or scheduling cost more than 10%).
constexpr double kStageVerdictFraction = 0.90;
std::string stage_verdict(double disk_gib_s, double copy_gib_s, double pipelined_gib_s);

class StagedStages : public ResultExtra {
 public:
  Stage disk_alone, copy_alone;  // per measured round, over the cards (slowest card)
  // Pipelined passes, every card's: time with >= 1 read (load) or write (offload),
  // resp. copy, in flight.
  Stats io_busy, copy_busy;
  std::vector<int64_t> io_busy_samples, copy_busy_samples;  // what those were computed from
  double disk_gib_s = 0, copy_gib_s = 0, pipelined_gib_s = 0;
  double percent_of_slower = 0;  // pipelined / min(disk, copy) x 100
  std::string bottleneck;        // "disk", "copy", "neither (overlap lost)"

  // The Stages line's figures (each stage's and the pipelined GiB/s, the
  // percentage, the verdict) from the result's bytes and the stages' averages.
  void set_figures(const CaseResult& r);

  // JSON "<json_name>", after "numa".
  JsonPlace json_place() const override { return JsonPlace::kAfterNuma; }
  void add_json(Json& result, const CaseResult& r) const override;
  std::string block_lines(const CaseResult& r) const override;  // the Stages line
  // CSV: a row per stage alone ("<name>:disk_alone", "<name>:copy_alone"), its
  // time_label the stage's (DiskAlone, CopyAlone), Copy its statistics, BW its figure.
  std::vector<Json> csv_rows(const CaseResult& r) const override;
  Json encode() const override;
  // As the pipelined passes: each stage alone per round the slowest part's, the busy
  // times every card's of every part, the figures again from the combined bytes.
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;

  virtual const char* json_name() const = 0;  // "load_stages"
  virtual const char* io_name() const = 0;    // "read": JSON "read_busy_us"

 protected:
  virtual std::shared_ptr<StagedStages> blank() const = 0;  // an empty one of the same kind
  void decode(const Json& j);
};

class LoadStages final : public StagedStages {
 public:
  static constexpr const char* kKey = "load";
  const char* key() const override { return kKey; }
  const char* json_name() const override { return "load_stages"; }
  const char* io_name() const override { return "read"; }
  static std::shared_ptr<const ResultExtra> decoded(const Json& j);

 protected:
  std::shared_ptr<StagedStages> blank() const override { return std::make_shared<LoadStages>(); }
};

class OffloadStages final : public StagedStages {
 public:
  static constexpr const char* kKey = "offload";
  const char* key() const override { return kKey; }
  const char* json_name() const override { return "offload_stages"; }
  const char* io_name() const override { return "write"; }
  static std::shared_ptr<const ResultExtra> decoded(const Json& j);

 protected:
  std::shared_ptr<StagedStages> blank() const override { return std::make_shared<OffloadStages>(); }
};

// "  Stages: disk alone X GiB/s, copy alone Y GiB/s, pipelined Z GiB/s = P% of the slower
// stage; bottleneck: disk|copy|neither (overlap lost)".
std::string format_stages_line(const StagedStages& s);

// Registers LoadStages', OffloadStages' and MixStages' decoders (output/result_extra.h); called at
// the start of the program and by tests, as often as wanted.
void register_staged_results();

}  // namespace ds
