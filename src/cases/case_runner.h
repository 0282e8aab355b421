// Runs one copy case through the timed loop: its pre-flight, the shared source,
// each worker's buffers, plan and initiator, and the result (docs/measurement.md).
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "backends/select.h"
#include "cases/case_spec.h"
#include "copy_methods/initiator.h"
#include "layout/block_table.h"
#include "layout/layout.h"
#include "output/result.h"
#include "runner/preflight.h"
#include "topology/placement.h"

namespace ds {

// Upper bounds of the count options (exit 2 above them).
constexpr int kMaxIterations = 100000000;
constexpr int kMaxDevices = 4096;
constexpr int kMaxFrags = 65536;
constexpr int kMaxStreams = 1024;

class Cluster;
class Notes;

struct CopyParams {
  Layout layout = Layout::uniform(512ULL << 20, 8, 0);  // -s, -n, -f
  int iterations = 128;                                 // -i
  int devices = 8;                                      // -d
  std::string devices_option = "-d";  // what set `devices`, for a refusal: "-d", or "-d (from --tp)"
  int streams = 4;                                      // --streams, -S
  SubmitMode submit_mode = SubmitMode::kStreamMajor;    // --submit-mode
  bool gate = false;                                    // --stream-start-gate on
  int timeout_s = 60;                                   // --timeout (0: never)
  // Across ranks (src/cluster): iterations start on every rank together. Null or
  // one rank: as alone.
  Cluster* cluster = nullptr;
  int warmup = 2;                                       // --warmup
  bool validate = false;                                // --validate
  bool validate_each = false;  // --validate each: clear before, check after every iteration (untimed)
  NumaRequest numa_request;  // --numa, --numa-map, --shm-numa-nodes as typed
  // The same as planned for the selected backend (by the harness: src/measurement); a
  // plan without topology (the default) records nothing and places nothing.
  NumaPlan numa;
  // --duplex-ratio: the duplex cases' D2H bytes per H2D byte.
  double duplex_ratio = 1.0;
  // --block-table / --host-block-table (and their --pool-blocks): where each logical
  // block (tasks_per_block tasks of the layout) lies on the device side and on the
  // host side; no slots: that side contiguous per block. Every card the same table.
  BlockTable device_table, host_table;
  uint64_t tasks_per_block = 1;  // a logical block's tasks: 1, or --model ucm's layers

  // `l` (the layout, or the duplex cases' D2H layout) on each side: device memory
  // paged by device_table, host memory by host_table.
  CopyPlacement placement(const Layout& l) const {
    return {placed_by(l, host_table, tasks_per_block), placed_by(l, device_table, tasks_per_block)};
  }
  CopyPlacement placement() const { return placement(layout); }
  // --compare-contiguous (with a table): every iteration also a pass with the same
  // blocks at slots 0, 1, ... of the same pools (contiguous_placement), timed apart.
  bool compare_contiguous = false;
  CopyPlacement contiguous_placement(const Layout& l) const {
    return {placed_by(l, sequential_in_pool(host_table), tasks_per_block),
            placed_by(l, sequential_in_pool(device_table), tasks_per_block)};
  }
  CopyPlacement contiguous_placement() const { return contiguous_placement(layout); }
  bool paged() const { return !device_table.slots.empty() || !host_table.slots.empty(); }
  // Loop iterations per measured iteration: 2 with --compare-contiguous, else 1.
  int passes() const { return compare_contiguous ? 2 : 1; }
  // With --compare-contiguous, whether loop iteration `index` (warm-up included) is
  // the contiguous pass: the two passes alternate their order from one iteration to
  // the next (ABBA, so that neither is always the one that finds the other's data in
  // the caches), the last iteration ending with the paged pass (what --validate checks).
  bool contiguous_pass(int index) const {
    if (!compare_contiguous) return false;
    const int iteration = index / 2, last = warmup + iterations - 1;
    const bool contiguous_first = (last - iteration) % 2 == 0;
    return (index % 2 == 0) == contiguous_first;
  }
};

// Devices a case runs on: 1 for single-card cases, else -d.
int participating_devices(const CaseSpec& spec, const CopyParams& p);

MemoryNeeds memory_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend);
// Throws RunError with the numbers and what to lower when the run would not fit.
void check_host_memory(const CaseSpec& spec, const CopyParams& p, const Backend& backend);

// Runs one case on the harness (src/measurement): its result, and the validation
// verdict, to `writer` (not finished); what it has to say to `notes`. Throws
// RunError on failure (validation mismatch included). previous_plan: in a run of
// several cases, the plan the case before announced (see HarnessContext).
void run_case(const CaseSpec& spec, const CopyParams& params, const SelectedBackend& selected, ResultWriter& writer,
              Notes& notes, std::string* previous_plan = nullptr);

}  // namespace ds
