#include "backends/ascend/dcmi_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "backends/ascend/acl_library.h"

namespace ds {
namespace dcmi {

namespace {

// Where libdcmi.so is looked for, in order.
std::vector<std::string> dcmi_candidates() {
  const std::string explicit_path = acl::env_or_empty("DEV_SANDBOX_DCMI_LIB");
  if (!explicit_path.empty()) return {explicit_path};
  return {"/usr/local/Ascend/driver/lib64/driver/libdcmi.so", "/usr/local/dcmi/libdcmi.so", "libdcmi.so"};
}

DcmiLibrary open_library() {
  DcmiLibrary lib;
  std::string tried;
  void* handle = acl::open_first(dcmi_candidates(), &lib.path, &tried);
  if (!handle) {
    lib.error = "libdcmi.so (the Ascend driver's DCMI) could not be opened: tried " + tried +
                "; set DEV_SANDBOX_DCMI_LIB=/path/to/libdcmi.so";
    return lib;
  }
  lib.dcmi_init = reinterpret_cast<dcmi_init_t>(dlsym(handle, "dcmi_init"));
  lib.pcie_info_v2 = reinterpret_cast<dcmi_get_device_pcie_info_v2_t>(dlsym(handle, "dcmi_get_device_pcie_info_v2"));
  lib.from_phyid =
      reinterpret_cast<dcmi_get_card_id_device_id_t>(dlsym(handle, "dcmi_get_card_id_device_id_from_phyid"));
  lib.from_logicid =
      reinterpret_cast<dcmi_get_card_id_device_id_t>(dlsym(handle, "dcmi_get_card_id_device_id_from_logicid"));
  std::string missing;
  if (!lib.dcmi_init) missing = "dcmi_init";
  if (!lib.pcie_info_v2) missing += std::string(missing.empty() ? "" : ", ") + "dcmi_get_device_pcie_info_v2";
  if (!missing.empty()) lib.error = lib.path + " does not export " + missing;
  return lib;
}

}  // namespace

std::string DcmiLibrary::ready() const {
  if (!error.empty()) return error;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (initialised_pid_ != getpid()) {  // a forked child initialises again
    initialised_pid_ = getpid();
    const int rc = dcmi_init();
    init_error_ = rc == 0 ? "" : "dcmi_init (" + path + ") failed with error " + std::to_string(rc);
  }
  return init_error_;
}

const DcmiLibrary& load_dcmi_library() {
  static std::once_flag once;
  static DcmiLibrary lib;
  std::call_once(once, [] { lib = open_library(); });
  return lib;
}

std::string pci_address_text(const dcmi_pcie_info_all& info) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", static_cast<unsigned>(info.domain), info.bdf_busid,
                info.bdf_deviceid, info.bdf_funcid);
  return text;
}

}  // namespace dcmi
}  // namespace ds
