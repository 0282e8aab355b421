#include "app/run_cases.h"

#include "core/error.h"
#include "core/units.h"

namespace ds {

std::string machine_unsupported_reason(const CaseSpec& spec, const BackendProbe& probe) {
  if (spec.engine == EngineKind::kDirect && !probe.direct_unavailable.empty()) return probe.direct_unavailable;
  // Registered kinds (and the mapped pinned buffer of the direct path) need host
  // registration; a shared region read by CPU memcpy is not registered.
  auto registers = [&](BufKind k) {
    if (k == BufKind::kShm) return spec.engine != EngineKind::kMemcpy;
    return k == BufKind::kPinnedMapped || k == BufKind::kOdirect || k == BufKind::kRegistered;
  };
  if ((registers(spec.src) || registers(spec.dst)) && !probe.register_unavailable.empty())
    return probe.register_unavailable;
  return "";
}

void check_against_backend(const std::vector<CaseSpec>& cases, const CopyParams& params,
                           const SelectedBackend& selected) {
  const Backend& b = *selected.backend;
  bool multi = false;
  for (const auto& c : cases) {
    const std::string why = unsupported_reason(c, b);
    if (!why.empty()) throw UsageError(c.name + " cannot run on " + b.name() + ": " + why);
    const std::string machine = machine_unsupported_reason(c, selected.probe);
    if (!machine.empty()) throw RunError(c.name + ": not supported on this machine: " + machine);
    multi = multi || c.topology != Topology::kSingle;
  }
  // Single-card cases use device 0 whatever -d says (d is 1 for them, SPEC §4.1),
  // so the default -d 8 does not stop them on a one-GPU machine.
  if (multi && params.devices > selected.probe.device_count)
    throw UsageError("option -d got " + std::to_string(params.devices) + " but the " + b.name() +
                     " backend sees " + std::to_string(selected.probe.device_count) + " device" +
                     (selected.probe.device_count == 1 ? "" : "s"));
  const uint64_t per_device = checked_mul(
      checked_mul(params.blocks, static_cast<uint64_t>(params.frags > 0 ? params.frags : 1),
                  "-n x -f"),
      params.block_bytes, "-s x -n x -f");
  checked_mul(per_device, static_cast<uint64_t>(params.devices), "-s x -n x -f x -d");
}

RunInfo run_info(const SelectedBackend& selected, const std::vector<std::string>& command_line) {
  RunInfo info;
  info.tool_version = DS_VERSION;
  info.backend = selected.backend->name();
  info.backend_library = selected.probe.library_path;
  info.runtime_version = selected.probe.runtime_version;
  info.devices = selected.probe.devices;
  info.command_line = command_line;
  return info;
}

void run_cases(const std::vector<CaseRun>& runs, SelectedBackend& selected, ResultWriter& writer) {
  for (const auto& run : runs) {
    try {
      CaseResult r = run_case(run.spec, run.params, *selected.backend);
      writer.add(r);
      if (r.validated) writer.validation(run.spec.name, *r.validated);
    } catch (const std::exception& e) {
      writer.fail(run.spec.name, e.what());
      writer.finish();
      throw;
    }
  }
  writer.finish();
}

void run_cases(const std::vector<CaseSpec>& cases, const CopyParams& params,
               SelectedBackend& selected, ResultWriter& writer) {
  std::vector<CaseRun> runs;
  for (const auto& c : cases) runs.push_back({c, params});
  run_cases(runs, selected, writer);
}

}  // namespace ds
