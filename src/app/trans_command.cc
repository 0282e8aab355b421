// `trans`: the host/device transfer matrix (direction x host buffer x device
// buffer x method), every combination the filters leave, each run like a copy case
// on all -d devices at once.
#include <iostream>
#include <memory>

#include "app/command.h"
#include "app/copy_params.h"
#include "app/output_options.h"
#include "app/sweep_options.h"
#include "cases/run_cases.h"
#include "cases/matrix.h"
#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"

namespace ds {

namespace {

struct TransArgs {
  TransFilters filters;
  bool list = false;  // --list
  CopyOptionText params{"32768", "1024", "1024", "8"};
  OutputOptions out;
  SweepOptionText sweep;
  CLI::Option* size_option = nullptr;
};

// After the command line was read: select the backend, build the matrix, run
// it into `writer` (`begun` once it got the run's header).
void measure(const TransArgs& a, const GlobalOptions& g, const CopyParams& p, const std::vector<SweepStep>& steps,
             ResultWriter& writer, bool& begun) {
  SelectedBackend selected = select_and_say(g.backend, kSimCopies);
  const std::vector<TransCombo> combos = trans_matrix(a.filters, *selected.backend);
  if (combos.empty()) {
    // One line: a method the backend does not offer gets the closest one it does;
    // the combinations are on `trans --list`.
    const std::vector<std::string> offered = trans_offered(*selected.backend);
    std::string hint;
    for (const std::string& m : a.filters.methods) {
      TransFilters only;
      only.methods = {m};
      if (trans_matrix(only, *selected.backend).empty())
        hint += "; method " + m + " is not one the " + selected.backend->name() + " backend offers" +
                did_you_mean(m, trans_offered_methods(*selected.backend));
    }
    throw UsageError("the filters match no combination the " + selected.backend->name() + " backend offers" + hint +
                     "; `dev-sandbox trans --list` shows the " + std::to_string(offered.size()) + " it offers");
  }
  // Combinations this machine cannot run (e.g. registered memory on a runtime
  // without host registration) are left out with a note, as long as others remain.
  std::vector<TransCombo> runnable;
  std::string left_out;
  for (const auto& c : combos) {
    const std::string why = machine_unsupported_reason(c.spec, selected.probe);
    if (why.empty()) {
      runnable.push_back(c);
    } else {
      std::cerr << "dev-sandbox: note: " << c.spec.name << " left out: not supported on this machine: " << why
                << "\n";
      left_out = c.spec.name + ": not supported on this machine: " + why;
    }
  }
  if (runnable.empty()) throw RunError(left_out);
  std::vector<CaseSpec> specs;
  for (const auto& c : runnable) specs.push_back(c.spec);
  check_against_backend(specs, p, selected, stderr_notes());

  if (!a.sweep.plot.empty()) check_plot_path(a.sweep.plot);
  writer.begin(run_info(selected, g.command_line));
  begun = true;
  auto runs_at = [&](const CopyParams& q) {
    std::vector<CaseRun> runs;
    for (const auto& c : runnable) {
      runs.push_back({c.spec, q});
      runs.back().params.streams = c.streams;
    }
    return runs;
  };
  if (steps.empty()) {
    run_cases(runs_at(p), selected, writer, stderr_notes());
    return;
  }
  // One matrix per transfer size, all into the one document.
  const std::string lowered = lowered_count_note(steps, p.layout.tasks(), {"-n", "per device per iteration", 1});
  if (!lowered.empty()) stderr_notes().note(lowered);
  const std::vector<CaseResult> results = run_in_turn(steps.size(), writer, [&](size_t i, ResultWriter& w) {
    CopyParams q = p;
    q.layout = Layout::uniform(steps[i].block_bytes, steps[i].blocks, 0);
    check_against_backend(specs, q, selected, stderr_notes());
    run_cases(runs_at(q), selected, w, stderr_notes());
  });
  if (!a.sweep.plot.empty())
    write_plot_file(a.sweep.plot,
                    bandwidth_plot_svg(results, selected.backend->name(), parse_plot_metric(a.sweep.plot_metric)),
                    stderr_notes());
}

// trans --list: every combination the backend offers, one per line.
int list_trans(const GlobalOptions& g) {
  const SelectedBackend selected = select_backend(g.backend);
  std::cout << "combinations the " << selected.backend->name()
            << " backend offers (direction_host_device_method; filter with -t, -H, -D, -M):\n";
  for (const std::string& n : trans_offered(*selected.backend)) std::cout << "  " << n << "\n";
  return 0;
}

// The parameters and the sweep's steps, checked without a backend.
struct TransRequest {
  CopyParams params;
  std::vector<SweepStep> steps;
};

TransRequest parse_trans(const TransArgs& a) {
  TransRequest plan;
  plan.params = parse_copy_params(a.params);
  if (!a.sweep.sweep.empty() && a.size_option && a.size_option->count() > 0)
    throw UsageError("option --sweep sets the transfer size; drop -s");
  plan.steps = parse_sweep_options(a.sweep, plan.params.layout.tasks());
  check_format(a.out.format);
  return plan;
}

int run_trans(const TransArgs& a, const GlobalOptions& g) {
  if (a.list) return list_trans(g);
  const TransRequest plan = parse_trans(a);
  auto writer = make_writer(a.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string&) {
    measure(a, g, plan.params, plan.steps, *writer, begun);
  });
  return 0;
}

}  // namespace

Command add_trans_command(CLI::App& root, GlobalOptions& global) {
  auto a = std::make_shared<TransArgs>();
  CLI::App* c = root.add_subcommand(
      "trans", "sweep direction x host buffer x device buffer x method, one block per combination");
  c->add_option("-t", a->filters.directions, "direction: H2D|D2H (default both)")->expected(1)->type_name("H2D|D2H");
  c->add_option("-H", a->filters.host_types, "host buffer: normal|anonymous|registered|pinned; repeatable (default all)")->type_name("TYPE");
  c->add_option("-D", a->filters.device_types, "device buffer: normal; repeatable (default all)")->type_name("TYPE");
  c->add_option("-M", a->filters.methods,
                "method: ce|batch_ce|ms_<S>|sm (cuda)|memcpy (sim); repeatable (default all, ms_4)")->type_name("METHOD");
  c->add_flag("--list", a->list, "list the combinations this backend offers, one per line, and exit");
  a->size_option =
      c->add_option("-s", a->params.size, "transfer size: bytes or K/M/G (default 32768)")->type_name("BYTES");
  c->add_option("-n", a->params.blocks, "transfers per device per iteration (default 1024)")->type_name("N");
  c->add_option("-d", a->params.devices, "devices, all running at once (default 8)")->type_name("N");
  c->add_option("-i", a->params.iterations, "iterations (default 1024)")->type_name("N");
  c->add_option("--warmup", a->params.warmup, "iterations run first and not counted (default 2)")->type_name("W");
  add_validate_option(c, a->params.validate, a->params.validate_each, global.command_line,
                      "check every destination byte after each combination; `--validate each`: clear every "
                      "destination before each iteration and check it after, outside the timing (slower)");
  add_stream_options(c, a->params);
  add_timeout_option(c, a->params.timeout);
  add_numa_options(c, a->params.numa, false);
  add_output_options(c, a->out);
  add_sweep_options(c, a->sweep, {"transfer size", "-n", "Copy"});
  return {c, [a, &global] { return run_trans(*a, global); },
          [a] {
            if (!a->list) parse_trans(*a);
          },
          {"dev-sandbox trans --list",
           "dev-sandbox trans -t H2D -H pinned -s 1M -n 64 -d 1 -i 64",
           "dev-sandbox trans -t H2D -H pinned -M ce -n 64 -d 1 --sweep 4K:16M --plot trans.svg"}};
}

}  // namespace ds
