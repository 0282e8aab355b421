// `copy` and quick mode: named cases, or the three quick-mode selectors that pick one.
#include <algorithm>
#include <iostream>
#include <sstream>
#include <memory>

#include "app/command.h"
#include "app/copy_params.h"
#include "app/model_options.h"
#include "app/output_options.h"
#include "cases/run_cases.h"
#include "cluster/across_ranks.h"
#include "app/sweep_options.h"
#include "cases/catalog.h"
#include "cases/duplex_runner.h"
#include "cases/table_result.h"
#include "core/error.h"
#include "core/size_label.h"
#include "core/suggest.h"
#include "core/units.h"
#include "output/svg_plot.h"

namespace ds {

namespace {

struct CopyArgs {
  std::vector<std::string> cases;
  CopyOptionText params{"512M", "8", "128", "8"};
  std::string model_type, iodirect, sdma;
  OutputOptions out;
  SweepOptionText sweep;
  ModelOptionText model;
  CLI::Option* size_option = nullptr;  // to tell an explicit -s from the default
  CLI::Option* blocks_option = nullptr;
  CLI::Option* frags_option = nullptr;
  CLI::Option* devices_option = nullptr;
  bool list_cases = false;  // --list
  // --block-table / --pool-blocks (the device side), --host-block-table /
  // --host-pool-blocks (the host side); empty: that side contiguous per block.
  std::string block_table, pool_blocks = "0", host_block_table, host_pool_blocks = "0";
  bool compare_contiguous = false;  // --compare-contiguous
};

std::vector<const CaseSpec*> offered_cases(const Backend& b) {
  std::vector<const CaseSpec*> list;
  for (const auto& c : copy_cases())
    if (unsupported_reason(c, b).empty()) list.push_back(&c);
  return list;
}

// One line: what is wrong with case `n`, the closest offered name, where the list is.
std::string case_refusal(const std::string& n, const CaseSpec* c, const Backend& b) {
  std::vector<std::string> names;
  for (const CaseSpec* o : offered_cases(b)) names.push_back(o->name);
  const std::string list = "`dev-sandbox copy --list` shows the " + std::to_string(names.size()) + " cases the " +
                           b.name() + " backend offers";
  if (c) return "case " + n + " cannot run on " + b.name() + ": " + unsupported_reason(*c, b) + "; " + list;
  return "unknown case '" + n + "'" + did_you_mean(n, names) + "; " + list;
}

// copy --list: one line per case the backend offers, with what it measures.
int list_cases(const GlobalOptions& g) {
  const SelectedBackend selected = select_backend(g.backend);
  const std::vector<const CaseSpec*> cases = offered_cases(*selected.backend);
  size_t width = 0;
  for (const CaseSpec* c : cases) width = std::max(width, c->name.size());
  std::cout << "cases the " << selected.backend->name() << " backend offers (dev-sandbox copy -t NAME):\n";
  for (const CaseSpec* c : cases) std::cout << "  " << c->name << std::string(width + 2 - c->name.size(), ' ') << c->brief << "\n";
  return 0;
}

// After the command line was read: select the backend, check the request
// against it and run, into `writer` (`begun` once it got the run's header).
// `steps`: --sweep's, each size's params (its layout, and its tables) made by
// sweep_params.
// The gather methods' cases (gather_method_cases) this backend and machine run, and
// those they do not, each with why ("" if none).
struct OfferedMethods {
  std::vector<std::string> names;
  std::string left_out;
};
OfferedMethods offered_methods(const std::vector<std::string>& names, const SelectedBackend& selected) {
  OfferedMethods o;
  for (const std::string& n : names) {
    const CaseSpec* c = find_case(n);
    std::string why = c ? unsupported_reason(*c, *selected.backend) : std::string();
    if (c && why.empty()) why = machine_unsupported_reason(*c, selected.probe);
    if (why.empty())
      o.names.push_back(n);
    else
      o.left_out += (o.left_out.empty() ? "" : "; ") + n + ": " + why;
  }
  return o;
}

// What the gather comparison runs, said once before it does (and by the dry run).
std::string methods_text(const OfferedMethods& o, int devices) {
  std::string ran;
  for (const std::string& n : o.names) ran += (ran.empty() ? "" : ", ") + n;
  return "copy --model with a block table and no -t: the gather methods for this layout on " +
         (devices == 1 ? std::string("one card") : std::to_string(devices) + " cards at once") +
         ", each against the same blocks contiguous: " + ran +
         (o.left_out.empty() ? "" : " (left out: " + o.left_out + ")") +
         (devices == 1 ? "; -d N compares them on N cards at once" : "");
}

// `methods`: the names are gather_method_cases(), not the user's: those this backend
// or machine cannot run are left out, one note naming them and why.
void measure(const CopyArgs& a, const GlobalOptions& g, const CopyParams& p,
             const std::vector<std::string>& names, const std::vector<SweepStep>& steps,
             const std::vector<CopyParams>& step_params, const std::optional<Workload>& workload, ResultWriter& writer,
             bool& begun, bool methods) {
  SelectedBackend selected = select_and_say(g.backend, kSimCopies);
  const OfferedMethods offered = methods ? offered_methods(names, selected) : OfferedMethods{names, ""};
  std::vector<CaseSpec> cases;
  for (const auto& n : offered.names) {
    const CaseSpec* c = find_case(n);
    if (!c || !unsupported_reason(*c, *selected.backend).empty())
      throw UsageError(case_refusal(n, c, *selected.backend));
    cases.push_back(*c);
  }
  check_against_backend(cases, p, selected, stderr_notes());
  if (methods) stderr_notes().note(methods_text(offered, p.devices));
  if (!a.sweep.plot.empty()) check_plot_path(a.sweep.plot);
  RunInfo info = run_info(selected, g.command_line);
  if (workload) attach_workload(info, *workload);
  writer.begin(info);
  begun = true;
  if (steps.empty()) {
    run_cases(cases, p, selected, writer, stderr_notes());
    return;
  }
  // One run per block size, all into the one document.
  const std::string lowered =
      lowered_count_note(steps, p.layout.tasks(), {"-n", "per device per iteration", p.layout.fragments_per_task()});
  if (!lowered.empty()) stderr_notes().note(lowered);
  // Every size's host memory (a block table's pools, a duplex case's both directions)
  // checked before the first size runs; a size that does not fit is named.
  for (size_t i = 0; i < steps.size(); ++i)
    for (const CaseSpec& c : cases) try {
        if (c.duplex)
          check_duplex_host_memory(c, step_params[i], *selected.backend);
        else
          check_host_memory(c, step_params[i], *selected.backend);
      } catch (const RunError& e) {
        throw RunError("option --sweep at " + size_label(steps[i].block_bytes) + " (" +
                       std::to_string(steps[i].blocks) + (steps[i].blocks == 1 ? " block): " : " blocks): ") +
                       e.what());
      }
  const std::vector<CaseResult> results = run_in_turn(steps.size(), writer, [&](size_t i, ResultWriter& w) {
    const CopyParams& q = step_params[i];
    check_against_backend(cases, q, selected, stderr_notes());
    run_cases(cases, q, selected, w, stderr_notes());
  });
  if (!a.sweep.plot.empty())
    write_plot_file(a.sweep.plot,
                    bandwidth_plot_svg(results, selected.backend->name(), parse_plot_metric(a.sweep.plot_metric)),
                    stderr_notes());
}

// One side's --block-table and --pool-blocks (or the host side's), for `blocks`
// logical blocks; no table given: none (and a pool without a table is refused).
BlockTable parse_side_table(const std::string& spec, const std::string& pool_text, const std::string& option,
                            const std::string& pool_option, uint64_t blocks) {
  const uint64_t pool = parse_count(pool_option, pool_text, 0);
  if (spec.empty()) {
    if (pool != 0) throw UsageError("option " + pool_option + " sizes a " + option + "'s pool; give " + option + " too");
    return {};
  }
  return make_block_table(spec, blocks, pool, option, pool_option);
}

// --block-table, --host-block-table: each side's paged pool, a slot per logical block
// (a task, or with --model a block's tasks), checked here (the pools' bytes included).
void parse_block_tables(const CopyArgs& a, const std::optional<Workload>& workload, CopyParams& p) {
  p.tasks_per_block = workload ? std::max<uint64_t>(1, workload->tasks_per_block) : 1;
  const uint64_t blocks = p.layout.tasks() / p.tasks_per_block;
  p.device_table = parse_side_table(a.block_table, a.pool_blocks, "--block-table", "--pool-blocks", blocks);
  p.host_table =
      parse_side_table(a.host_block_table, a.host_pool_blocks, "--host-block-table", "--host-pool-blocks", blocks);
  if (p.device_table.slots.empty() && p.host_table.slots.empty()) {
    if (a.compare_contiguous)
      throw UsageError("option --compare-contiguous measures a --block-table's blocks against contiguous ones; give "
                       "--block-table or --host-block-table too");
    return;
  }
  p.compare_contiguous = a.compare_contiguous;
  // The pools' bytes: a UsageError when they overflow (with --sweep, at every size:
  // sweep_params, -s being the sweep's).
  if (a.sweep.sweep.empty()) p.placement();
}

// One side's table at a --sweep size of `blocks` blocks: the table itself where
// the size keeps the count; else made again for that count from what the run
// resolved (random: the same seed, in the given pool, or without --pool-blocks 4 x
// that count; FILE: its first `blocks` lines in the pool the first size validated
// it in, since an engine's slot ids do not shrink with the count).
BlockTable table_at(const BlockTable& t, const std::string& pool_text, const std::string& option,
                    const std::string& pool_option, uint64_t blocks) {
  if (t.slots.empty() || t.slots.size() == blocks) return t;
  const uint64_t pool = t.kind == TableKind::kFile ? t.pool : parse_count(pool_option, pool_text, 0);
  return make_block_table(t.label, blocks, pool, option, pool_option);
}

// --sweep: each size's params: its layout, and a block table's placed for its count
// (a table assigns slots to logical blocks; the slots' size follows the size), each
// size's pools checked here. A refusal at a size says which.
std::vector<CopyParams> sweep_params(const CopyArgs& a, const CopyParams& p, const std::vector<SweepStep>& steps) {
  std::vector<CopyParams> out;
  for (const SweepStep& step : steps) {
    CopyParams q = p;
    q.layout = Layout::uniform(step.block_bytes, step.blocks, p.layout.frags_option());
    try {
      q.device_table = table_at(p.device_table, a.pool_blocks, "--block-table", "--pool-blocks", step.blocks);
      q.host_table =
          table_at(p.host_table, a.host_pool_blocks, "--host-block-table", "--host-pool-blocks", step.blocks);
      q.placement();  // the pools' bytes at this size
    } catch (const UsageError& e) {
      if (!p.paged()) throw;
      throw UsageError("option --sweep at " + size_label(step.block_bytes) + " (" + std::to_string(step.blocks) +
                       (step.blocks == 1 ? " block): " : " blocks): ") + e.what());
    }
    out.push_back(q);
  }
  return out;
}

// The table options a run was given, for its equivalent command: the resolved seed
// and pool, so the command places every block where this run did.
std::string table_options(const CopyParams& p) {
  std::string s;
  if (!p.device_table.slots.empty())
    s += " --block-table " + p.device_table.label + " --pool-blocks " + std::to_string(p.device_table.pool);
  if (!p.host_table.slots.empty())
    s += " --host-block-table " + p.host_table.label + " --host-pool-blocks " + std::to_string(p.host_table.pool);
  if (p.compare_contiguous) s += " --compare-contiguous";
  return s;
}

// What the command line asks for, checked as far as it can be without a backend
// (parse_cli's check, and the first step of a run).
struct CopyRequest {
  CopyArgs args;
  CopyParams params;
  std::vector<SweepStep> steps;
  std::vector<CopyParams> step_params;  // per step: its layout and tables
  std::vector<std::string> names;
  std::optional<Workload> workload;
  bool list = false;  // --model list: print the presets
  bool list_cases = false;  // --list: print the cases
  bool each_combination = false;  // --model --dry-run without the selectors: a case per combination
  bool methods = false;  // --model and a block table, no case named: the gather methods compared
};

CopyRequest parse_copy_request(const CopyArgs& a0) {
  CopyRequest plan;
  if (a0.list_cases) {
    plan.list_cases = true;
    return plan;
  }
  if (a0.model.model == "list") {
    plan.list = true;
    return plan;
  }
  plan.args = a0;
  CopyArgs& a = plan.args;
  a.params.size_given = a.size_option && a.size_option->count() > 0;
  plan.params = parse_copy_params(a.params);
  CopyParams& p = plan.params;
  if (!a.sweep.sweep.empty()) {
    if (a.size_option && a.size_option->count() > 0)
      throw UsageError("option --sweep sets the block size; drop -s");
    if (!a.params.block_layout.empty())
      throw UsageError("option --sweep sweeps one block size; it cannot go with --block-layout");
  }
  plan.steps = parse_sweep_options(a.sweep, p.layout.tasks());

  std::vector<std::string>& names = plan.names;
  names = a.cases;
  // --model: one request's KV per card per iteration, in the model's block layout.
  plan.workload = parse_workload(a.model);
  const std::optional<Workload>& workload = plan.workload;
  std::string model_type = a.model_type;
  if (workload) {
    if (!a.model_type.empty()) throw UsageError("option --model replaces --model-type; give one of them");
    for (CLI::Option* o : {a.size_option, a.blocks_option, a.frags_option})
      if (o && o->count() > 0) throw UsageError("option --model sets the blocks; drop " + o->get_name());
    if (!a.params.block_layout.empty()) throw UsageError("option --model sets the blocks; drop --block-layout");
    if (!a.sweep.sweep.empty()) throw UsageError("option --model sets the blocks; it cannot go with --sweep");
    p.layout = Layout::block(workload->task_fragments, workload->tasks_per_card);
    const bool from_tp = tp_sets_devices(a.devices_option);
    if (from_tp) {
      p.devices = static_cast<int>(std::min<uint64_t>(workload->req.tp, kMaxDevices));  // -d defaults to the TP size
      p.devices_option = kDevicesFromTp;
    }
    // A paged layout and no case: which gather method to use for it, on one card
    // unless -d says how many at once (docs/copy.md "Which gather method").
    if (names.empty() && a.iodirect.empty() && a.sdma.empty() &&
        (!a.block_table.empty() || !a.host_block_table.empty())) {
      if (from_tp) p.devices = 1;
      names = gather_method_cases(p.devices);
      a.compare_contiguous = true;
      plan.methods = true;
    }
    if (!a.iodirect.empty() || !a.sdma.empty() || names.empty())
      model_type = workload->model.arch == KvArch::kGqa ? "gqa" : "mla";
  }
  const bool quick = !model_type.empty() || !a.iodirect.empty() || !a.sdma.empty();
  if (quick && workload && a.model.dry_run && names.empty() && (a.iodirect.empty() || a.sdma.empty())) {
    // A dry run sizes the blocks, which neither selector changes: it names the case
    // of every combination the selectors leave open (MLA: iodirect makes none).
    const auto values = [](const std::string& v) {
      return v.empty() ? std::vector<std::string>{"false", "true"} : std::vector<std::string>{v};
    };
    for (const std::string& io : values(a.iodirect))
      for (const std::string& sd : values(a.sdma)) {
        const std::string n = quick_mode_case(model_type, io, sd);
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
    plan.each_combination = true;
  } else if (quick) {
    if (!names.empty()) throw UsageError("quick-mode selectors cannot be combined with -t");
    const char* type_option = workload ? "--model" : "--model-type";
    if (model_type.empty() || a.iodirect.empty() || a.sdma.empty())
      throw UsageError(std::string("quick mode needs all of ") + type_option + ", --iodirect and --sdma; missing " +
                       (model_type.empty() ? type_option : a.iodirect.empty() ? "--iodirect" : "--sdma"));
    names.push_back(quick_mode_case(model_type, a.iodirect, a.sdma));
  }
  parse_block_tables(a, workload, p);
  plan.step_params = sweep_params(a, p, plan.steps);
  if (names.empty()) throw UsageError("copy needs a case: -t NAME (or the quick-mode selectors)");
  if (a.model.dry_run && !workload) throw UsageError("option --dry-run needs --model NAME|PATH");
  check_format(a.out.format);
  return plan;
}

int run_copy(const CopyArgs& a0, const GlobalOptions& g) {
  const CopyRequest plan = parse_copy_request(a0);
  if (plan.list_cases) return list_cases(g);
  if (plan.list) {
    std::cout << presets_text();
    return 0;
  }
  const CopyArgs& a = plan.args;
  const CopyParams& p = plan.params;
  const std::optional<Workload>& workload = plan.workload;
  if (workload && a.model.dry_run) {
    // One equivalent command per case (without a selection: per quick-mode combination;
    // the gather comparison: the methods this backend runs, said first).
    std::vector<std::string> names = plan.names;
    if (plan.methods) {
      const OfferedMethods offered = offered_methods(names, select_backend(g.backend));
      names = offered.names;
      std::cout << methods_text(offered, p.devices) << "\n";
    }
    const bool each = plan.each_combination;
    std::vector<std::string> cmds;
    for (size_t i = 0; i < (each ? names.size() : 1); ++i) {
      std::string cmd = "dev-sandbox";
      if (!g.backend.empty()) cmd += " --backend " + g.backend;
      cmd += " copy";
      for (size_t k = 0; k < names.size(); ++k)
        if (!each || k == i) cmd += " -t " + names[k];
      cmd += " --block-layout " + task_label(*workload) + " -n " + std::to_string(workload->tasks_per_card) +
             " -d " + std::to_string(p.devices) + " -i " + std::to_string(p.iterations);
      // A table slots a logical block; without --model every task is one, so only then
      // does the equivalent command place the blocks as this run does.
      if (p.tasks_per_block == 1) cmd += table_options(p);
      cmds.push_back(cmd);
    }
    std::cout << dry_run_text(*workload, cmds.front(), false);
    if (!p.device_table.slots.empty() || !p.host_table.slots.empty()) {
      TableShape t;
      t.device = TableSide::of(p.device_table);
      t.host = TableSide::of(p.host_table);
      std::cout << format_table_line(t).substr(2);  // the result's line, unindented
      if (p.tasks_per_block > 1)
        std::cout << "each slot holds a block's " << p.tasks_per_block
                  << " tasks together, which only --model places: the equivalent command has no table\n";
      if (p.compare_contiguous)
        std::cout << "--compare-contiguous: every iteration also copies the same blocks at slots 0, 1, ... of the "
                     "same pool, timed apart, and each case's Paged line says its share of that\n";
    }
    for (size_t i = 1; i < cmds.size(); ++i) std::cout << "equivalent: " << cmds[i] << "\n";
    return 0;
  }

  Cluster& ranks = cluster();
  if (ranks.multi()) {
    // Across ranks: every rank runs the cases on its node's cards; rank 0 writes.
    if (!plan.steps.empty() || !a.sweep.plot.empty())
      throw UsageError("--sweep and --plot are not available across ranks (mpirun/srun); run one size per job");
    CopyParams across = p;
    across.cluster = &ranks;
    return run_ranks_writing(
        ranks, a.out,
        [&](ResultWriter& mine) {
          bool begun = false;
          measure(a, g, across, plan.names, plan.steps, plan.step_params, workload, mine, begun, plan.methods);
        },
        NodeLines::kPerResult, [](const CaseResult&) { return std::string(); });
  }
  auto writer = make_writer(a.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string&) {
    measure(a, g, p, plan.names, plan.steps, plan.step_params, workload, *writer, begun, plan.methods);
  });
  return 0;
}

}  // namespace

Command add_copy_command(CLI::App& root, GlobalOptions& global) {
  auto args = std::make_shared<CopyArgs>();
  CLI::App* c = root.add_subcommand("copy", "measure one or more named copy cases (-t NAME; quick mode maps to one)");
  c->add_option("-t", args->cases, "case name; repeat to run several, in order (--list shows them)")->type_name("NAME");
  c->add_flag("--list", args->list_cases, "list the cases this backend offers, one per line with what it measures, and exit");
  args->size_option = c->add_option("-s", args->params.size, "one block's size: bytes, or with K/M/G suffix (default 512M)")->type_name("SIZE");
  args->blocks_option = c->add_option("-n", args->params.blocks, "blocks per device; with -f, IO tasks per device (default 8)")->type_name("N");
  c->add_option("-i", args->params.iterations, "measured iterations (default 128)")->type_name("N");
  args->devices_option = c->add_option("-d", args->params.devices, "devices (cards) (default 8)")->type_name("N");
  args->frags_option = c->add_option("-f,--frags", args->params.frags,
                "fragments per IO task on the direct path; 0: every block is a task (default 0)")->type_name("F");
  c->add_option("--block-layout", args->params.block_layout,
                "instead of -s/-f: every IO task moves one block of these fragments, each its own copy "
                "(its own SDMA context on the direct path), each fragment kind in its own region "
                "(e.g. 128K,16K,32K); Size(KB) is the block, Count the tasks")
      ->type_name("SIZE[,SIZE...]");
  c->add_option("--block-table", args->block_table,
                "the device side of every case a paged KV pool: each block at the slot the table names, "
                "sequential, random[:SEED] (a seeded shuffle of the pool) or FILE (one slot id per line, as dumped "
                "from an engine); every card the same table; the host side stays contiguous per block")
      ->type_name("sequential|random[:SEED]|FILE");
  c->add_option("--pool-blocks", args->pool_blocks,
                "slots in the device's paged pool, one block's bytes each (0: 4 x the request's blocks) (default 0)")
      ->type_name("P");
  c->add_option("--host-block-table", args->host_block_table,
                "the host side paged too: each block at its slot of a host pool (as --block-table)")
      ->type_name("sequential|random[:SEED]|FILE");
  c->add_option("--host-pool-blocks", args->host_pool_blocks,
                "slots in the host side's pool (0: 4 x the request's blocks) (default 0)")
      ->type_name("P");
  c->add_flag("--compare-contiguous", args->compare_contiguous,
              "with --block-table or --host-block-table: every iteration also the same copies with the blocks "
              "contiguous (slots 0, 1, ... of the same pools), timed apart, and the Paged line says the paged "
              "pass's share of it");
  c->add_option("-S,--streams", args->params.streams, "streams per device for multi-stream cases (default 4)")->type_name("S");
  add_stream_options(c, args->params);
  c->add_option("--duplex-ratio", args->params.duplex_ratio,
                "duplex cases: D2H bytes per H2D byte, the D2H block floor(-s x R) (default 1)")
      ->type_name("R");
  add_timeout_option(c, args->params.timeout);
  add_numa_options(c, args->params.numa, true);
  c->add_option("--warmup", args->params.warmup, "iterations run first and not counted (default 2)")->type_name("W");
  add_validate_option(c, args->params.validate, args->params.validate_each, global.command_line,
                      "check every destination byte after the run; `--validate each`: clear every destination "
                      "before each iteration and check every byte after it, outside the timing (slower: a fill "
                      "and a read-back of every destination per iteration), so each iteration is proven to copy");
  c->add_option("--model-type", args->model_type, "quick mode: gqa|mla")->type_name("gqa|mla");
  c->add_option("--iodirect", args->iodirect, "quick mode: true|false")->type_name("true|false");
  c->add_option("--sdma", args->sdma, "quick mode: true|false")->type_name("true|false");
  add_model_options(c, args->model, ModelOptionsFor::kCopy);
  add_output_options(c, args->out);
  add_sweep_options(c, args->sweep, {"block size", "-n", "Copy"});
  return {c,
          [args, &global] { return run_copy(*args, global); },
          [args] { parse_copy_request(*args); },
          {"dev-sandbox copy --list",
           "dev-sandbox copy -t all_host_to_all_device_ce_multi_stream -s 64M -n 8 -d 8 -i 32",
           "dev-sandbox copy -t host_to_device_ce -t host_to_device_batch_ce -s 16K -n 1024 -d 1 -i 64",
           "dev-sandbox copy -t host_to_device_ce -n 64 -d 1 --sweep 4K:64M --plot copy.svg"}};
}

}  // namespace ds
