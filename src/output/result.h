// The one results model every command fills and every writer renders: the common
// fields below, each a column of output/result_schema.h (the one place that says
// how JSON, CSV, the text row and the cross-rank codec show it), and typed extras
// owned by the measurement that makes them (output/result_extra.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.h"
#include "output/result_extra.h"
#include "topology/placement.h"

namespace ds {

// One named part of what a result measured, with its statistics over the
// measured iterations: "Submit", "Copy" (or "IO"), "Wall", "StartSkew".
struct Stage {
  std::string name;
  Stats ns;
  // Each measured iteration's value (ns), in order: what the aggregate across
  // ranks combines per iteration (src/cluster). Not printed.
  std::vector<int64_t> samples;
};

// What one measurement found. Bandwidth comes from the bytes it declares it moved
// per iteration and the stage it measured them with, not from a formula of
// blocks (docs/measurement.md).
struct CaseResult {
  std::string name;    // case key, e.g. all_host_to_all_device_ce_multi_stream
  std::string brief;   // one-line description printed in the title
  std::string from, to, method;
  uint64_t block_bytes = 0;  // the table's Size(KB): one counted block
  uint64_t count = 0;        // the table's Count: blocks per iteration over all devices
  uint64_t bytes = 0;        // bytes moved per iteration over all devices
  int devices = 1;
  int streams = 0;
  std::string submit_mode;        // how blocks were spread over streams; empty: one stream
  bool stream_start_gate = false; // streams held until every copy was queued
  int frags = 0;
  std::string layout;        // a block layout's fragments ("128K,16K,32K"); empty for -s/-n/-f
  uint64_t copies = 0;       // copies (SDMA contexts on the direct path) per iteration over all devices
  int iterations = 0;
  int warmup = 0;
  std::vector<Stage> stages;        // nanoseconds, in the order measured
  std::string measured = "Copy";    // the stage bandwidth uses: "Copy", or the measurement's own ("IO", ...)
  // What timed the measured stage: device events (their name, "CUDA events", and the
  // resolution the runtime gives them), or, with an empty name, the host clock (sim's
  // copy threads, aio, load). Only the too-short note reads it (output/verdict.h).
  std::string timer;
  int64_t timer_resolution_ns = 0;
  std::optional<bool> validated;    // null when --validate was not asked
  std::string validate;             // with --validate: "end" (checked after the run) or "each" (every iteration)
  double setup_s = 0;               // allocation, registration, fork: not in the stats
  // Transfers redone over the measured and warm-up iterations: aio's and load's short
  // reads or writes completed by resubmitting the remainder (0 where none can be).
  uint64_t retries = 0;
  // What ran differently from what the case asks for, and why (e.g. a batch the
  // runtime refused, issued as single copies); each also said once on stderr.
  std::vector<std::string> notes;
  // --numa: where each worker ran and where its host buffers' pages were (JSON
  // "numa"); mode empty: not recorded.
  NumaReport numa;
  // With --model: what one iteration did to a request (the "KV <this> per request"
  // line: "load", "dump", "mixed epoch"), and whether it did it on every one of
  // `devices` cards at once (the line then counts them) or on one store.
  std::string kv_request = "load";
  bool kv_on_cards = true;
  // The path the bytes took: "host memory -> device" (a copy case, by its direction),
  // "disk -> host -> device" (load), "disk -> host memory" (aio's load). The --model
  // line says it in parentheses, so a copy's figure is not read as the whole load;
  // empty: not said.
  std::string path;
  // What the measurement adds beyond the common fields (a disk's counters, stages
  // measured alone, ...), each owned by the measurement's folder (output/result_extra.h).
  ResultExtras extras;

  // The named stage; all zero when there is none.
  const Stats& stage(const std::string& name) const;
  double bandwidth_gib_s() const;       // bytes / the measured stage's avg, 2^30 bytes/s
  double bandwidth_gb_s() const;        // the same, 10^9 bytes/s
  double wall_bandwidth_gib_s() const;  // bytes / Wall avg
  // The mean size of one copy (a chunk): bytes / copies per iteration; 0 with none.
  double mean_chunk_bytes() const;
};

// What the run was: the header of JSON output, and doctor-like context.
struct RunInfo {
  std::string tool_version;
  std::string backend;         // sim, cuda, ascend
  std::string backend_library; // path of the runtime library, empty for sim
  std::string runtime_version;
  std::vector<std::string> devices;
  std::vector<std::string> command_line;
  // With --model: the workload line printed before the first table (text) and the
  // JSON "workload" object, serialised; each result then also says what one
  // request's KV load took ("KV load per request").
  std::string workload_text;
  std::string workload_json;
};

// Across ranks (src/cluster): one node's share of the run, its ranks' results
// combined as the cluster's are.
struct NodeShare {
  std::string node;
  std::vector<int> ranks;
  std::vector<CaseResult> results;
};

// "ranks 0-2", "rank 3", "ranks 0,2,4".
std::string ranks_text(const std::vector<int>& ranks);

// Writers receive results as cases finish; text prints at once, others at finish().
class ResultWriter {
 public:
  virtual ~ResultWriter() = default;
  virtual void begin(const RunInfo& info) = 0;
  virtual void add(const CaseResult& result) = 0;
  virtual void validation(const std::string& case_name, bool pass) = 0;
  // The run failed: record it so the document still says what happened.
  virtual void fail(const std::string& case_name, const std::string& error) = 0;
  // Across ranks, after the aggregate result(s) they belong to: every node's share
  // (`labels`: what each of a node's results is called on its line, e.g. "dump",
  // "load"; "" for none). Default: nothing (CSV).
  virtual void nodes(const std::vector<NodeShare>& /*nodes*/, const std::vector<std::string>& /*labels*/) {}
  virtual void finish() = 0;
};

}  // namespace ds
