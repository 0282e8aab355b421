// What a tune run found, read off its points (docs/tune.md): per group and size the
// best arm and the runner-up, the crossovers (where the best changes, a lead under
// kTieMargin keeping the one before), the method to use per size range; and how it
// is written: the text table, the tune/v1 JSON (docs/schemas/tune-v1.schema.json)
// and the plot.
#pragma once

#include <string>
#include <vector>

#include "output/html_report.h"
#include "output/result.h"
#include "tune/tune_aio.h"
#include "tune/tune_load.h"
#include "tune/tune_run.h"

namespace ds {

struct TuneRow {
  size_t size = 0;                    // index into the sizes
  int best = -1, runner_up = -1;      // arms; -1: none
  double best_gib_s = 0, runner_up_gib_s = 0;
  bool noisy = false;                 // the best's point is noisy
};

struct TuneCrossover {
  int winner = -1, loser = -1;        // arms; loser -1: the first size (the best there vs its runner-up)
  size_t size = 0;                    // the first measured size the winner leads at
  size_t previous = 0;                // the measured size before it (== size for the first)
  double lead = 0;                    // winner / loser - 1 at `size`
  bool noisy = false;                 // a point it rests on is noisy
};

// A size range and the method to use in it.
struct TuneChoice {
  int arm = -1;
  size_t from = 0, to = 0;            // size indices, inclusive
  bool noisy = false;
};

struct TuneGroupFindings {
  std::vector<TuneRow> rows;          // the sizes with a measured point, ascending
  std::vector<TuneCrossover> crossovers;
  std::vector<TuneChoice> choices;
};

struct TuneFindings {
  std::vector<TuneGroupFindings> groups;  // as run.arms.groups
  int model_best = -1, model_runner_up = -1;  // per --model: the best arm over the model points (-1: none)
  std::vector<int> model_best_per_group;        // over the contiguous model points
  std::vector<int> model_paged_best_per_group;  // over the paged ones (a random block table)
};

TuneFindings tune_findings(const TuneCopyRun& run);

// "4 KiB", "256 KiB", "64 MiB".
std::string size_words(uint64_t bytes);
// "batch_ce beats ce from 4 KiB (by 45%)" for one crossover.
std::string crossover_text(const TuneCopyRun& run, const TuneCrossover& c);

// Everything a tune run says about the machine and how it ran (the header of its
// outputs), gathered by the command.
struct TuneContext {
  RunInfo info;
  std::vector<std::pair<std::string, std::string>> backend_facts;  // doctor's backend lines
  double budget_s = 0, elapsed_s = 0;
  std::vector<std::string> what;  // copy, aio, load
};

std::string tune_text(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                      const TuneAioRun* aio, const TuneLoadRun* load = nullptr);
std::string tune_json(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                      const TuneAioRun* aio, const TuneLoadRun* load = nullptr);
// The pieces the text and the --report page share: a group's per-size table (the
// text's columns), its lines (noisy, dropped, crossovers, use), the model's and aio's.
ReportTable tune_group_table(const TuneCopyRun& run, const TuneGroupFindings& f, size_t g);
std::vector<std::string> tune_group_lines(const TuneCopyRun& run, const TuneGroupFindings& f, size_t g);
std::string tune_copy_summary(const TuneCopyRun& copy);
std::string tune_model_heading(const TuneCopyRun& run);
// A paged model point's bandwidth over the same blocks contiguous, measured in the
// same run (copy's --compare-contiguous: the two passes take turns, so neither always
// goes first into warm caches); 0 when that pass is not there.
double model_of_contiguous(const TunePoint& paged);
// A recommendation's lead over its next: "+15%", "-2%, a tie within 5%: the cheaper one".
std::string tune_lead_words(double best_gib_s, double next_gib_s, bool tie);
// "10 of 16 coarse points measured, 2 over the budget, 4 of dropped engines": what
// ran of the coarse grid, what the budget left, and (the rest) what dropped `arms` never got.
std::string tune_coarse_words(size_t planned, size_t measured, size_t skipped, const std::string& arms);
std::vector<std::string> tune_model_lines(const TuneCopyRun& run, const TuneFindings& f);
std::string tune_aio_heading(const TuneAioRun& aio);
std::vector<std::string> tune_aio_lines(const TuneAioRun& aio);

// What the failed points make of a run (docs/tune.md "Failed points"): a copy point
// or a coarse aio or load point failed (a method, engine or arm left uncompared):
// `error`, the run's failure (exit 1); only refining aio or load points failed:
// `note` says how many, and the run stands (each is named on stderr and marked
// failed in the table and the JSON).
struct TuneFailures {
  std::string error, note;
};
TuneFailures tune_failures(const TuneCopyRun* copy, const TuneAioRun* aio, const TuneLoadRun* load);
// The JSON's `machine` object flattened: ("host.kernel", "6.1.0"), ... (doctor's facts).
std::vector<std::pair<std::string, std::string>> tune_machine_facts(const TuneContext& ctx);
// The --report page: the machine facts, per group the table, its lines and what
// they mean, the plot, the model and aio sections.
Report tune_report(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                   const TuneAioRun* aio, const TuneLoadRun* load = nullptr);

// --what load (tune_load_report.cc): the heading, the lines before the tables (what
// was not measured), per workspace and shape its table of points and its lines
// (noisy, dropped, the recommendation and its load command), and the whole text.
std::string tune_load_heading(const TuneLoadRun& run);
std::vector<std::string> tune_load_lines(const TuneLoadRun& run);
ReportTable tune_load_table(const TuneLoadRun& run, const TuneLoadSearch& s);
std::vector<std::string> tune_load_part_lines(const TuneLoadRun& run, const TuneLoadSearch& s);
std::string tune_load_text(const TuneLoadRun& run);

// One SVG: a panel per group, BW against block size (log2) per arm, the crossovers
// marked.
std::string tune_plot_svg(const TuneContext& ctx, const TuneCopyRun& copy, const TuneFindings& findings);

}  // namespace ds
