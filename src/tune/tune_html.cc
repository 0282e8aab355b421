// tune's --report page (docs/tune.md "The report"): the text output's tables and
// lines, the plot inline, the machine facts and what each figure means.
#include <cstdio>

#include "tune/tune_report.h"

namespace ds {

namespace {

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

const char* kGroupProse =
    "One row per block size with a measured point. BW is copy's BW: bytes moved / the Copy stage's average "
    "(GiB/s). Best and Runner-up are the two fastest methods at that size; Lead is best / runner-up - 1. Each "
    "method's column is its BW there: '-' not measured (the budget refined elsewhere, or the method was dropped), "
    "'failed' its point failed. A '~' marks a noisy point (Copy P90/P50 above 1.5). Under the table: where the "
    "best method changes (a lead under 5% keeps the one before, so near-equal methods do not flap) and which "
    "method to use per size range, with the copy case that measures it (dev-sandbox copy -t CASE).";

const char* kPlotProse =
    "BW against block size (log2), one line per method, a panel per group; a dashed vertical line with its "
    "label at each crossover: right of it the named method leads.";

const char* kModelProse =
    "Every method once with the model's own block layout (its chunk list per card), per group the fastest and "
    "the next: the method to use for this model's blocks on this machine.";

const char* kAioProse =
    "The store: each point is the measurement aio makes (a dump epoch, then a load epoch). Per workspace the "
    "engines at iodepth 4 and 64 with 1 and 4 workers, 16 shards per file at each engine's best, an engine below "
    "half the best at two neighbouring settings dropped, then the settings between where the best engine changes "
    "and one step from the best. The best setting by load BW and by dump BW, each with the next best and by how "
    "much it leads.";

const char* kLoadProse =
    "The staged load's knobs: each point is the measurement load makes on one card (per round a pipelined pass, "
    "the disk alone and the copies alone). Engine and Copy are load's --engine and copy path (ce: CE streams, "
    "direct: --sdma true), Staging its --staging K, Iodepth its --iodepth; BW is the pipelined passes' (bytes / "
    "IO+Copy avg), Disk and Copy each stage alone, Of slower the pipelined BW as a share of the slower stage, "
    "Bottleneck load's verdict (disk-bound or copy-bound at 90% or more of the slower stage, else the overlap "
    "lost). A '~' marks a noisy point (IO+Copy P90/P50 above 1.5). Under each table the knobs to use, the next "
    "best, and the load command that measures the pick.";

}  // namespace

Report tune_report(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                   const TuneAioRun* aio, const TuneLoadRun* load) {
  Report r;
  r.title = "dev-sandbox tune: " + ctx.info.backend + " backend";
  std::string command;
  for (const std::string& w : ctx.info.command_line) command += (command.empty() ? "" : " ") + w;
  r.intro = "Budget " + seconds_text(ctx.budget_s) + ", took " + seconds_text(ctx.elapsed_s) + ". Command: " +
            command + ".";
  if (copy) r.intro += " " + tune_copy_summary(*copy) + ".";
  r.facts = tune_machine_facts(ctx);
  if (copy && findings) {
    for (size_t g = 0; g < copy->arms.groups.size(); ++g) {
      ReportSection s;
      s.heading = "Copy: " + copy->arms.groups[g].title;
      s.prose = kGroupProse;
      s.tables.push_back(tune_group_table(*copy, findings->groups[g], g));
      s.lines = tune_group_lines(*copy, findings->groups[g], g);
      r.sections.push_back(std::move(s));
    }
    ReportSection plot;
    plot.heading = "The plot";
    plot.prose = kPlotProse;
    plot.svgs.push_back(tune_plot_svg(ctx, *copy, *findings));
    r.sections.push_back(std::move(plot));
    if (!copy->model_label.empty()) {
      ReportSection m;
      m.heading = "Model: " + tune_model_heading(*copy);
      m.prose = kModelProse;
      m.lines = tune_model_lines(*copy, *findings);
      r.sections.push_back(std::move(m));
    }
  }
  if (aio) {
    ReportSection s;
    s.heading = "aio: " + tune_aio_heading(*aio);
    s.prose = kAioProse;
    s.lines = tune_aio_lines(*aio);
    r.sections.push_back(std::move(s));
  }
  if (load) {
    ReportSection s;
    s.heading = "Load: " + tune_load_heading(*load);
    s.prose = kLoadProse;
    s.lines = tune_load_lines(*load);
    for (const TuneLoadSearch& part : load->searches) {
      s.tables.push_back(tune_load_table(*load, part));
      for (const std::string& l : tune_load_part_lines(*load, part)) s.lines.push_back(l);
    }
    r.sections.push_back(std::move(s));
  }
  return r;
}

}  // namespace ds
