#include "cases/run_cases.h"

#include "core/error.h"
#include "core/units.h"
#include "runner/numa_plan.h"
#include "runner/preflight.h"

namespace ds {

std::string machine_unsupported_reason(const CaseSpec& spec, const BackendProbe& probe) {
  if (spec.method != CopyMethod::kDirect) return "";
  if (!probe.direct_unavailable.empty()) return probe.direct_unavailable;
  // The direct path reads mapped kinds through their registration with the device. CE
  // copies need none: where registration is missing they copy from the unregistered
  // memory, with a note (case_runner.cc).
  if ((is_mapped_kind(spec.src) || is_mapped_kind(spec.dst)) && !probe.register_unavailable.empty())
    return probe.register_unavailable;
  return "";
}

void check_against_backend(const std::vector<CaseSpec>& cases, const CopyParams& params,
                           const SelectedBackend& selected, Notes& notes) {
  const Backend& b = *selected.backend;
  bool multi = false;
  for (const auto& c : cases) {
    const std::string why = unsupported_reason(c, b);
    if (!why.empty()) throw UsageError(c.name + " cannot run on " + b.name() + ": " + why);
    const std::string machine = machine_unsupported_reason(c, selected.probe);
    if (!machine.empty()) throw RunError(c.name + ": not supported on this machine: " + machine);
    multi = multi || c.topology != Topology::kSingle;
    if (params.gate && ungated_reason(c, b).empty()) {
      if (!selected.probe.gate_unavailable.empty())
        throw UsageError("--stream-start-gate on: the " + b.name() + " backend cannot hold a stream here: " +
                         selected.probe.gate_unavailable);
      // Streams that share a hardware queue fill it together.
      const int queues = b.gate_shared_queues();
      const int streams = c.method == CopyMethod::kCeMultiStream ? params.streams : 1;
      const bool shared = queues > 0 && streams > queues;
      const uint64_t queued = queued_per_queue(c.method, params.layout.tasks(), params.layout.fragments_per_task(),
                                               params.streams, queues),
                     limit = b.gate_queue_limit();
      if (queued > limit)
        throw UsageError(
            "--stream-start-gate on: " + c.name + " would queue " + std::to_string(queued) + " operations on " +
            (shared ? "one of the " + std::to_string(queues) + " hardware queues its " + std::to_string(streams) +
                          " streams share (" + b.gate_queues_setting() + ")"
                    : std::string("one stream")) +
            " behind the gate, more than the " + b.name() + " backend holds (" + std::to_string(limit) +
            "); lower -n" +
            (c.method != CopyMethod::kCeMultiStream ? ""
             : shared                                ? " or give the streams more queues"
             : queues > 0 ? " or raise -S (up to " + std::to_string(queues) + " streams get a queue each)"
                          : " or raise -S"));
    }
  }
  for (const auto& c : cases)
    if (!params.numa_request.shm_nodes.empty() && c.src != BufKind::kShm && c.dst != BufKind::kShm)
      throw UsageError("option --shm-numa-nodes: case " + c.name +
                       " has no shared memory region to spread (it applies to the one_share_* and shm_* cases)");
  // A node or device that is not there: UsageError; a refused explicit placement: RunError.
  numa_plan_for(params.numa_request, selected, first_devices(multi ? params.devices : 1), notes);
  // Single-card cases use device 0 whatever -d says (d is 1 in their formulas), so
  // the default -d 8 does not stop them on a one-GPU machine.
  if (multi)
    check_device_count(params.devices_option, params.devices, params.devices, selected.probe.device_count, b.name());
  checked_mul(params.layout.bytes(), static_cast<uint64_t>(params.devices), "-s x -n x -f x -d");
}

void run_cases(const std::vector<CaseRun>& runs, SelectedBackend& selected, ResultWriter& writer, Notes& notes) {
  std::string previous_plan;  // cases that plan the same are announced once
  for (const auto& run : runs) {
    try {
      run_case(run.spec, run.params, selected, writer, notes, &previous_plan);  // the harness plans its placement
    } catch (const std::exception& e) {
      writer.fail(run.spec.name, e.what());
      writer.finish();
      throw;
    }
  }
  writer.finish();
}

void run_cases(const std::vector<CaseSpec>& cases, const CopyParams& params,
               SelectedBackend& selected, ResultWriter& writer, Notes& notes) {
  std::vector<CaseRun> runs;
  for (const auto& c : cases) runs.push_back({c, params});
  run_cases(runs, selected, writer, notes);
}

}  // namespace ds
