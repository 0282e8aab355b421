#include "cases/catalog.h"

#include "core/error.h"

namespace ds {

namespace {

using B = BufKind;
using E = CopyMethod;
using T = Topology;

}  // namespace

namespace {

// Host to device, on one card and on every card (quick mode's among them).
void add_h2d_cases(std::vector<CaseSpec>& cases) {
  const std::vector<CaseSpec> h2d = {
      {"host_to_device_ce", "memcpy from host to device with ce",
       B::kPinned, B::kDevice, false, E::kCe, T::kSingle},
      {"host_to_device_batch_ce", "memcpy from host to device with ce using one batched submission",
       B::kPinned, B::kDevice, false, E::kCeBatch, T::kSingle},
      {"host_to_device_ce_multi_stream", "memcpy from host to device with ce using multi stream",
       B::kPinned, B::kDevice, false, E::kCeMultiStream, T::kSingle},
      {"device_to_host_ce", "memcpy from device to host with ce",
       B::kDevice, B::kPinned, false, E::kCe, T::kSingle},
      {"device_to_device_ce", "memcpy from device to device with ce",
       B::kDevice, B::kDevice, false, E::kCe, T::kSingle},
      {"anonymous_to_device_ce", "memcpy from anonymous (unregistered) host memory to device with ce",
       B::kAnonymous, B::kDevice, false, E::kCe, T::kSingle},
      {"one_host_to_all_device_ce", "memcpy from one host to all device with ce using thread submit",
       B::kPinned, B::kDevice, true, E::kCe, T::kThreads},
      {"all_host_to_all_device_ce", "memcpy from all host to all device with ce using thread submit",
       B::kPinned, B::kDevice, false, E::kCe, T::kThreads},
      {"one_device_to_all_device_ce", "memcpy from device 0 to all device with ce using thread submit",
       B::kDevice, B::kDevice, true, E::kCe, T::kThreads},
      {"all_host_to_all_device_ce_multi_stream",
       "memcpy from all host to all device with ce using multi stream and fork submit",
       B::kPinned, B::kDevice, false, E::kCeMultiStream, T::kFork},
      {"all_odirect_host_to_all_device_ce_multi_stream",
       "memcpy from all odirect host to all device with ce using multi stream and fork submit",
       B::kOdirect, B::kDevice, false, E::kCeMultiStream, T::kFork},
      {"one_share_host_to_all_device_ce_multi_stream",
       "memcpy from one shared host to all device with ce using multi stream and fork submit",
       B::kShm, B::kDevice, true, E::kCeMultiStream, T::kFork},
      {"all_host_to_all_device_ffts_direct_h2d",
       "memcpy from all mapped host to all device with direct h2d sdma and fork submit",
       B::kPinnedMapped, B::kDevice, false, E::kDirect, T::kFork},
      {"all_odirect_host_to_all_device_ffts_direct_h2d",
       "memcpy from all odirect host to all device with direct h2d sdma and fork submit",
       B::kOdirect, B::kDevice, false, E::kDirect, T::kFork},
      {"one_share_host_to_all_device_ffts_direct_h2d",
       "memcpy from one shared host to all device with direct h2d sdma and fork submit",
       B::kShm, B::kDevice, true, E::kDirect, T::kFork},
  };
  cases.insert(cases.end(), h2d.begin(), h2d.end());
}

// Device to host, both at once (duplex), the SM kernels, the batched call and the
// gather kernel on every card, and the CPU's own copies.
void add_other_cases(std::vector<CaseSpec>& cases) {
  const std::vector<CaseSpec> other = {
      {"device_to_host_batch_ce", "memcpy from device to host with ce using one batched submission",
       B::kDevice, B::kPinned, false, E::kCeBatch, T::kSingle},
      {"all_device_to_all_host_ce", "memcpy from all device to all host with ce using thread submit",
       B::kDevice, B::kPinned, false, E::kCe, T::kThreads},
      {"all_device_to_all_host_ce_multi_stream",
       "memcpy from all device to all host with ce using multi stream and fork submit",
       B::kDevice, B::kPinned, false, E::kCeMultiStream, T::kFork},
      {"all_device_to_all_odirect_host_ce_multi_stream",
       "memcpy from all device to all odirect host with ce using multi stream and fork submit",
       B::kDevice, B::kOdirect, false, E::kCeMultiStream, T::kFork},
      {"all_device_to_one_share_host_ce_multi_stream",
       "memcpy from all device to one shared host, each its own part, with ce using multi stream and fork submit",
       B::kDevice, B::kShm, false, E::kCeMultiStream, T::kFork, true},
      {"all_device_to_all_host_ffts_direct_d2h",
       "memcpy from all device to all mapped host with direct d2h sdma and fork submit",
       B::kDevice, B::kPinnedMapped, false, E::kDirect, T::kFork},
      {"all_device_to_all_odirect_host_ffts_direct_d2h",
       "memcpy from all device to all odirect host with direct d2h sdma and fork submit",
       B::kDevice, B::kOdirect, false, E::kDirect, T::kFork},
      {"all_device_to_one_share_host_ffts_direct_d2h",
       "memcpy from all device to one shared host, each its own part, with direct d2h sdma and fork submit",
       B::kDevice, B::kShm, false, E::kDirect, T::kFork, true},
      {"all_host_to_all_device_duplex_ce_multi_stream",
       "memcpy from all host to all device and from all device to all host at once with ce using multi stream "
       "and fork submit, each direction on its own streams",
       B::kPinned, B::kDevice, false, E::kCeMultiStream, T::kFork, false, true},
      {"all_odirect_host_to_all_device_duplex_ce_multi_stream",
       "memcpy from all odirect host to all device and from all device to all odirect host at once with ce using "
       "multi stream and fork submit, each direction on its own streams",
       B::kOdirect, B::kDevice, false, E::kCeMultiStream, T::kFork, false, true},
      {"one_share_host_to_all_device_duplex_ce_multi_stream",
       "memcpy from one shared host to all device and from all device to their own parts of one shared host at once "
       "with ce using multi stream and fork submit, each direction on its own streams",
       B::kShm, B::kDevice, true, E::kCeMultiStream, T::kFork, false, true},
      {"host_to_device_sm", "memcpy from host to device with a copy kernel on the sm",
       B::kPinned, B::kDevice, false, E::kKernel, T::kSingle},
      {"device_to_host_sm", "memcpy from device to host with a copy kernel on the sm",
       B::kDevice, B::kPinned, false, E::kKernel, T::kSingle},
      {"host_to_device_sm_gather",
       "memcpy from host to device with one gather kernel launch on the sm moving every block",
       B::kPinned, B::kDevice, false, E::kKernelGather, T::kSingle},
      {"device_to_host_sm_gather",
       "memcpy from device to host with one gather kernel launch on the sm moving every block",
       B::kDevice, B::kPinned, false, E::kKernelGather, T::kSingle},
      // Every card at once with the batched call and the gather kernel, each card in
      // its own process as the other fork cases: what one card's method keeps when
      // all of them copy (the methods a paged layout is compared over on N cards).
      {"all_host_to_all_device_batch_ce",
       "memcpy from all host to all device with ce using one batched submission per card and fork submit",
       B::kPinned, B::kDevice, false, E::kCeBatch, T::kFork},
      {"all_device_to_all_host_batch_ce",
       "memcpy from all device to all host with ce using one batched submission per card and fork submit",
       B::kDevice, B::kPinned, false, E::kCeBatch, T::kFork},
      {"all_host_to_all_device_sm_gather",
       "memcpy from all host to all device with one gather kernel launch per card on its sm and fork submit",
       B::kPinned, B::kDevice, false, E::kKernelGather, T::kFork},
      {"all_device_to_all_host_sm_gather",
       "memcpy from all device to all host with one gather kernel launch per card on its sm and fork submit",
       B::kDevice, B::kPinned, false, E::kKernelGather, T::kFork},
      {"host_to_anonymous_memcpy", "memcpy from host to anonymous host memory with the cpu",
       B::kPinned, B::kAnonymous, false, E::kMemcpy, T::kSingle},
      {"shm_to_all_host_memcpy", "memcpy from one shared host to all host with the cpu and fork submit",
       B::kShm, B::kPinned, true, E::kMemcpy, T::kFork},
  };
  cases.insert(cases.end(), other.begin(), other.end());
}

}  // namespace

const std::vector<CaseSpec>& copy_cases() {
  static const std::vector<CaseSpec> cases = [] {
    std::vector<CaseSpec> all;
    add_h2d_cases(all);
    add_other_cases(all);
    return all;
  }();
  return cases;
}

const CaseSpec* find_case(const std::string& name) {
  for (const auto& c : copy_cases())
    if (c.name == name) return &c;
  return nullptr;
}

std::string quick_mode_case(const std::string& model_type, const std::string& iodirect,
                            const std::string& sdma) {
  if (model_type != "gqa" && model_type != "mla")
    throw UsageError("option --model-type got '" + model_type + "': accepts gqa|mla");
  if (iodirect != "true" && iodirect != "false")
    throw UsageError("option --iodirect got '" + iodirect + "': accepts true|false");
  if (sdma != "true" && sdma != "false")
    throw UsageError("option --sdma got '" + sdma + "': accepts true|false");
  const std::string method =
      sdma == "true" ? "ffts_direct_h2d" : "ce_multi_stream";
  if (model_type == "mla") return "one_share_host_to_all_device_" + method;  // MLA ignores iodirect
  return std::string(iodirect == "true" ? "all_odirect_host" : "all_host") + "_to_all_device_" +
         method;
}

std::vector<std::string> gather_method_cases(int devices) {
  if (devices <= 1)
    return {"host_to_device_ce", "host_to_device_ce_multi_stream", "host_to_device_batch_ce",
            "host_to_device_sm_gather", "all_host_to_all_device_ffts_direct_h2d"};
  return {"all_host_to_all_device_ce", "all_host_to_all_device_ce_multi_stream", "all_host_to_all_device_batch_ce",
          "all_host_to_all_device_sm_gather", "all_host_to_all_device_ffts_direct_h2d"};
}

}  // namespace ds
