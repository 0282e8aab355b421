// One card's side of a staged measurement in one direction: its KV region on the
// device, K host staging buffers, an aio engine over its block files, the pipeline
// (staging/pipeline.h) and the disk-alone pass (the same reads or writes through
// the same buffers, no copies). Made in the card's worker, untimed; the passes are
// what a worker's iterations run. `load` has one per card, `offload` one, and a
// load with offloads beside it (--offload-ratio) one of each on the same device.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aio/io_loop.h"
#include "backend/backend.h"
#include "backends/select.h"
#include "memory/buffer.h"
#include "runner/preflight.h"
#include "staging/block_files.h"
#include "staging/pipeline.h"
#include "topology/placement.h"

namespace ds {

struct StagedSideConfig {
  StagedDir dir = StagedDir::kLoad;
  const StagedParams* p = nullptr;
  const CardFiles* files = nullptr;
  bool direct_io = true;         // the files' descriptors are O_DIRECT
  const char* what = "staging";  // names its buffers in the placement record and notes (a literal)
  // The blocks of `files` this side moves: first_block, first_block + block_step, ...
  // (all by default). An offload of one latent held by every card (--shared, MLA/DSA)
  // gives card c of d the share c, c+d, c+2d, ...: each block written once.
  size_t first_block = 0;
  size_t block_step = 1;
  // Two sides timed together (load with offloads): the pipeline's first_end
  // (staging/pipeline.h PipelineConfig), null alone.
  std::atomic<int64_t>* first_end = nullptr;
  // The pipelines each card runs at once (2: load --offload-ratio's load and offload),
  // for the transfer loop's nap rule (look_nap_threads).
  int pipelines_per_card = 1;
};

// The threads that must run at once while every card's pipelines run, for
// look_nap_rule: per pipeline its transfer loop, the host threads of its copies where
// the copies are host work (one per stream), and psync's I/O threads (one per request
// in flight); libaio and io_uring complete in the kernel.
int look_nap_threads(const StagedParams& p, int pipelines_per_card, bool copies_on_host_cpus);

class StagedSide {
 public:
  // Allocates the region (refused up front when the card's free memory cannot hold
  // it), the staging buffers (first touched here, on the worker's CPUs), the engine,
  // and prepares every block's copies. Offload: the region holds the pattern of
  // (owner, fragment), written now. `record` gets the staging buffers' placement.
  StagedSide(Device& dev, Backend& backend, const StagedSideConfig& config, WorkerPlacement& record);
  ~StagedSide();
  StagedSide(const StagedSide&) = delete;
  StagedSide& operator=(const StagedSide&) = delete;

  PipelineTimes pipelined() { return pipeline_->run(); }
  PipelineTimes copy_alone() { return pipeline_->copy_alone(); }
  // --compare-contiguous: the pipelined pass with the same blocks at sequential slots
  // of the same pool (its own pipeline, prepared with the other); load's leaves the
  // region's slots 0.. holding it, so a --validate poison() comes after it.
  PipelineTimes contiguous() { return contiguous_->run(); }
  // The block files' reads (load) or writes (offload) alone, through the staging
  // buffers; RunError "disk alone, block N (path): ..." on a failure.
  PipelineTimes disk_alone();

  // --validate, untimed. poison(): before a pipelined pass, what it must overwrite
  // is made wrong (load: the region; offload: the block files; with
  // --compare-contiguous offload's region is filled again at the pass's places).
  // check(when): after it, every fragment compared with the pattern (load: on the
  // card; offload: in its file, read back), RunError naming the block, file, fragment
  // and offset. `contiguous`: around the contiguous pass (load: its sequential slots).
  void poison(bool contiguous = false);
  void check(const std::string& when, bool contiguous = false);

  void finish();  // the pipeline and the disk-alone pass gone (drained)
  // What the worker has to say, a line each: the staging buffers' note, the
  // transfer loop's nap where it delays a card's copies, the device's notes (how its
  // copies run: read when it is set up and again by finish(), for what the device
  // learned during the passes), and a read-back that had to go buffered (read_back below).
  const std::string& note() const { return notes_; }
  Memory& region() { return *region_; }

 private:
  void fill_region(const Layout& at);
  // A pipeline over these staging buffers and engine, block j's copies at `at`'s places.
  std::unique_ptr<Pipeline> make_pipeline(const Layout& at, bool nap);
  void check_region(const std::string& when, const Layout& at);
  void check_files(const std::string& when);
  [[noreturn]] void mismatch(const std::string& when, uint64_t fragment, uint64_t offset, const char* where);
  void add_note(const std::string& line) { notes_ += (notes_.empty() ? "" : "\n") + line; }

  Device& dev_;
  StagedSideConfig c_;
  const StagedParams& p_;
  const CardFiles& files_;
  const Layout kv_;  // the card's side: where each fragment lies in the region (paged with --block-table)
  std::vector<size_t> blocks_;   // this side's blocks (indexes into files_), in order
  std::vector<Extent> extents_;  // their extents: the pipeline's block j is blocks_[j]
  std::unique_ptr<Memory> region_;
  IoBuffer staging_;
  char* host_ = nullptr;  // the staging buffers, back to back
  std::string notes_;
  std::unique_ptr<Memory> scratch_;  // one fragment, for the untimed fill and checks
  std::unique_ptr<IoEngine> engine_;
  BufferRing ring_;
  std::unique_ptr<TransferPass> disk_alone_;  // after the engine it uses
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Pipeline> contiguous_;  // --compare-contiguous
};

// What a staged measurement needs in memory and on disk: every card's staging
// buffers, a fragment's scratch per card, the block files' writer, the regions
// (where device memory is host memory), the files (one set per card, or one).
MemoryNeeds staged_needs(const StagedParams& p, const Backend& backend);

// What every staged run checks before it sets up: -d against the cards there are,
// and --sdma true against the backend's direct path (and, when the run `offloads`,
// whether that path copies device to host; `d2h_hint` ends that refusal).
void check_staged_request(const StagedParams& p, const SelectedBackend& selected, bool offloads,
                          const std::string& d2h_hint);

// --validate's read-back of a block file: `n` bytes from offset 0 of `fd` into
// `buf` (both aligned to kDirectAlign), continued after a short read at an aligned
// offset where `fd` is O_DIRECT; `note` set where the rest had to be read buffered.
void read_back(int fd, const std::string& path, char* buf, size_t n, std::string& note);

}  // namespace ds
