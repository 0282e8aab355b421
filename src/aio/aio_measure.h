// The measurement of `aio`: the POSIX-store step of a KV cache. Shard files in
// workspaces are written (dump epochs), read back (load epochs), or both in one
// mixed epoch (one dump sweep then --mix load sweeps), with O_DIRECT through
// libaio, io_uring or psync; each phase runs through the timed loop with one
// worker in a child process (so this process never initialises a runtime for
// --io-type alloc), or --workers forked ones, one sample per epoch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aio/io_engine.h"
#include "backends/select.h"
#include "core/notes.h"
#include "output/result.h"
#include "topology/placement.h"

namespace ds {

class Cluster;


struct AioParams {
  std::vector<std::string> workspaces;  // --workspace, repeatable: files spread round-robin by file
  bool alloc = false;  // --io-type alloc: the backend's pinned memory
  uint64_t io_size = 0;
  uint64_t io_number = 0;        // files (UCM: blocks); each holds shards_per_file shards
  uint64_t shards_per_file = 1;  // --shards-per-file K: shard s of a file at offset s x io_size
  int device_id = 0;
  bool device_given = false;  // --device-id was given: every worker pins there
  int workers = 1;            // --workers: forked worker processes, each with its own files and buffers
  int epochs = 0;
  AioEngineKind engine = AioEngineKind::kLibaio;
  unsigned iodepth = 0;
  bool validate = false, keep = false, buffered = false;
  bool validate_each = false;  // --validate each: also every dump epoch, cleared before and read back after
  int timeout_s = 60;          // --timeout: the watchdog (0: never)
  // --phases: which run, always in this order; without dump the shard files are
  // written (untimed, with the validation pattern) while setting up, so every load
  // reads data. A mixed epoch (--mix R) is one dump sweep then R load sweeps of the
  // same shards, timed together as one sample.
  bool phase_dump = true, phase_load = true, phase_mix = false;
  int mix = 0;                 // --mix R: load sweeps per mixed epoch (>= 1 with phase_mix)
  NumaRequest numa_request;    // --numa, --numa-map: worker w placed on its device's node
  uint64_t total = 0;    // io_size x shards(): the bytes of one epoch
  uint64_t buffers = 0;  // host buffers, reused as fio does: min(iodepth, shards())
  // Across ranks (src/cluster): every epoch starts on every rank together, and the
  // shard files carry the rank ("r<rank>") so ranks sharing a directory never
  // collide. Null or one rank: as alone.
  Cluster* cluster = nullptr;
  // --files shared: one file set for the whole job (docs/cluster.md):
  // rank 0 creates it (and, without a dump phase, writes it), every rank dumps its
  // contiguous share of the shards (rank r of N: shards [S r / N, S (r + 1) / N))
  // and loads all of them; a mixed epoch dumps the share then loads all R times.
  // One worker per rank. Alone: one rank, its share is every shard.
  bool shared_files = false;
  // I/Os of io_size per epoch: io_number files x shards_per_file.
  uint64_t shards() const { return io_number * shards_per_file; }
};

// Checks the device id and the memory up front, sets up the workspace and its shard
// files, calls `begin()` (the writer gets the run's header), then measures the dump,
// the load and the mixed epochs (those --phases names) and hands each result to
// `writer` (and the validation verdicts with --validate), on the harness
// (src/measurement). `current` names the block being measured, for a failure
// record; what the run says goes to `notes`.
// Shard files and a created workspace are removed at the end, on failure and on
// Ctrl-C, unless --keep (after a successful run).
void measure_aio(const AioParams& p, const SelectedBackend& selected, ResultWriter& writer,
                 const std::function<void()>& begin, std::string& current, Notes& notes);

}  // namespace ds
