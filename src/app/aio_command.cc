// `aio` (SPEC §2.5): disk dump/load bandwidth of the POSIX-store step. Shard
// files in --workspace are written (dump epochs) and read back (load epochs)
// with O_DIRECT through libaio or io_uring; one sample per epoch.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "aio/io_engine.h"
#include "aio/io_loop.h"
#include "aio/shard_files.h"
#include "app/command.h"
#include "app/output_options.h"
#include "app/run_cases.h"
#include "backend/select.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/stats.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "output/progress.h"

namespace ds {

namespace {

constexpr uint64_t kAlign = 4096;          // O_DIRECT: buffer, offset and length
constexpr uint64_t kMaxIoSize = 1ULL << 30;  // the kernel moves < 2 GiB per request
constexpr uint64_t kMaxDepth = 4096;

struct AioArgs {
  std::string workspace, io_type = "mmap", io_size = "1048576", io_number = "512",
                         device_id = "0", epochs = "32", engine = "libaio", iodepth = "64";
  bool validate = false, keep = false, buffered = false;
  OutputOptions out;
};

struct AioParams {
  std::string workspace;
  bool alloc = false;  // --io-type alloc
  uint64_t io_size = 0;
  uint64_t io_number = 0;
  int device_id = 0;
  int epochs = 0;
  AioEngineKind engine = AioEngineKind::kLibaio;
  unsigned iodepth = 0;
  bool validate = false, keep = false, buffered = false;
  uint64_t total = 0;    // io_size x io_number: the bytes of one epoch
  uint64_t buffers = 0;  // host buffers, reused as fio does: min(iodepth, io_number)
};

AioParams parse_aio(const AioArgs& a) {
  AioParams p;
  p.workspace = a.workspace;
  if (p.workspace.empty()) throw UsageError("option --workspace got '': expects a directory");
  if (a.io_type == "mmap" || a.io_type == "alloc")
    p.alloc = a.io_type == "alloc";
  else
    throw UsageError("option --io-type got '" + a.io_type + "': accepts mmap|alloc");
  if (a.engine == "libaio")
    p.engine = AioEngineKind::kLibaio;
  else if (a.engine == "io_uring")
    p.engine = AioEngineKind::kUring;
  else
    throw UsageError("option --engine got '" + a.engine + "': accepts libaio|io_uring");
  p.io_size = parse_size("--io-size", a.io_size);
  if (p.io_size % kAlign != 0)
    throw UsageError("option --io-size got '" + a.io_size +
                     "': must be a multiple of 4096 bytes (O_DIRECT alignment)");
  if (p.io_size > kMaxIoSize)
    throw UsageError("option --io-size got '" + a.io_size + "': must be at most 1G");
  p.io_number = parse_count("--io-number", a.io_number, 1);
  const uint64_t device = parse_count("--device-id", a.device_id, 0);
  if (device > 65535)
    throw UsageError("option --device-id got '" + a.device_id + "': must be at most 65535");
  p.device_id = static_cast<int>(device);
  const uint64_t epochs = parse_count("--epoch-number", a.epochs, 1);
  if (epochs > 1000000)
    throw UsageError("option --epoch-number got '" + a.epochs + "': must be at most 1000000");
  p.epochs = static_cast<int>(epochs);
  const uint64_t depth = parse_count("--iodepth", a.iodepth, 1);
  if (depth > kMaxDepth)
    throw UsageError("option --iodepth got '" + a.iodepth + "': must be at most " +
                     std::to_string(kMaxDepth));
  p.iodepth = static_cast<unsigned>(depth);
  p.validate = a.validate;
  p.keep = a.keep;
  p.buffered = a.buffered;
  p.total = checked_mul(p.io_size, p.io_number, "option --io-size x --io-number");
  p.buffers = std::min<uint64_t>(p.iodepth, p.io_number);
  return p;
}

// SPEC §6: refuse up front rather than be OOM-killed half way.
void check_memory(const AioParams& p, const Backend& backend) {
  const std::string lower = "; lower --io-size or --iodepth";
  const uint64_t ring = p.buffers * p.io_size;
  const uint64_t verify = p.validate ? p.io_size : 0;  // read-back scratch buffer
  const uint64_t need = ring + verify;
  const uint64_t avail = mem_available_bytes();
  const uint64_t margin = 256ULL << 20;
  if (need + margin > avail)
    throw RunError("not enough memory for aio: it needs " + format_bytes(need) +
                   " of host buffers (--io-size " + format_bytes(p.io_size) + " x " +
                   std::to_string(p.buffers) + " buffers, one per I/O in flight) but MemAvailable is " +
                   format_bytes(avail) + lower);
  const uint64_t limit = memlock_limit_bytes();
  // Only memory our own code mlock()s counts; a vendor driver pins in its kernel module.
  if (p.alloc && backend.mlocks(HostLock::kPinnedAlloc) && ring > limit)
    throw RunError("memory locking refused for aio --io-type alloc: it locks " + format_bytes(ring) +
                   " but RLIMIT_MEMLOCK is " + format_bytes(limit) +
                   "; raise it with `ulimit -l unlimited`" + lower);
}

CaseResult make_result(const std::string& name, const std::string& brief, const std::string& from,
                       const std::string& to, const std::string& method, const AioParams& p,
                       std::vector<int64_t> wall, std::vector<int64_t> submit, double setup_s) {
  CaseResult r;
  r.name = name;
  r.brief = brief;
  r.from = from;
  r.to = to;
  r.method = method;
  r.block_bytes = p.io_size;
  r.count = p.io_number;
  r.devices = 1;
  r.iterations = p.epochs;
  r.time_label = "IO";
  r.copy = compute_stats(wall);
  r.wall = r.copy;  // one epoch's I/O is the whole end-to-end step
  r.submit = compute_stats(std::move(submit));
  if (p.validate) r.validated = true;
  r.setup_s = setup_s;
  return r;
}

std::string shard_bytes_text(const AioParams& p, uint64_t shards) {
  return format_bytes(p.io_size * shards) + " of " + format_bytes(p.total);
}

// The loop's IoFailure, told with the file, the filesystem and what to do.
RunError describe(const IoFailure& f, const char* phase, int epoch, const AioParams& p,
                  const ShardFiles& files, const FilesystemInfo& fs, bool direct) {
  const std::string where = std::string(phase) + " epoch " + std::to_string(epoch) + " of " +
                            std::to_string(p.epochs);
  const std::string in = files.dir() + " (" + fs.type + ")";
  if (f.err == ENOSPC || f.err == EDQUOT)
    return RunError(where + " ran out of space in " + in + " after " +
                    std::to_string(f.shards_done) + " of " + std::to_string(p.io_number) +
                    " shards (" + shard_bytes_text(p, f.shards_done) + "): " + f.what() +
                    "; the shard files were removed; free space or lower --io-number or --io-size");
  std::string msg = where + ": " + f.what() + " (" + files.path(f.shard) + " on " + fs.type + ")";
  if (f.err == EINVAL && direct)
    msg += "; the filesystem may refuse O_DIRECT here: --buffered allows page-cache I/O";
  return RunError(msg);
}

// Reads every shard back with plain pread (outside any timing) and compares it
// with the pattern the dump wrote.
void verify_files(const ShardFiles& files, const AioParams& p) {
  auto scratch = map_anonymous(static_cast<size_t>(p.io_size), true);
  char* buf = static_cast<char*>(scratch->host_ptr());
  for (size_t i = 0; i < files.size(); ++i) {
    check_interrupted();
    std::memset(buf, 0, static_cast<size_t>(p.io_size));
    uint64_t got = 0;
    while (got < p.io_size) {
      const ssize_t r = pread(files.fd(i), buf + got, static_cast<size_t>(p.io_size - got),
                              static_cast<off_t>(got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw sys_error("pread(" + files.path(i) + ")", errno);
      if (r == 0)
        throw RunError("validation failed for aio_dump: shard " + std::to_string(i) + " (" +
                       files.path(i) + ") ends at offset " + std::to_string(got) + " of " +
                       std::to_string(p.io_size));
      got += static_cast<uint64_t>(r);
    }
    const int64_t off = pattern_check(buf, static_cast<size_t>(p.io_size),
                                      pattern_key(p.device_id, i));
    if (off >= 0)
      throw RunError("validation failed for aio_dump: shard " + std::to_string(i) + " (" +
                     files.path(i) + ") differs from what was dumped at offset " +
                     std::to_string(off));
  }
}

// After the command line was read: everything up to the two result blocks.
// `begun` once the writer has the run's header; `current` names the block
// being measured, for the failure record.
void measure_aio(const AioParams& p, const GlobalOptions& g, ResultWriter& writer, bool& begun,
                 std::string& current) {
  SelectedBackend selected = select_backend(g.backend);
  Backend& backend = *selected.backend;
  if (p.alloc && p.device_id >= selected.probe.device_count)
    throw UsageError("option --device-id got " + std::to_string(p.device_id) + " but the " +
                     backend.name() + " backend sees " + std::to_string(selected.probe.device_count) +
                     " device" + (selected.probe.device_count == 1 ? "" : "s"));
  check_memory(p, backend);

  const int64_t setup_start = now_ns();
  Workspace workspace(p.workspace);
  const FilesystemInfo fs = filesystem_of(workspace.path());
  std::string refusal;
  if (fs.memory_backed)
    refusal = "the workspace " + workspace.path() + " is on " + fs.type +
              ", which keeps files in memory and does not do O_DIRECT (newer kernels accept the "
              "flag there but still use the page cache)";
  else if (probe_direct_io(workspace.path()) == EINVAL)
    refusal = "the workspace " + workspace.path() + " is on " + fs.type +
              ", which refuses O_DIRECT (open or write with O_DIRECT: Invalid argument)";
  const bool direct = refusal.empty();
  if (!direct && !p.buffered)
    throw RunError(refusal + "; pass --buffered to measure buffered (page-cache) I/O there, or "
                             "choose a workspace on a disk filesystem");
  if (!direct)
    std::cerr << "dev-sandbox: note: " << refusal
              << "; measuring buffered (page-cache) I/O as --buffered allows\n";
  else if (p.buffered)
    std::cerr << "dev-sandbox: note: " << fs.type << " at " << workspace.path()
              << " does O_DIRECT, so --buffered changes nothing: the I/O is O_DIRECT\n";

  ShardFiles files(workspace.path());
  std::unique_ptr<Device> device;  // before the memory it allocates
  std::unique_ptr<Memory> memory;
  if (p.alloc) {
    backend.init_process();
    device = backend.open_device(p.device_id);
    memory = device->alloc_pinned(static_cast<size_t>(p.buffers * p.io_size), false);
  } else {
    memory = map_anonymous(static_cast<size_t>(p.buffers * p.io_size), true);
  }
  char* base = static_cast<char*>(memory->host_ptr());
  if (!base || reinterpret_cast<uintptr_t>(base) % kAlign != 0)
    throw RunError("the " + std::string(p.alloc ? "pinned" : "mmap") +
                   " host buffer is not 4096-byte aligned, which O_DIRECT needs");
  // Declared after the memory, so it is drained and closed before the buffers go.
  std::unique_ptr<IoEngine> engine = make_io_engine(p.engine, p.iodepth);
  BufferRing ring;
  for (uint64_t b = 0; b < p.buffers; ++b) {
    // Real data, never zeros: a compressing or deduplicating store must not
    // flatter the numbers. (--validate refills per shard.)
    char* buf = base + b * p.io_size;
    pattern_fill(buf, static_cast<size_t>(p.io_size), pattern_key(p.device_id, p.io_number + b));
    ring.buffers.push_back(buf);
  }
  std::vector<ShardIo> shards(p.io_number, ShardIo{-1, static_cast<size_t>(p.io_size)});
  for (uint64_t i = 0; i < p.io_number; ++i) {
    check_interrupted();
    const int err = files.add(p.io_size, direct);
    if (err != 0)
      throw RunError("dump ran out of space in " + workspace.path() + " (" + fs.type +
                     ") while reserving the shard files: " + std::to_string(i) + " of " +
                     std::to_string(p.io_number) + " shards (" + shard_bytes_text(p, i) +
                     ") fit: " + std::strerror(err) +
                     "; the shard files were removed; free space or lower --io-number or --io-size");
    shards[i].fd = files.fd(i);
  }
  const double setup_s = static_cast<double>(now_ns() - setup_start) * 1e-9;

  const std::string method = std::string(engine->method()) + (direct ? "" : "+BUF");
  const std::string host = backend.label_prefix() + "::" + (p.alloc ? "host" : "mmap") +
                           "::" + std::to_string(p.device_id);
  const std::string file = "file::" + fs.type;
  const std::string how = " with " + std::string(engine_option_name(p.engine)) + ", " +
                          (direct ? "O_DIRECT" : "buffered") + ", iodepth " +
                          std::to_string(p.iodepth) +
                          (p.buffers < static_cast<uint64_t>(p.iodepth)
                               ? " (" + std::to_string(p.buffers) + " in flight at most: one per shard)"
                               : "");
  const std::string shards_text =
      std::to_string(p.io_number) + " shards of " + format_bytes(p.io_size);
  const std::string memory_text =
      std::to_string(p.buffers) + " reused " +
      (p.alloc ? "pinned buffers of device " + std::to_string(p.device_id) : "mmap buffers");
  const std::string files_text = "files in " + workspace.path() + " (" + fs.type + ")";

  // --validate: every shard written with its own pattern, every load checked
  // as it completes; the fill and the check run inside the epochs (as fio's
  // verify does), so a validated run checks correctness rather than peak speed.
  int epoch = 0;
  PassHooks dump_hooks, load_hooks;
  if (p.validate) {
    const size_t bytes = static_cast<size_t>(p.io_size);
    const int dev = p.device_id;
    dump_hooks.prepare = [bytes, dev](size_t shard, void* buf) {
      pattern_fill(buf, bytes, pattern_key(dev, shard));
    };
    load_hooks.prepare = [bytes](size_t, void* buf) { std::memset(buf, 0, bytes); };
    load_hooks.complete = [bytes, dev, &files, &epoch](size_t shard, void* buf) {
      const int64_t off = pattern_check(buf, bytes, pattern_key(dev, shard));
      if (off >= 0)
        throw RunError("validation failed for aio_load epoch " + std::to_string(epoch) +
                       ": shard " + std::to_string(shard) + " (" + files.path(shard) +
                       ") loaded bytes differ from what was dumped at offset " +
                       std::to_string(off));
    };
  }

  writer.begin(run_info(selected, g.command_line));
  begun = true;

  // The epochs of one direction: one sample per epoch (the wall time to move
  // every shard) and the time spent in submission calls.
  uint64_t short_transfers = 0;
  std::vector<int64_t> wall, submit;
  auto run_epochs = [&](const char* name, IoOp op, const char* what, const PassHooks& hooks) {
    current = name;
    wall.clear();
    submit.clear();
    ProgressScope progress(name, p.io_size, 0, p.epochs);
    for (int e = 1; e <= p.epochs; ++e) {
      check_interrupted();
      epoch = e;
      PassResult r;
      try {
        r = run_pass(*engine, op, shards, ring, hooks);
      } catch (const IoFailure& f) {
        throw describe(f, what, e, p, files, fs, direct);
      }
      wall.push_back(r.wall_ns);
      submit.push_back(r.submit_ns);
      short_transfers += r.short_transfers;
      progress_iteration(e);
    }
  };

  run_epochs("aio_dump", IoOp::kWrite, "dump", dump_hooks);
  if (p.validate) verify_files(files, p);
  writer.add(make_result("aio_dump", "write " + shards_text + " from " + memory_text + " to " +
                                         files_text + how,
                         host, file, method, p, wall, submit, setup_s));
  if (p.validate) writer.validation("aio_dump", true);

  run_epochs("aio_load", IoOp::kRead, "load", load_hooks);
  writer.add(make_result("aio_load", "read " + shards_text + " from " + files_text + " into " +
                                         memory_text + how,
                         file, host, method, p, wall, submit, 0));
  if (p.validate) writer.validation("aio_load", true);
  writer.finish();
  if (short_transfers > 0)
    std::cerr << "dev-sandbox: note: " << short_transfers
              << " short transfers were completed by resubmitting the remainder\n";
  if (p.keep) {
    files.keep();
    workspace.keep();
    std::cerr << "dev-sandbox: kept " << files.size() << " shard files in " << workspace.path()
              << " (--keep)\n";
  }
}

int run_aio(const AioArgs& args, const GlobalOptions& g) {
  const AioParams p = parse_aio(args);
  auto writer = make_writer(args.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string& current) {
    measure_aio(p, g, *writer, begun, current);
  });
  return 0;
}

}  // namespace

Command add_aio_command(CLI::App& root, GlobalOptions& global) {
  auto a = std::make_shared<AioArgs>();
  CLI::App* c = root.add_subcommand("aio", "disk dump/load bandwidth with libaio or io_uring");
  c->add_option("--workspace", a->workspace, "directory for the shard files (created if missing)")
      ->required()
      ->type_name("DIR");
  c->add_option("--io-type", a->io_type,
                "host buffer: mmap (page-aligned mmap) or alloc (the backend's pinned memory) "
                "(default mmap)")
      ->type_name("mmap|alloc");
  c->add_option("--io-size", a->io_size, "one shard's bytes, K/M/G suffixes accepted (default 1048576)")
      ->type_name("BYTES");
  c->add_option("--io-number", a->io_number, "shards (default 512)")->type_name("N");
  c->add_option("--device-id", a->device_id, "device whose pinned memory --io-type alloc uses (default 0)")
      ->type_name("ID");
  c->add_option("--epoch-number", a->epochs, "dump epochs, then as many load epochs (default 32)")
      ->type_name("E");
  c->add_option("--engine", a->engine, "libaio or io_uring (default libaio)")
      ->type_name("libaio|io_uring");
  c->add_option("--iodepth", a->iodepth, "I/Os in flight at most (default 64)")->type_name("D");
  c->add_flag("--validate", a->validate, "verify the dumped files and every load against the data");
  c->add_flag("--keep", a->keep, "leave the shard files after a successful run");
  c->add_flag("--buffered", a->buffered,
              "allow page-cache I/O where the filesystem refuses O_DIRECT (Method gets +BUF)");
  add_output_options(c, a->out);
  return {c, [a, &global] { return run_aio(*a, global); }};
}

}  // namespace ds
