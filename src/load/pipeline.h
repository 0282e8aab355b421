// One card's load pipeline: block files read through an aio engine into K
// staging buffers, each block's copies submitted to the device as soon as its
// read completes, a staging buffer read into again only once the copies out of
// it are complete (an event per buffer, polled with Device::query). Also the
// copy-alone pass: the same copies out of the staging buffers, with no reads.
//
// Block b always lands in staging buffer b % K, so each block's copies are one
// fixed descriptor list, prepared with the backend at construction (one per block,
// as `copy` prepares one per IO task: copy_methods/initiator.h PreparedTasks); a pass
// only submits. The reads still go out as soon as any buffer is free: the next read
// is the lowest-numbered unread block whose buffer is free (each buffer a lane of
// blocks k, k+K, k+2K, ...), through aio's queue/commit/reap core (aio/io_loop.h).
#pragma once

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

struct PipelineConfig {
  Device* device = nullptr;
  IoEngine* engine = nullptr;
  const std::vector<Extent>* reads = nullptr;  // block b: one read of a whole file
  std::vector<char*> staging_host;             // K staging buffers: where reads land
  std::vector<char*> staging_src;              // the same, as copies read them (mapped on the direct path)
  // Every block's copies, block b's at [b * copies_per_block, ...): `dst` the device
  // address, `src` the offset into the block's staging buffer (b % K).
  std::vector<CopyDesc> copies;
  size_t copies_per_block = 1;
  bool direct_path = false;  // one direct task per block, else one copy per fragment
  // "block 5 (/ws/file)": how a failure names a block.
  std::function<std::string(size_t)> block_name;
};

struct PipelineTimes {
  int64_t wall_ns = 0;       // first submission to last completion
  int64_t submit_ns = 0;     // inside the submission calls (reads and copies)
  int64_t read_busy_ns = 0;  // with at least one read in flight
  int64_t copy_busy_ns = 0;  // with at least one copy in flight (ends when its poll sees it done)
  uint64_t short_reads = 0;  // completed by resubmitting the remainder
};

class Pipeline {
 public:
  // `streams` CE streams (blocks round-robin over them; the direct path too).
  Pipeline(PipelineConfig config, int streams);
  ~Pipeline();  // drains the engine and the streams
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Every block read and copied once, at most depth() reads in flight, block b
  // into staging buffer b % K once that is free. RunError naming the block and the
  // call on a failed or short read (that makes no progress) or copy submission.
  PipelineTimes run();
  // Every block's copies out of staging buffer b % K, all queued, then waited for.
  PipelineTimes copy_alone();

 private:
  class Reads;  // the pipelined pass as the transfer core's client

  void submit_copies(size_t block);
  void quiesce() noexcept;

  PipelineConfig c_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Event>> events_;  // one per staging buffer
  std::unique_ptr<PreparedTasks> tasks_;        // task b: block b's copies out of buffer b % K
  std::unique_ptr<TransferLoop> loop_;
  std::unique_ptr<Reads> reads_;
};

}  // namespace ds
