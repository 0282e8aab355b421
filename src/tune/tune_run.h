// `tune`'s copy part: the arms (tune_arms.h) at block sizes FROM..TO as the planner
// (tune_plan.h) picks them within the time it is given, each point the measurement
// `copy -t CASE -s SIZE -n N -i I` makes (cases/case_runner run_case, the same
// harness and --validate), run here in-process; and with --model, every arm once with
// the model's own block layout.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/select.h"
#include "layout/layout.h"
#include "output/result.h"
#include "tune/tune_arms.h"
#include "tune/tune_plan.h"

namespace ds {

// P90/P50 of a point's measured stage above this: the point is noisy (marked in
// the table; a recommendation resting on it says so).
constexpr double kNoisySpread = 1.5;

// What one tune point measured.
struct TunePoint {
  size_t arm = 0;
  size_t size = 0;        // index into the sizes; for a model point, 0
  uint64_t blocks = 0;    // -n of the point
  std::string phase;      // coarse, crossover, near-best, fill, model
  bool paged = false;     // a model point on its paged layout (a random:kTuneTableSeed table)
  std::string table;      // paged: the table as --block-table names it ("random:7")
  uint64_t pool_blocks = 0;  // paged: its pool's slots (--pool-blocks)
  double seconds = 0;     // what it cost, setup included
  std::string error;      // empty: it ran
  CaseResult result;      // as copy reports it (the statistics, the notes)
  double gib_s() const { return error.empty() ? result.bandwidth_gib_s() : 0; }
  // P90/P50 of the measured stage (1 when there is no P50).
  double spread() const;
  bool noisy() const { return error.empty() && spread() > kNoisySpread; }
};

struct TuneCopyRequest {
  std::vector<uint64_t> sizes;  // powers of two, ascending
  double seconds = 600;         // the time this part may take
  int iterations = 8, warmup = 1;
  bool validate = false, validate_each = false;  // --validate [each]: as copy checks
  ArmChoice choice;
  // --model: the model's layout and its words ("Qwen3-32B, TP 8: 48 layers x ...").
  std::optional<Layout> model_layout;
  std::string model_label;
  // The copy options that lay the model's blocks out, as given (" --model Qwen3-32B
  // --tp 8 --input-len 512"): a model point's equivalent command (model_arm_command).
  std::string model_options;
  int model_devices = 1;
  uint64_t model_tasks_per_block = 1;  // a logical block's tasks (the paged points' table has one slot per block)
};

struct TuneCopyRun {
  TuneArms arms;
  std::vector<uint64_t> sizes;
  std::vector<TunePoint> points;        // in the order measured
  std::vector<TunePoint> model_points;  // --model: per arm that fit, contiguous then paged
  std::vector<std::string> dropped;     // per arm: why it was dropped; "" kept
  size_t coarse_planned = 0, coarse_skipped = 0;
  double seconds = 0;                   // what it took
  int iterations = 0, warmup = 0, devices = 1;
  std::vector<std::string> notes;       // what the runs said, each once
  std::string model_label;
  std::string model_options;            // TuneCopyRequest::model_options
  // The point of arm a at size s; nullptr when not measured.
  const TunePoint* at(size_t arm, size_t size) const;
};

// What is being measured and the time left, for the progress line (a terminal only).
using TuneProgress = std::function<void(const std::string& what, double seconds_left)>;

// The seed of the block table --model's paged points use (--block-table random:7).
constexpr uint64_t kTuneTableSeed = 7;

// Seconds as the notes give them: one decimal under 10 s, whole above.
std::string note_seconds(double s);

// The note when --model's point of `arm` ("ms_4", "ms_4 paged"), estimated to cost
// `estimate_s`, does not fit in the `left_s` seconds left (point_fits); "" when it starts.
std::string model_point_skip(const std::string& arm, double estimate_s, double left_s);

// The note when the first point of a part (`part`: "aio on /data/kv", "load of 1 MiB
// blocks on /data/kv"), estimated to cost `estimate_s`, does not fit in `left_s`:
// "tune: PART skipped: about N s, M s left; ...", or, with nothing measured yet to
// estimate it from (estimate 0: the parts before took the whole budget), "no time left".
std::string part_skip_note(const std::string& part, double estimate_s, double left_s);

// Blocks per iteration of a point at `block_bytes`: 32 MiB of them, 2 to 64.
uint64_t tune_blocks(uint64_t block_bytes);

// Runs the copy part. Throws UsageError when no arm can run here; a point that fails
// is recorded (TunePoint::error) and its arm measured no more. Interrupted passes.
TuneCopyRun run_copy_tune(SelectedBackend& selected, const TuneCopyRequest& req, const TuneProgress& progress);

}  // namespace ds
