// `copy` and quick mode: named cases, or the three quick-mode selectors that pick one.
#include <iostream>
#include <memory>

#include "app/command.h"
#include "app/copy_params.h"
#include "app/output_options.h"
#include "cases/run_cases.h"
#include "app/sweep.h"
#include "cases/catalog.h"
#include "core/error.h"
#include "core/units.h"
#include "output/svg_plot.h"

namespace ds {

namespace {

struct CopyArgs {
  std::vector<std::string> cases;
  CopyOptionText params{"512M", "8", "128", "8"};
  std::string model_type, iodirect, sdma;
  OutputOptions out;
  std::string sweep, plot, plot_metric = "both";
  CLI::Option* size_option = nullptr;  // to tell an explicit -s from the default
  CLI::Option* plot_metric_option = nullptr;
};

std::string offered_cases(const Backend& b) {
  std::string list;
  for (const auto& c : copy_cases())
    if (unsupported_reason(c, b).empty()) list += "\n  " + c.name;
  return list;
}

// After the command line was read: select the backend, check the request
// against it and run, into `writer` (`begun` once it got the run's header).
void measure(const CopyArgs& a, const GlobalOptions& g, const CopyParams& p,
             const std::vector<std::string>& names, const std::vector<SweepStep>& steps,
             ResultWriter& writer, bool& begun) {
  SelectedBackend selected = select_backend(g.backend);
  std::vector<CaseSpec> cases;
  for (const auto& n : names) {
    const CaseSpec* c = find_case(n);
    if (!c || !unsupported_reason(*c, *selected.backend).empty())
      throw UsageError((c ? "case " + n + " cannot run on " + selected.backend->name() + ": " +
                                unsupported_reason(*c, *selected.backend)
                          : "unknown case '" + n + "'") +
                       "; the " + selected.backend->name() + " backend offers:" +
                       offered_cases(*selected.backend));
    cases.push_back(*c);
  }
  check_against_backend(cases, p, selected);
  if (!a.plot.empty()) check_plot_path(a.plot);
  writer.begin(run_info(selected, g.command_line));
  begun = true;
  if (steps.empty()) {
    run_cases(cases, p, selected, writer);
    return;
  }
  // One run per block size, all into the one document.
  SweepWriter sweep(writer);
  const uint64_t blocks = p.layout.tasks();
  for (const SweepStep& step : steps) {
    CopyParams q = p;
    q.layout = Layout::uniform(step.block_bytes, step.blocks, p.layout.frags_option());
    const uint64_t budget = steps.front().block_bytes * blocks;
    if (step.blocks != blocks)
      std::cerr << "dev-sandbox: note: --sweep at " << size_label(step.block_bytes) << ": -n "
                << blocks << " -> " << step.blocks
                << (step.blocks * step.block_bytes <= budget
                        ? " to keep " + format_bytes(budget) + " per device per iteration"
                        : " (the minimum; the first size's " + format_bytes(budget) +
                              " per device per iteration is less than one block)")
                << std::endl;
    check_against_backend(cases, q, selected);
    run_cases(cases, q, selected, sweep);
  }
  writer.finish();
  if (!a.plot.empty())
    write_plot_file(a.plot, bandwidth_plot_svg(sweep.results(), selected.backend->name(),
                                               parse_plot_metric(a.plot_metric)));
}

// What the command line asks for, checked as far as it can be without a backend.
struct CopyPlan {
  CopyParams params;
  std::vector<SweepStep> steps;
  std::vector<std::string> names;
};

CopyPlan plan_copy(const CopyArgs& a) {
  CopyPlan plan{parse_copy_params(a.params), {}, a.cases};
  const CopyParams& p = plan.params;
  if (!a.sweep.empty()) {
    if (a.size_option && a.size_option->count() > 0)
      throw UsageError("option --sweep sets the block size; drop -s");
    plan.steps = sweep_steps(a.sweep, p.layout.tasks());
  } else if (!a.plot.empty()) {
    throw UsageError("option --plot needs --sweep FROM:TO: it draws bandwidth against block size");
  }
  parse_plot_metric(a.plot_metric);
  if (a.plot_metric_option && a.plot_metric_option->count() > 0 && a.plot.empty())
    throw UsageError("option --plot-metric needs --plot FILE.svg");

  std::vector<std::string>& names = plan.names;
  const bool quick = !a.model_type.empty() || !a.iodirect.empty() || !a.sdma.empty();
  if (quick) {
    if (!names.empty()) throw UsageError("quick-mode selectors cannot be combined with -t");
    if (a.model_type.empty() || a.iodirect.empty() || a.sdma.empty())
      throw UsageError(std::string("quick mode needs all of --model-type, --iodirect and --sdma; missing ") +
                       (a.model_type.empty() ? "--model-type" : a.iodirect.empty() ? "--iodirect" : "--sdma"));
    names.push_back(quick_mode_case(a.model_type, a.iodirect, a.sdma));
  }
  if (names.empty()) throw UsageError("copy needs a case: -t NAME (or the quick-mode selectors)");
  check_format(a.out.format);
  return plan;
}

int run_copy(const CopyArgs& a, const GlobalOptions& g) {
  const CopyPlan plan = plan_copy(a);
  auto writer = make_writer(a.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string&) {
    measure(a, g, plan.params, plan.names, plan.steps, *writer, begun);
  });
  return 0;
}

}  // namespace

Command add_copy_command(CLI::App& root, GlobalOptions& global) {
  auto args = std::make_shared<CopyArgs>();
  CLI::App* c = root.add_subcommand("copy", "measure one or more named copy cases (-t NAME; quick mode maps to one)");
  c->add_option("-t", args->cases, "case name; repeat to run several, in order")->type_name("NAME");
  args->size_option = c->add_option("-s", args->params.size, "one block's size: bytes, or with K/M/G suffix (default 512M)")->type_name("SIZE");
  c->add_option("-n", args->params.blocks, "blocks per device; with -f, IO tasks per device (default 8)")->type_name("N");
  c->add_option("-i", args->params.iterations, "measured iterations (default 128)")->type_name("N");
  c->add_option("-d", args->params.devices, "devices (cards) (default 8)")->type_name("N");
  c->add_option("-f,--frags", args->params.frags,
                "fragments per IO task on the direct path; 0: every block is a task (default 0)")->type_name("F");
  c->add_option("-S,--streams", args->params.streams, "streams per device for multi-stream cases (default 4)")->type_name("S");
  add_stream_options(c, args->params);
  c->add_option("--warmup", args->params.warmup, "iterations run first and not counted (default 2)")->type_name("W");
  add_validate_option(c, args->params.validate, args->params.validate_each, global.command_line,
                      "check every destination byte after the run; `--validate each`: clear every destination "
                      "before each iteration and check every byte after it, outside the timing (slower: a fill "
                      "and a read-back of every destination per iteration), so each iteration is proven to copy");
  c->add_option("--model-type", args->model_type, "quick mode: gqa|mla")->type_name("gqa|mla");
  c->add_option("--iodirect", args->iodirect, "quick mode: true|false")->type_name("true|false");
  c->add_option("--sdma", args->sdma, "quick mode: true|false")->type_name("true|false");
  add_output_options(c, args->out);
  c->add_option("--sweep", args->sweep,
                "FROM:TO: run at every power-of-two block size in the range (e.g. 4K:64M); "
                "-n shrinks as blocks grow to keep the bytes per iteration of the first size")
      ->type_name("FROM:TO");
  c->add_option("--plot", args->plot, "with --sweep: write an SVG chart of bandwidth by block size")->type_name("FILE.svg");
  args->plot_metric_option =
      c->add_option("--plot-metric", args->plot_metric,
                    "with --plot: copy (BW, from Copy), wall (WallBW, from GroupWall, dashed) or both (default both)")
          ->type_name("copy|wall|both");
  return {c, [args, &global] { return run_copy(*args, global); }, [args] { plan_copy(*args); }};
}

}  // namespace ds
