#include "tune/tune_arms.h"

#include "cases/catalog.h"
#include "cases/run_cases.h"

namespace ds {

namespace {

const char* base_name(CopyMethod m) {
  switch (m) {
    case CopyMethod::kCe: return "ce";
    case CopyMethod::kCeBatch: return "batch_ce";
    case CopyMethod::kCeMultiStream: return "ms";
    case CopyMethod::kDirect: return "direct";
    case CopyMethod::kKernel: return "sm";
    case CopyMethod::kKernelGather: return "sm_gather";
    case CopyMethod::kMemcpy: return "memcpy";
  }
  return "?";
}

bool host_side(BufKind k) { return k == BufKind::kPinned || k == BufKind::kPinnedMapped; }

// A case tune compares: pinned (or mapped) host memory and device memory, one
// direction, each card its own buffers (no shared region, no duplex).
bool comparable(const CaseSpec& c) {
  if (c.duplex || c.shared_src || c.shared_dst || c.method == CopyMethod::kMemcpy) return false;
  const CopyDir d = direction(c);
  if (d == CopyDir::kH2D) return host_side(c.src) && is_device_kind(c.dst);
  if (d == CopyDir::kD2H) return is_device_kind(c.src) && host_side(c.dst);
  return false;
}

size_t group_of(TuneArms& out, CopyDir dir, bool all, int devices) {
  const std::string key = std::string(dir == CopyDir::kH2D ? "h2d" : "d2h") + (all ? ".all" : ".one");
  for (size_t i = 0; i < out.groups.size(); ++i)
    if (out.groups[i].key == key) return i;
  const std::string title = std::string(dir == CopyDir::kH2D ? "H2D" : "D2H") +
                            (all ? ", all " + std::to_string(devices) + " cards" : ", one card");
  out.groups.push_back({key, title, dir, all});
  return out.groups.size() - 1;
}

}  // namespace

std::string arm_method_name(CopyMethod m, int streams, SubmitMode mode) {
  std::string n = base_name(m);
  if (m != CopyMethod::kCeMultiStream) return n;
  return n + "_" + std::to_string(streams) + (mode == SubmitMode::kRoundRobin ? "_rr" : "");
}

TuneArms tune_arms(const SelectedBackend& selected, const ArmChoice& choice) {
  TuneArms out;
  const Backend& b = *selected.backend;
  for (const CaseSpec& c : copy_cases()) {
    if (!comparable(c)) continue;
    const CopyDir dir = direction(c);
    const bool all = c.topology != Topology::kSingle;
    if ((dir == CopyDir::kH2D && !choice.h2d) || (dir == CopyDir::kD2H && !choice.d2h)) continue;
    if ((all && !choice.all_cards) || (!all && !choice.one_card)) continue;
    if (all && choice.devices < 2) continue;  // one card: the one-card arms say it
    std::string why = unsupported_reason(c, b);
    if (why.empty()) why = machine_unsupported_reason(c, selected.probe);
    if (!why.empty()) {
      out.skipped.push_back(c.name + ": " + why);
      continue;
    }
    const size_t g = group_of(out, dir, all, choice.devices);
    if (c.method != CopyMethod::kCeMultiStream) {
      out.arms.push_back({arm_method_name(c.method, 1, SubmitMode::kStreamMajor), c, 1, SubmitMode::kStreamMajor, g});
      continue;
    }
    for (int s : choice.streams)
      out.arms.push_back({arm_method_name(c.method, s, SubmitMode::kStreamMajor), c, s, SubmitMode::kStreamMajor, g});
    if (choice.round_robin && !choice.streams.empty()) {
      const int s = choice.streams[choice.streams.size() / 2];
      if (s > 1)
        out.arms.push_back({arm_method_name(c.method, s, SubmitMode::kRoundRobin), c, s, SubmitMode::kRoundRobin, g});
    }
  }
  return out;
}

namespace {

// `copy -t CASE` + `layout` (the words that lay the blocks out) + the point's -i,
// --warmup, -d and streams.
std::string copy_command(const TuneArm& arm, const std::string& layout, int devices, int iterations, int warmup,
                         const std::string& backend) {
  std::string cmd = "dev-sandbox" + (backend.empty() ? std::string() : " --backend " + backend) + " copy -t " +
                    arm.spec.name + layout + " -i " + std::to_string(iterations) + " --warmup " + std::to_string(warmup);
  if (arm.spec.topology != Topology::kSingle) cmd += " -d " + std::to_string(devices);
  if (arm.spec.method == CopyMethod::kCeMultiStream) {
    cmd += " --streams " + std::to_string(arm.streams);
    if (arm.submit_mode == SubmitMode::kRoundRobin) cmd += " --submit-mode round-robin";
  }
  return cmd;
}

}  // namespace

std::string arm_command(const TuneArm& arm, uint64_t block_bytes, uint64_t blocks, int devices, int iterations,
                        int warmup, const std::string& backend) {
  return copy_command(arm, " -s " + std::to_string(block_bytes) + " -n " + std::to_string(blocks), devices, iterations,
                      warmup, backend);
}

std::string model_arm_command(const TuneArm& arm, const std::string& model_options, const std::string& table_options,
                              int devices, int iterations, int warmup, const std::string& backend) {
  return copy_command(arm, model_options, devices, iterations, warmup, backend) + table_options;
}

}  // namespace ds
