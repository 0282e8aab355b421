#include "app/staged_options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "aio/io_engine.h"
#include "aio/workspace_set.h"
#include "app/disk_options.h"
#include "cases/case_runner.h"
#include "backends/select.h"
#include "cluster/across_ranks.h"
#include "core/error.h"
#include "core/size_label.h"
#include "core/units.h"
#include "load/load_plot.h"
#include "staging/mix_measure.h"
#include "staging/staged_measure.h"

namespace ds {

namespace {

bool loads(const StagedArgs& a) { return a.dir == StagedDir::kLoad; }
const char* name_of(const StagedArgs& a) { return loads(a) ? "load" : "offload"; }
const char* io_word(const StagedArgs& a) { return loads(a) ? "read" : "write"; }

// --sweep: -s of every run (one fragment's with -f), each run's file within one read or write.
void parse_staged_sweep(const StagedArgs& a, StagedRequest& plan) {
  if (!a.sweep.sweep.empty()) {
    if (a.size_option && a.size_option->count() > 0) throw UsageError("option --sweep sets the block size; drop -s");
    if (a.layout_option && a.layout_option->count() > 0)
      throw UsageError("option --sweep sweeps one block size; it cannot go with --block-layout");
  }
  plan.steps = parse_sweep_options(a.sweep, plan.p.layout.tasks());
  for (const SweepStep& s : plan.steps) {
    const uint64_t payload = s.block_bytes * plan.p.layout.fragments_per_task();
    if (s.block_bytes > kMaxIoSize || payload > kMaxIoSize)
      throw UsageError("option --sweep got '" + a.sweep.sweep + "': at " + size_label(s.block_bytes) +
                       " one block file would hold " + std::to_string(payload) + " bytes, over the 1G of one " +
                       io_word(a));
  }
}

// The block options (-s/-n/-f, --block-layout) or --model's sizing into `plan.p`.
void parse_blocks(StagedArgs& a, StagedRequest& plan) {
  StagedParams& p = plan.p;
  a.params.size_given = a.size_option && a.size_option->count() > 0;
  plan.workload = parse_workload(a.model);
  if (plan.workload) {
    for (CLI::Option* o : {a.size_option, a.blocks_option, a.frags_option, a.layout_option})
      if (o && o->count() > 0) throw UsageError("option --model sets the blocks; drop " + o->get_name());
    if (!a.sweep.sweep.empty()) throw UsageError("option --model sets the blocks; it cannot go with --sweep");
    // One file per block holding all its layers, as aio --model stores it.
    a.params.blocks = std::to_string(plan.workload->tasks_per_card);
    // Every card of the TP group, as copy --model: -d defaults to the TP size.
    if (tp_sets_devices(a.devices_option))
      a.params.devices = std::to_string(std::min<uint64_t>(plan.workload->req.tp, kMaxDevices));
  }
  const CopyParams c = parse_copy_params(a.params);
  p.layout = c.layout;
  if (plan.workload) {
    p.layout = Layout::block(plan.workload->task_fragments, plan.workload->tasks_per_card);
    p.tasks_per_file = plan.workload->tasks_per_block;
    // MLA/DSA: every card holds the same latent, as copy's shared host source.
    if (plan.workload->model.arch != KvArch::kGqa) p.shared = true;
  }
  p.iterations = c.iterations;
  p.devices = c.devices;
  if (plan.workload && tp_sets_devices(a.devices_option)) p.devices_option = kDevicesFromTp;
  p.streams = c.streams;
  p.warmup = c.warmup;
  p.timeout_s = c.timeout_s;
  p.validate = c.validate;
  p.numa_request = c.numa_request;
}

// offload with one file set (MLA/DSA, --shared): card c writes blocks c, c+d, c+2d,
// ... (docs/offload.md "MLA/DSA"), so every card needs at least one.
void check_offload_shares(const StagedArgs& a, const StagedRequest& plan) {
  const StagedParams& p = plan.p;
  if (loads(a) || !p.shared || p.files() >= static_cast<uint64_t>(p.devices)) return;
  throw UsageError(std::string("offload ") + (plan.workload ? "--model " + a.model.model + " (one latent on every card)"
                                                             : std::string("--shared")) +
                   ": " + std::to_string(p.files()) + " block file" + (p.files() == 1 ? "" : "s") +
                   " cannot give each of the " + std::to_string(p.devices) +
                   " cards its share (card c writes blocks c, c+d, ...); " +
                   (plan.workload ? "raise --input-len" : "raise -n") + " or lower -d" +
                   (p.devices_option == "-d" ? "" : " (--tp set it to " + std::to_string(p.devices) + ")"));
}

}  // namespace

namespace {

// load --offload-ratio R: a number above 0, at most kMaxOffloadRatio; one block size.
double parse_offload_ratio(const StagedArgs& a) {
  const std::string& text = a.offload_ratio;
  const std::string bad = "option --offload-ratio got '" + text + "': accepts a number above 0 and at most 64 "
                          "(offloaded blocks per loaded block)";
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) throw UsageError(bad);
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(r) || !(r > 0) || r > kMaxOffloadRatio) throw UsageError(bad);
  if (!a.sweep.sweep.empty()) throw UsageError("option --offload-ratio measures one block size; it cannot go with --sweep");
  return r;
}

// A pool of `t.pool` blocks of `per_block` tasks of `task_bytes`: its bytes fit 64 bits.
void check_pool_bytes(const BlockTable& t, uint64_t per_block, uint64_t task_bytes) {
  const std::string slots = "option --pool-blocks " + std::to_string(t.pool) + ": the pool's ";
  const uint64_t tasks = checked_mul(t.pool, per_block, slots + "tasks (" + std::to_string(per_block) + " per block)");
  checked_mul(tasks, task_bytes, slots + "bytes");
}

// --block-table, --pool-blocks: the card's paged pool, a slot per block file.
void parse_block_table(const StagedArgs& a, StagedRequest& plan) {
  if (!a.host_block_table.empty())
    throw UsageError("option --host-block-table: " + std::string(loads(a) ? "load" : "offload") +
                     "'s host side is its staging buffers, each one block as the store moves it, not a pool to "
                     "page; copy takes it");
  const bool given = a.table_option && a.table_option->count() > 0;
  // A pool past 2^40 slots is no card's: refused here, in words, not as a bad number.
  const bool digits = !a.pool_blocks.empty() && a.pool_blocks.size() <= 19 &&
                      a.pool_blocks.find_first_not_of("0123456789") == std::string::npos;
  if (digits && std::stoull(a.pool_blocks) > kMaxPoolBlocks)
    throw UsageError("option --pool-blocks got '" + a.pool_blocks + "': a pool of more than " +
                     std::to_string(kMaxPoolBlocks) + " slots (2^40) is more than any card holds");
  const uint64_t pool = parse_count("--pool-blocks", a.pool_blocks, 0);
  if (!given) {
    if (pool != 0) throw UsageError("option --pool-blocks sizes a --block-table's pool; give --block-table too");
    // Without a table the blocks are contiguous already: a second pass would measure the same.
    if (a.compare_contiguous)
      throw UsageError("option --compare-contiguous measures a --block-table's blocks against contiguous ones; give "
                       "--block-table too");
    return;
  }
  // With --offload-ratio the offload side gets a table of its own (staging/mix_measure.h).
  if (a.offload_option && a.offload_option->count() > 0 && a.compare_contiguous)
    throw UsageError("option --compare-contiguous cannot go with --offload-ratio: the mix times each direction together "
                     "and alone, with no contiguous pass beside them; run load or offload alone with it");
  plan.p.table = make_block_table(a.block_table, plan.p.files(), pool);
  plan.p.compare_contiguous = a.compare_contiguous;
  check_pool_bytes(plan.p.table, plan.p.tasks_per_file, plan.p.layout.task_bytes());
  // --sweep: a table assigns slots to logical blocks, so each size keeps the blocks'
  // slots where it keeps their count; where the sweep lowers -n, the table is made
  // again for that count: random with the same seed in the given pool (without
  // --pool-blocks: 4 x n), a FILE its first n lines in the pool the first size
  // validated it in (an engine's slot ids do not shrink with the count); each size's
  // pool checked here.
  for (const SweepStep& step : plan.steps) {
    BlockTable t = plan.p.table;
    try {
      if (step.blocks != t.slots.size())
        t = make_block_table(t.label, step.blocks, t.kind == TableKind::kFile ? t.pool : pool);
      check_pool_bytes(t, plan.p.tasks_per_file, step.block_bytes * plan.p.layout.fragments_per_task());
    } catch (const UsageError& e) {
      throw UsageError("option --sweep at " + size_label(step.block_bytes) + " (" + std::to_string(step.blocks) +
                       (step.blocks == 1 ? " block): " : " blocks): ") + e.what());
    }
    plan.step_tables.push_back(t);
  }
}

}  // namespace

StagedArgs staged_defaults(StagedDir dir) {
  StagedArgs a;
  a.dir = dir;
  a.params.size = "1M";
  a.params.blocks = "64";
  a.params.iterations = "8";
  a.params.devices = "1";
  a.params.warmup = "1";
  return a;
}

StagedRequest parse_staged(const StagedArgs& a0) {
  StagedArgs a = a0;
  StagedRequest plan;
  StagedParams& p = plan.p;
  p.workspaces = parse_workspaces(a.workspaces);
  parse_blocks(a, plan);
  p.engine = parse_engine(a.engine, false);
  p.iodepth = parse_depth("--iodepth", a.iodepth, 1);
  p.staging = parse_depth("--staging", a.staging, 0);
  if (a.sdma != "true" && a.sdma != "false")
    throw UsageError("option --sdma got '" + a.sdma + "': accepts true|false");
  p.sdma = a.sdma == "true";
  p.shared = p.shared || a.shared;
  p.buffered = a.buffered;
  p.keep = a.keep;
  checked_mul(p.tasks_per_file, p.layout.task_bytes(), "one block file's bytes");
  if (p.file_payload() > kMaxIoSize)
    throw UsageError("one block file would hold " + std::to_string(p.file_payload()) + " bytes, over the 1G of one " +
                     io_word(a) + ": lower -s (or --input-len/--block-size with --model)");
  checked_mul(p.file_bytes(), p.staging_buffers(), "the staging buffers' bytes");
  check_offload_shares(a, plan);
  parse_staged_sweep(a, plan);
  parse_block_table(a, plan);
  if (a.offload_option && a.offload_option->count() > 0) {
    plan.offload_ratio = parse_offload_ratio(a);
    mix_offload_params(p, plan.offload_ratio, nullptr);  // its layout (R x the blocks) is refused here if it overflows
  }
  return plan;
}

void add_staged_options(CLI::App* c, StagedArgs& a) {
  const bool load = loads(a);
  c->add_option("--workspace", a.workspaces,
                "directory for the block files (it must exist; --create-workspace makes it); repeat it to spread the files over "
                "several directories, round-robin by file")
      ->required()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("DIR");
  a.size_option =
      c->add_option("-s", a.params.size, "one block's size (with -f: one fragment's): bytes, or with K/M/G suffix (default 1M)")
          ->type_name("SIZE");
  a.blocks_option = c->add_option("-n", a.params.blocks,
                                  std::string("blocks per card: one file and one ") + io_word(a) + " each (default 64)")
                        ->type_name("N");
  a.frags_option = c->add_option("-f,--frags", a.params.frags,
                                 "each block file holds F fragments of -s bytes, each its own copy (0: one) (default 0)")
                       ->type_name("F");
  a.layout_option = c->add_option("--block-layout", a.params.block_layout,
                                  std::string("instead of -s/-f: every block holds these fragments, each its own copy ") +
                                      (load ? "into" : "from") + " its own device region (e.g. 128K,16K,32K)")
                        ->type_name("SIZE[,SIZE...]");
  a.devices_option =
      c->add_option("-d", a.params.devices, "cards, one worker process each (default 1; with --model, --tp)")
          ->type_name("N");
  c->add_option("-i", a.params.iterations,
                "measured rounds, each a pipelined pass and both stages alone (with --compare-contiguous also the "
                "contiguous pass) (default 8)")
      ->type_name("N");
  c->add_option("--warmup", a.params.warmup, "rounds run first and not counted (default 1)")->type_name("W");
  c->add_option("--engine", a.engine, "libaio or io_uring (default libaio)")->type_name("libaio|io_uring");
  c->add_option("--iodepth", a.iodepth, std::string(load ? "reads" : "writes") + " in flight at most per card (default 16)")
      ->type_name("Q");
  c->add_option("--staging", a.staging,
                "pinned host staging buffers per card, one block each; 0: --iodepth (default 0)")
      ->type_name("K");
  c->add_option("--sdma", a.sdma, "true: one direct-path task per block; false: copies on CE streams (default false)")
      ->type_name("true|false");
  c->add_option("-S,--streams", a.params.streams, "CE streams per card, blocks round-robin over them (default 4)")
      ->type_name("S");
  if (load)
    a.offload_option =
        c->add_option("--offload-ratio", a.offload_ratio,
                      "while loading, offload R times the request's blocks on every card (device -> host staging -> "
                      "disk, files of their own), both at once; each direction alone and together, and what fell short")
            ->type_name("R");
  a.table_option = c->add_option("--block-table", a.block_table,
                                 "where each block lies in the card's paged KV pool: sequential, random[:SEED] (a "
                                 "seeded shuffle of the pool) or FILE (one slot id per line, as dumped from an engine); "
                                 "the block files stay contiguous per block" +
                                     std::string(load ? "; with --offload-ratio the load's, and the offloads get a table "
                                                        "of their own of the same kind (random:SEED+1; not a FILE)"
                                                      : ""))
                       ->type_name("sequential|random[:SEED]|FILE");
  // Not listed (group ""): taken only to refuse it with why (copy --host-block-table pages a host pool).
  c->add_option("--host-block-table", a.host_block_table)->group("");
  c->add_option("--pool-blocks", a.pool_blocks,
                std::string("slots in the card's paged pool, one block file's bytes each (0: 4 x the request's blocks)") +
                    (load ? "; with --offload-ratio the load side's, the offload side's pool scaled by its blocks "
                            "(ceil(P x its blocks / the load's))"
                          : "") +
                    " (default 0)")
      ->type_name("P");
  c->add_flag("--compare-contiguous", a.compare_contiguous,
              "with --block-table: each round also the pipelined pass with the blocks contiguous (slots 0, 1, ... of "
              "the same pool), and the Paged line says the paged pass's share of it");
  c->add_flag("--create-workspace", a.create_workspace,
              "make a --workspace that does not exist (with its parents; removed again after the run)");
  c->add_flag("--shared", a.shared,
              load ? "one set of block files that every card reads (MLA/DSA models: always)"
                   : "one set of block files for every card's one latent, card c writing blocks c, c+d, c+2d, ... "
                     "(MLA/DSA models: always)");
  c->add_flag("--validate", a.params.validate,
              load ? "check every card's KV region against the files after every pipelined pass, outside the timing"
                   : "read every block file back after every pipelined pass and check it against the device's "
                     "pattern, outside the timing");
  c->add_flag("--buffered", a.buffered,
              "allow page-cache I/O where the filesystem refuses O_DIRECT (Method gets +BUF)");
  c->add_flag("--keep", a.keep,
              "leave the block files (and a --create-workspace directory) after a successful run, and say where");
  add_timeout_option(c, a.params.timeout);
  add_numa_options(c, a.params.numa, false);
  add_model_options(c, a.model, load ? ModelOptionsFor::kLoad : ModelOptionsFor::kOffload);
  add_output_options(c, a.out);
  add_sweep_options(c, a.sweep, {"block size", "-n", load ? "IO+Copy" : "Copy+IO", "copy"});
}

namespace {

// --dry-run: the sizing and the equivalent command without --model.
int print_dry_run(const StagedArgs& a, const StagedRequest& plan, const GlobalOptions& g) {
  const StagedParams& p = plan.p;
  std::string cmd = "dev-sandbox";
  if (!g.backend.empty()) cmd += " --backend " + g.backend;
  cmd += std::string(" ") + name_of(a);
  for (const std::string& w : p.workspaces) cmd += " --workspace " + w;
  // A table slots a block file; the equivalent command's are one task each, so only
  // where --model's files are one task does it place the blocks as this run does.
  const bool tables = !p.table.slots.empty();
  cmd += " --block-layout " + task_label(*plan.workload) + " -n " + std::to_string(plan.workload->tasks_per_card) +
         " -d " + std::to_string(p.devices) + (p.shared ? " --shared" : "");
  if (plan.offload_ratio > 0) cmd += " --offload-ratio " + a.offload_ratio;
  if (tables && p.tasks_per_file == 1)
    cmd += " --block-table " + p.table.label + " --pool-blocks " + std::to_string(p.table.pool) +
           (p.compare_contiguous ? " --compare-contiguous" : "");
  cmd += std::string(" (the same copies; it ") +
         (loads(a) ? "reads them from" : "writes them to") + " one file per layer and block, --model " +
         (loads(a) ? "from " : "to ") + std::to_string(p.files()) + " files of " +
         (plan.workload->tasks_per_block > 1 ? std::to_string(p.tasks_per_file) + " layers each)"
                                             : std::string("one block's chunks of every layer each)"));
  std::cout << dry_run_text(*plan.workload, cmd, false);
  if (!tables) return 0;
  if (plan.offload_ratio > 0)
    std::cout << mix_tables_note(p, mix_offload_params(p, plan.offload_ratio, nullptr)) << "\n";
  else
    std::cout << "--block-table: each block at its slot of " << table_text(p.table) << "\n";
  if (p.tasks_per_file > 1)
    std::cout << "each slot holds a block file's " << p.tasks_per_file
              << " tasks together, which only --model places: the equivalent command has no table\n";
  return 0;
}

}  // namespace

int run_staged(const StagedArgs& a, const GlobalOptions& g) {
  if (a.model.model == "list") {
    std::cout << presets_text();
    return 0;
  }
  const StagedRequest plan = parse_staged(a);
  const StagedParams& p = plan.p;
  if (a.model.dry_run && !plan.workload) throw UsageError("option --dry-run needs --model NAME|PATH");
  if (plan.workload && a.model.dry_run) return print_dry_run(a, plan, g);
  const char* sim_tail = loads(a) ? kSimLoad : kSimOffload;
  // Measures on this process's cards into `w`; the run's header goes to `header`
  // once (`begun` says when it is out).
  auto measure = [&](const SelectedBackend& selected, const StagedParams& params, ResultWriter& header,
                     ResultWriter& w, bool& begun, std::string& current) {
    const auto begin = [&] {
      if (begun) return;
      RunInfo info = run_info(selected, g.command_line);
      if (plan.workload) attach_workload(info, *plan.workload);
      header.begin(info);
      begun = true;
    };
    if (plan.offload_ratio > 0)  // load --offload-ratio: both directions at once
      measure_mix(params, plan.offload_ratio, selected, w, begin, current, stderr_notes());
    else
      measure_staged(a.dir, params, selected, w, begin, current, stderr_notes());
  };
  Cluster& ranks = cluster();
  if (ranks.multi()) {
    // Across ranks: every rank moves its node's cards' KV; rank 0 writes.
    if (!plan.steps.empty())
      throw UsageError("--sweep and --plot are not available across ranks (mpirun/srun); run one size per job");
    StagedParams across = p;
    across.cluster = &ranks;
    return run_ranks_writing(
        ranks, a.out,
        [&](ResultWriter& mine) {
          bool begun = false;
          std::string current;
          check_workspaces_exist(across.workspaces, a.create_workspace);
          measure(select_and_say(g.backend, sim_tail), across, mine, mine, begun, current);
        },
        NodeLines::kPerResult, [](const CaseResult&) { return std::string(); });
  }
  auto writer = make_writer(a.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string& current) {
    check_workspaces_exist(p.workspaces, a.create_workspace);
    const SelectedBackend selected = select_and_say(g.backend, sim_tail);
    if (plan.steps.empty()) return measure(selected, p, *writer, *writer, begun, current);
    if (!a.sweep.plot.empty()) check_plot_path(a.sweep.plot);
    // One run per block size, each with its own files, all into the one document.
    const std::string lowered = lowered_count_note(
        plan.steps, p.layout.tasks(), {"-n", "per card per iteration", p.layout.fragments_per_task()});
    if (!lowered.empty()) stderr_notes().note(lowered);
    const std::vector<CaseResult> results = run_in_turn(plan.steps.size(), *writer, [&](size_t i, ResultWriter& w) {
      StagedParams q = p;
      q.layout = Layout::uniform(plan.steps[i].block_bytes, plan.steps[i].blocks, p.layout.frags_option());
      if (!plan.step_tables.empty()) q.table = plan.step_tables[i];
      measure(selected, q, *writer, w, begun, current);
    });
    if (!a.sweep.plot.empty())
      write_plot_file(a.sweep.plot,
                      staged_plot_svg(a.dir, results, selected.backend->name(), parse_plot_metric(a.sweep.plot_metric)),
                      stderr_notes());
  });
  return 0;
}

Command add_staged_command(CLI::App& root, GlobalOptions& global, StagedDir dir, const std::string& description,
                           std::vector<std::string> examples) {
  auto a = std::make_shared<StagedArgs>(staged_defaults(dir));
  CLI::App* c = root.add_subcommand(name_of(*a), description);
  add_staged_options(c, *a);
  return {c, [a, &global] { return run_staged(*a, global); },
          [a] {
            if (a->model.model != "list") parse_staged(*a);
            check_format(a->out.format);
          },
          std::move(examples)};
}

}  // namespace ds
