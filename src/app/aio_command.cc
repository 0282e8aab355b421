// `aio`: disk dump/load bandwidth of the POSIX-store step; this file reads the
// options, src/aio/aio_measure does the measurement.
#include <iostream>
#include <memory>

#include "aio/aio_measure.h"
#include "app/command.h"
#include "app/copy_params.h"
#include "app/output_options.h"
#include "backend/select.h"
#include "core/error.h"
#include "core/units.h"

namespace ds {

namespace {

struct AioArgs {
  std::string workspace, io_type = "mmap", io_size = "1048576", io_number = "512",
                         device_id = "0", epochs = "32", engine = "libaio", iodepth = "64";
  bool validate = false, keep = false, buffered = false;
  bool validate_each = false;
  OutputOptions out;
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
  if (p.io_size % kAioAlign != 0)
    throw UsageError("option --io-size got '" + a.io_size +
                     "': must be a multiple of 4096 bytes (O_DIRECT alignment)");
  if (p.io_size > kAioMaxIoSize)
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
  if (depth > kAioMaxDepth)
    throw UsageError("option --iodepth got '" + a.iodepth + "': must be at most " +
                     std::to_string(kAioMaxDepth));
  p.iodepth = static_cast<unsigned>(depth);
  p.validate = a.validate;
  p.validate_each = a.validate && a.validate_each;
  p.keep = a.keep;
  p.buffered = a.buffered;
  p.total = checked_mul(p.io_size, p.io_number, "option --io-size x --io-number");
  p.buffers = std::min<uint64_t>(p.iodepth, p.io_number);
  return p;
}

int run_aio(const AioArgs& args, const GlobalOptions& g) {
  const AioParams p = parse_aio(args);
  auto writer = make_writer(args.out, std::cout);
  write_or_record_failure(*writer, g.command_line, [&](bool& begun, std::string& current) {
    const SelectedBackend selected = select_backend(g.backend);
    measure_aio(p, selected, *writer,
                [&] {
                  writer->begin(run_info(selected, g.command_line));
                  begun = true;
                },
                current);
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
  add_validate_option(c, a->validate, a->validate_each, global.command_line,
                      "verify the dumped files and every load against the data; `--validate each`: also "
                      "clear the files before every dump epoch and read them back after it, outside the "
                      "timing (slower: an extra write and read of every shard per epoch)");
  c->add_flag("--keep", a->keep, "leave the shard files after a successful run");
  c->add_flag("--buffered", a->buffered,
              "allow page-cache I/O where the filesystem refuses O_DIRECT (Method gets +BUF)");
  add_output_options(c, a->out);
  return {c, [a, &global] { return run_aio(*a, global); },
          [a] {
            parse_aio(*a);
            check_format(a->out.format);
          }};
}

}  // namespace ds
