// `aio`: disk dump/load bandwidth of the POSIX-store step; this file reads the
// options, src/aio/aio_measure does the measurement.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "aio/aio_measure.h"
#include "aio/aio_plot.h"
#include "aio/workspace_set.h"
#include "app/command.h"
#include "app/copy_params.h"
#include "app/disk_options.h"
#include "app/model_options.h"
#include "app/output_options.h"
#include "app/sweep_options.h"
#include "backends/select.h"
#include "cluster/across_ranks.h"
#include "core/error.h"
#include "core/units.h"

namespace ds {

namespace {

struct AioArgs {
  std::vector<std::string> workspaces;
  std::string io_type = "mmap", io_size = "1048576", io_number = "512",
                         device_id = "0", epochs = "32", iodepth = "64", timeout = "60",
                         shards_per_file = "1", workers = "1", mix, phases,
                         files = "per-rank";
  bool validate = false, keep = false, buffered = false;
  bool validate_each = false;
  std::vector<std::string> engines;  // --engine, repeatable, each a comma list; none: libaio
  bool create_workspace = false;      // --create-workspace
  NumaOptionText numa;
  OutputOptions out;
  SweepOptionText sweep;
  ModelOptionText model;
  // Set by --model: refused when given with it.
  CLI::Option* io_size_option = nullptr;
  CLI::Option* io_number_option = nullptr;
  CLI::Option* shards_option = nullptr;
  CLI::Option* device_option = nullptr;
  CLI::Option* mix_option = nullptr;
  CLI::Option* phases_option = nullptr;
};

constexpr uint64_t kMaxShardsPerFile = 65536;
constexpr uint64_t kMaxWorkers = 256;
constexpr uint64_t kMaxMix = 1000;

// --mix R and --phases LIST: which phases run (always dump, load, mix in that
// order); without --phases dump and load, and mix when --mix is given.
void parse_phases(const AioArgs& a, AioParams& p) {
  const bool mix_given = a.mix_option && a.mix_option->count() > 0;
  if (mix_given) {
    const uint64_t r = parse_count("--mix", a.mix, 1);
    if (r > kMaxMix)
      throw UsageError("option --mix got '" + a.mix + "': must be at most " + std::to_string(kMaxMix));
    p.mix = static_cast<int>(r);
  }
  if (!a.phases_option || a.phases_option->count() == 0) {
    p.phase_mix = mix_given;
    return;
  }
  const std::string bad = "option --phases got '" + a.phases + "': ";
  p.phase_dump = p.phase_load = p.phase_mix = false;
  for (const std::string& name : split_commas(a.phases)) {
    bool* on = name == "dump" ? &p.phase_dump : name == "load" ? &p.phase_load : name == "mix" ? &p.phase_mix : nullptr;
    if (name.empty()) throw UsageError(bad + "an empty phase; accepts a comma list of dump, load, mix");
    if (!on) throw UsageError(bad + "unknown phase '" + name + "'; accepts a comma list of dump, load, mix");
    if (*on) throw UsageError(bad + "names " + name + " twice");
    *on = true;
  }
  if (p.phase_mix && !mix_given)
    throw UsageError(bad + "mix needs --mix R (load sweeps per mixed epoch)");
  if (mix_given && !p.phase_mix) throw UsageError("option --mix got '" + a.mix + "' but --phases has no mix");
}

// --engine libaio,psync --engine io_uring: every engine once, in the order given.
std::vector<AioEngineKind> parse_engines(const std::vector<std::string>& typed) {
  std::vector<AioEngineKind> out;
  std::vector<std::string> seen;
  for (const std::string& value : typed)
    for (const std::string& name : split_commas(value)) {
      if (name.empty())
        throw UsageError("option --engine got '" + value + "': an empty engine; accepts libaio, io_uring or psync, "
                         "or a comma list of them");
      if (std::find(seen.begin(), seen.end(), name) != seen.end())
        throw UsageError("option --engine names " + name + " twice: each engine once");
      seen.push_back(name);
      out.push_back(parse_engine(name, true));
    }
  if (out.empty()) out.push_back(AioEngineKind::kLibaio);
  return out;
}

AioParams parse_aio(const AioArgs& a) {
  AioParams p;
  p.workspaces = parse_workspaces(a.workspaces);
  if (a.io_type == "mmap" || a.io_type == "alloc")
    p.alloc = a.io_type == "alloc";
  else
    throw UsageError("option --io-type got '" + a.io_type + "': accepts mmap|alloc");
  p.engine = parse_engines(a.engines).front();
  p.io_size = parse_size("--io-size", a.io_size);
  if (p.io_size % kDirectAlign != 0)
    throw UsageError("option --io-size got '" + a.io_size +
                     "': must be a multiple of 4096 bytes (O_DIRECT alignment)");
  if (p.io_size > kMaxIoSize)
    throw UsageError("option --io-size got '" + a.io_size + "': must be at most 1G");
  p.io_number = parse_count("--io-number", a.io_number, 1);
  p.shards_per_file = parse_count("--shards-per-file", a.shards_per_file, 1);
  if (p.shards_per_file > kMaxShardsPerFile)
    throw UsageError("option --shards-per-file got '" + a.shards_per_file + "': must be at most " +
                     std::to_string(kMaxShardsPerFile));
  const uint64_t device = parse_count("--device-id", a.device_id, 0);
  if (device > 65535)
    throw UsageError("option --device-id got '" + a.device_id + "': must be at most 65535");
  p.device_id = static_cast<int>(device);
  p.device_given = a.device_option && a.device_option->count() > 0;
  const uint64_t workers = parse_count("--workers", a.workers, 1);
  if (workers > kMaxWorkers)
    throw UsageError("option --workers got '" + a.workers + "': must be at most " + std::to_string(kMaxWorkers));
  p.workers = static_cast<int>(workers);
  const uint64_t epochs = parse_count("--epoch-number", a.epochs, 1);
  if (epochs > 1000000)
    throw UsageError("option --epoch-number got '" + a.epochs + "': must be at most 1000000");
  p.epochs = static_cast<int>(epochs);
  p.iodepth = parse_depth("--iodepth", a.iodepth, 1);
  parse_phases(a, p);
  p.timeout_s = parse_timeout(a.timeout);
  p.validate = a.validate;
  p.validate_each = a.validate && a.validate_each;
  p.numa_request = parse_numa_options(a.numa);
  if (a.files == "shared")
    p.shared_files = true;
  else if (a.files != "per-rank")
    throw UsageError("option --files got '" + a.files + "': accepts per-rank|shared");
  if (p.shared_files && p.workers > 1)
    throw UsageError("option --files shared runs one worker per rank (launch more ranks instead); drop --workers " +
                     a.workers);
  if (p.shared_files && p.validate_each && p.phase_mix)
    throw UsageError("option --files shared: `--validate each` clears a rank's share between mixed epochs while "
                     "other ranks still load it; use --validate, or leave out the mix phase");
  p.keep = a.keep;
  p.buffered = a.buffered;
  checked_mul(p.io_size, p.shards_per_file, "option --io-size x --shards-per-file");  // one file's bytes
  p.total = checked_mul(p.io_size, checked_mul(p.io_number, p.shards_per_file, "option --io-number x --shards-per-file"),
                        "option --io-size x --io-number x --shards-per-file");
  p.buffers = std::min<uint64_t>(p.iodepth, p.shards());
  return p;
}

// --model: UCM's store for one request, one file per block. The geometry is the
// model's, so the options that set it are refused rather than silently overridden.
std::optional<Workload> apply_model(AioArgs& a) {
  std::optional<Workload> w = parse_workload(a.model);
  if (!w) return w;
  for (CLI::Option* o : {a.io_size_option, a.io_number_option, a.shards_option})
    if (o && o->count() > 0)
      throw UsageError("option --model sets the store layout (--io-size, --io-number, --shards-per-file); drop " +
                       o->get_name());
  if (w->shard_bytes > kMaxIoSize)
    throw UsageError("option --model: one shard of " + std::to_string(w->shard_bytes) +
                     " bytes is over aio's 1G per I/O; use --layerwise or a larger --tp");
  a.io_size = std::to_string(w->shard_bytes);
  a.io_number = std::to_string(w->blocks);
  a.shards_per_file = std::to_string(w->shards_per_file);
  return w;
}

// What the command line asks for: the parameters, then one run per size (--sweep)
// and, at each, one per engine, in order.
struct AioRequest {
  AioParams p;
  std::vector<AioEngineKind> engines;
  std::vector<SweepStep> steps;  // --sweep: --io-size and --io-number of each size
  size_t runs() const { return std::max<size_t>(1, steps.size()) * engines.size(); }
  // Run i: size i / engines, engine i % engines.
  AioParams run(size_t i) const {
    AioParams q = p;
    q.engine = engines[i % engines.size()];
    if (steps.empty()) return q;
    const SweepStep& s = steps[i / engines.size()];
    q.io_size = s.block_bytes;
    q.io_number = s.blocks;
    q.total = q.io_size * q.shards();
    q.buffers = std::min<uint64_t>(q.iodepth, q.shards());
    return q;
  }
};

AioRequest parse_aio_request(const AioArgs& a) {
  AioRequest plan;
  plan.p = parse_aio(a);
  plan.engines = parse_engines(a.engines);
  if (!a.sweep.sweep.empty() && a.io_size_option && a.io_size_option->count() > 0)
    throw UsageError("option --sweep sets the shard size; drop --io-size");
  if (!a.sweep.sweep.empty() && !a.model.model.empty())
    throw UsageError("option --model sets the store layout; it cannot go with --sweep");
  plan.steps = parse_sweep_options(a.sweep, plan.p.io_number);
  for (const SweepStep& s : plan.steps) {
    if (s.block_bytes % kDirectAlign != 0 || s.block_bytes > kMaxIoSize)
      throw UsageError("option --sweep got '" + a.sweep.sweep +
                       "': aio's shard sizes run from 4K (O_DIRECT alignment) to 1G");
    checked_mul(s.block_bytes, checked_mul(s.blocks, plan.p.shards_per_file, "option --sweep"), "option --sweep");
  }
  return plan;
}

int run_aio(const AioArgs& args0, const GlobalOptions& g) {
  if (args0.model.model == "list") {
    std::cout << presets_text();
    return 0;
  }
  AioArgs args = args0;
  const std::optional<Workload> workload = apply_model(args);
  const AioRequest plan = parse_aio_request(args);
  const AioParams& p = plan.p;
  if (workload && args.model.dry_run) {
    std::string cmd = "dev-sandbox";
    if (!g.backend.empty()) cmd += " --backend " + g.backend;
    cmd += " aio";
    for (const std::string& w : p.workspaces) cmd += " --workspace " + w;
    cmd += " --io-size " + args.io_size + " --io-number " + args.io_number +
           " --shards-per-file " + args.shards_per_file + " --epoch-number " + std::to_string(p.epochs);
    std::cout << dry_run_text(*workload, cmd, true);
    return 0;
  }
  Cluster& ranks = cluster();
  if (ranks.multi()) {
    // Across ranks: rank 0 alone writes (stdout or --output); every rank measures.
    if (plan.runs() > 1 || !plan.steps.empty())
      throw UsageError("--sweep and a list of --engine are not available across ranks (mpirun/srun); run one engine "
                       "and one size per job");
    AioParams across = p;
    across.cluster = &ranks;
    return run_ranks_writing(
        ranks, args.out,
        [&](ResultWriter& mine) {
          std::string current;
          check_workspaces_exist(across.workspaces, args.create_workspace);
          const SelectedBackend selected = select_and_say(g.backend, kSimAio);
          measure_aio(across, selected, mine,
                      [&] {
                        RunInfo info = run_info(selected, g.command_line);
                        if (workload) attach_workload(info, *workload);
                        mine.begin(info);
                      },
                      current, stderr_notes());
        },
        NodeLines::kTogether,
        [](const CaseResult& r) { return r.name.rfind("aio_", 0) == 0 ? r.name.substr(4) : r.name; });
  }
  auto writer = make_writer(args.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string& current) {
    check_workspaces_exist(p.workspaces, args.create_workspace);
    const SelectedBackend selected = select_and_say(g.backend, kSimAio);
    auto measure = [&](const AioParams& q, ResultWriter& w) {
      measure_aio(q, selected, w,
                  [&] {
                    if (begun) return;  // once for the whole run
                    RunInfo info = run_info(selected, g.command_line);
                    if (workload) attach_workload(info, *workload);
                    writer->begin(info);
                    begun = true;
                  },
                  current, stderr_notes());
    };
    if (plan.runs() == 1) return measure(p, *writer);
    if (!args.sweep.plot.empty()) check_plot_path(args.sweep.plot);
    const std::string lowered =
        lowered_count_note(plan.steps, p.io_number, {"--io-number", "per worker per epoch", p.shards_per_file});
    if (!lowered.empty()) stderr_notes().note(lowered);
    // Each size and engine its own measurement (its own files), all into the one document.
    const std::vector<CaseResult> results =
        run_in_turn(plan.runs(), *writer, [&](size_t i, ResultWriter& w) { measure(plan.run(i), w); });
    if (!args.sweep.plot.empty())
      write_plot_file(args.sweep.plot, aio_plot_svg(results, p.workspaces, parse_plot_metric(args.sweep.plot_metric)),
                      stderr_notes());
  });
  return 0;
}

}  // namespace

Command add_aio_command(CLI::App& root, GlobalOptions& global) {
  auto a = std::make_shared<AioArgs>();
  CLI::App* c = root.add_subcommand("aio", "disk dump/load bandwidth with libaio, io_uring or psync");
  c->add_option("--workspace", a->workspaces,
                "directory for the shard files (it must exist; --create-workspace makes it); repeat it to spread the files over "
                "several directories, round-robin by file")
      ->required()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("DIR");
  c->add_option("--io-type", a->io_type,
                "host buffer: mmap (page-aligned mmap) or alloc (the backend's pinned memory) "
                "(default mmap)")
      ->type_name("mmap|alloc");
  a->io_size_option =
      c->add_option("--io-size", a->io_size, "one shard's bytes (one I/O), K/M/G suffixes accepted (default 1048576)")
          ->type_name("BYTES");
  a->io_number_option =
      c->add_option("--io-number", a->io_number,
                    "shard files (UCM: blocks); each holds --shards-per-file shards (default 512)")
          ->type_name("N");
  a->shards_option = c->add_option("--shards-per-file", a->shards_per_file,
                                   "shards in each file, each its own I/O of --io-size at offset "
                                   "shard x --io-size (UCM --layerwise: one per layer) (default 1)")
                         ->type_name("K");
  a->device_option =
      c->add_option("--device-id", a->device_id,
                    "device whose pinned memory --io-type alloc uses (default 0; with --workers: worker w uses "
                    "device w unless this is given)")
          ->type_name("ID");
  c->add_option("--workers", a->workers,
                "worker processes, each with its own shard files and host buffers, started together at every "
                "epoch; IO is the slowest worker's, BW all workers' bytes over it (default 1)")
      ->type_name("W");
  c->add_option("--epoch-number", a->epochs,
                "dump epochs, then as many load epochs, then (with --mix) as many mixed epochs (default 32)")
      ->type_name("E");
  a->mix_option = c->add_option("--mix", a->mix,
                                "R >= 1: after the load epochs, mixed epochs of one dump sweep then R load sweeps of "
                                "the same shards, timed together (result aio_mixed, (1 + R) x the bytes); adds mix "
                                "to the default --phases")
                      ->type_name("R");
  a->phases_option =
      c->add_option("--phases", a->phases,
                    "which phases run, a comma list of dump, load, mix (run in that order; default dump,load, plus "
                    "mix with --mix); without dump the shard files are written untimed while setting up")
          ->type_name("LIST");
  c->add_option("--engine", a->engines,
                "libaio, io_uring, or psync (--iodepth threads each doing pread/pwrite of one shard at a "
                "time); a comma list, or repeated, runs each in turn, each with its own files, into one "
                "document (default libaio)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("ENGINE[,ENGINE...]");
  c->add_option("--iodepth", a->iodepth, "I/Os in flight at most; psync: its threads (default 64)")->type_name("D");
  add_timeout_option(c, a->timeout);
  add_numa_options(c, a->numa, false);
  add_validate_option(c, a->validate, a->validate_each, global.command_line,
                      "verify the dumped files and every load against the data; `--validate each`: also "
                      "clear the files before every dump epoch and read them back after it, outside the "
                      "timing (slower: an extra write and read of every shard per epoch)");
  c->add_option("--files", a->files,
                "across ranks (mpirun/srun): per-rank (default: every rank its own files, named with its rank) "
                "or shared (one file set for the job: rank 0 creates it, each rank dumps its contiguous share "
                "of the shards, every rank loads all; one worker per rank)")
      ->type_name("per-rank|shared");
  c->add_flag("--create-workspace", a->create_workspace,
              "make a --workspace that does not exist (with its parents; removed again after the run, "
              "unless --keep)");
  c->add_flag("--keep", a->keep, "leave the shard files after a successful run");
  c->add_flag("--buffered", a->buffered,
              "allow page-cache I/O where the filesystem refuses O_DIRECT (Method gets +BUF)");
  add_model_options(c, a->model, ModelOptionsFor::kAio);
  add_output_options(c, a->out);
  add_sweep_options(c, a->sweep, {"shard size (--io-size)", "--io-number", "IO", "copy"});
  return {c, [a, &global] { return run_aio(*a, global); },
          [a] {
            parse_aio_request(*a);
            check_format(a->out.format);
          },
          {"dev-sandbox aio --workspace /data/kv --io-size 1M --io-number 512 --epoch-number 8",
           "dev-sandbox aio --workspace /data/kv --engine libaio,io_uring,psync --epoch-number 8",
           "dev-sandbox aio --workspace /data/kv --io-number 256 --sweep 64K:16M --plot aio.svg",
           "dev-sandbox aio --workspace /data/kv --model Qwen3-32B --input-len 32K --dry-run"}};
}

}  // namespace ds
