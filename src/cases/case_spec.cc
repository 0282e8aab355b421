#include "cases/case_spec.h"

namespace ds {

CopyDir direction(const CaseSpec& spec) {
  const bool from_dev = is_device_kind(spec.src), to_dev = is_device_kind(spec.dst);
  if (from_dev && to_dev) return CopyDir::kD2D;
  if (from_dev) return CopyDir::kD2H;
  if (to_dev) return CopyDir::kH2D;
  return CopyDir::kH2H;
}

std::string unsupported_reason(const CaseSpec& spec, const Backend& backend) {
  switch (spec.method) {
    case CopyMethod::kKernel:
    case CopyMethod::kKernelGather:
      if (!backend.has(Capability::kKernelCopy)) return "SM copy kernels need the cuda backend";
      break;
    case CopyMethod::kMemcpy:
      if (!backend.has(Capability::kHostMemcpy)) return "CPU memcpy cases run on sim only";
      break;
    case CopyMethod::kDirect:
      if (!backend.has(Capability::kDirect)) return "no direct path on this backend";
      if (direction(spec) == CopyDir::kD2H && !backend.has(Capability::kDirectD2H))
        return "its " + backend.direct_method() +
               " direct path copies host to device only here (D2H on it is not established: "
               "docs/hardware-status.md); the CE cases copy device to host";
      break;
    default:
      break;
  }
  return "";
}

uint64_t shared_part_stride(uint64_t part_bytes) {
  constexpr uint64_t kPage = 4096;
  return (part_bytes + kPage - 1) / kPage * kPage;
}

std::string ungated_reason(const CaseSpec& spec, const Backend& backend) {
  if (spec.method == CopyMethod::kMemcpy) return "CPU memcpy has no stream to hold";
  auto pageable = [](BufKind k) { return k == BufKind::kPageable || k == BufKind::kAnonymous; };
  if (pageable(spec.src) || pageable(spec.dst)) return backend.gate_hazard(GateHazard::kPageableHost);
  return "";
}

std::string method_name(const CaseSpec& spec, const Backend& backend) {
  return method_label(spec.method, backend) + (spec.topology == Topology::kFork ? "-FORK" : "");
}

std::string from_label(const CaseSpec& spec, const Backend& backend) {
  const bool one = spec.shared_src || spec.topology == Topology::kSingle;
  return backend.label_prefix() + "::" + label_kind(spec.src) + "::" + (one ? "0" : "all");
}

std::string to_label(const CaseSpec& spec, const Backend& backend) {
  const bool one = spec.shared_dst || spec.topology == Topology::kSingle;
  return backend.label_prefix() + "::" + label_kind(spec.dst) + "::" + (one ? "0" : "all");
}

}  // namespace ds
