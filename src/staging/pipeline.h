// One card's staged pipeline, in either direction, with K host staging buffers:
//   load:    block files read through an aio engine into the staging buffers, each
//            block's copies (H2D) submitted as soon as its read completes, a buffer
//            read into again only once the copies out of it are complete;
//   offload: each block's copies (D2H) into a free staging buffer, the buffer
//            written to the block's file as soon as its copies are complete (polled
//            with an event per buffer), the buffer copied into again only once its
//            write is complete.
// Also the copy-alone pass: the same copies to or from the staging buffers, with no
// file I/O.
//
// Block b always goes through staging buffer b % K, so each block's copies are one
// fixed descriptor list, prepared with the backend at construction (one per block,
// as `copy` prepares one per IO task: copy_methods/initiator.h PreparedTasks); a pass
// only submits. The file I/O goes through aio's queue/commit/reap core
// (aio/io_loop.h): on load the next read is the lowest-numbered unread block whose
// buffer is free (each buffer a lane of blocks k, k+K, k+2K, ...); on offload the
// next write is the lowest-numbered block whose copies are complete.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aio/io_engine.h"
#include "aio/io_loop.h"
#include "backend/backend.h"
#include "copy_methods/initiator.h"

namespace ds {

// Which way a staged pipeline moves the bytes.
enum class StagedDir {
  kLoad,     // disk -> host staging -> device (reads, then H2D copies)
  kOffload,  // device -> host staging -> disk (D2H copies, then writes)
};

// One copy of a block: `bytes` between `device` (the card's address) and `offset`
// into the block's staging buffer.
struct StagedCopy {
  char* device;
  uint64_t offset;
  size_t bytes;
};

struct PipelineConfig {
  StagedDir dir = StagedDir::kLoad;
  Device* device = nullptr;
  IoEngine* engine = nullptr;
  const std::vector<Extent>* blocks = nullptr;  // block b: one read (load) or write (offload) of a whole file
  std::vector<char*> staging_host;             // K staging buffers, where the file I/O goes
  std::vector<char*> staging_dev;              // the same, as copies see them (mapped on the direct path)
  // Every block's copies, block b's at [b * copies_per_block, ...).
  std::vector<StagedCopy> copies;
  size_t copies_per_block = 1;
  bool direct_path = false;  // one direct task per block, else one copy per fragment
  bool nap = true;           // its transfer loop naps between fruitless looks (look_nap_rule)
  // "block 5 (/ws/file)": how a failure names a block.
  std::function<std::string(size_t)> block_name;
  // Two pipelines timed together (load with offloads, staging/mix_measure.h): the
  // instant the first of their passes ended, INT64_MAX until then (the caller sets
  // it so before each pass). run() sets it to its end when it ends first; the busy
  // clocks also keep their time busy up to it. Null: one pipeline alone.
  std::atomic<int64_t>* first_end = nullptr;
};

struct PipelineTimes {
  int64_t wall_ns = 0;     // first submission to last completion
  int64_t submit_ns = 0;   // inside the submission calls (file I/O and copies)
  int64_t io_busy_ns = 0;  // with at least one read (load) or write (offload) in flight
  // With at least one copy in flight: from its submission until a look finds it
  // complete (the loop looks at least every nap while a copy is in flight, aio/io_loop.h).
  int64_t copy_busy_ns = 0;
  uint64_t short_transfers = 0;  // completed by resubmitting the remainder
  int64_t start_ns = 0, end_ns = 0;  // the pass's first submission and last completion (monotonic)
  // With a first_end: the busy times up to it (to within one look), and whether this
  // pass ended first (then they are the whole pass's).
  int64_t io_busy_first_ns = 0, copy_busy_first_ns = 0;
  bool ended_first = false;
};

class Pipeline {
 public:
  // `streams` CE streams (blocks round-robin over them; the direct path too).
  Pipeline(PipelineConfig config, int streams);
  ~Pipeline();  // drains the engine and the streams
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  StagedDir dir() const { return c_.dir; }
  // Every block moved once through staging buffer b % K, at most depth() reads or
  // writes in flight. RunError naming the block and the call on a failed or short
  // transfer (that makes no progress) or a failed copy.
  PipelineTimes run();
  // Every block's copies to or from staging buffer b % K, all queued, then waited for.
  PipelineTimes copy_alone();

 private:
  class Pass;    // the pipelined pass as the transfer core's client: what both directions keep
  class Reads;   // load's
  class Writes;  // offload's

  void submit_copies(size_t block);
  bool copies_complete(size_t block);
  void quiesce() noexcept;

  PipelineConfig c_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Stream*> stream_list_;  // the same, for Device::ready_streams
  std::vector<std::unique_ptr<Event>> events_;  // one per staging buffer
  std::unique_ptr<PreparedTasks> tasks_;        // task b: block b's copies to or from buffer b % K
  std::unique_ptr<TransferLoop> loop_;
  std::unique_ptr<Pass> pass_;
};

}  // namespace ds
