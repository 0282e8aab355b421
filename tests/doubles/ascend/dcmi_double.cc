// Test double of the Ascend driver's management library (libdcmi.so): the four entry
// points the ascend backend calls to find an NPU's PCI address (dcmi_library.h).
// Physical ids map to an invented (card, device) pair, card 100 + id / 2 and device
// id % 2, so a physical or logical id passed where DCMI expects a card fails;
// DS_DCMI_DOUBLE_PCI gives each physical id's address, DS_DCMI_DOUBLE_LOGICAL the
// driver's logical -> physical ids, DS_DCMI_DOUBLE_FAIL=name:N fails the Nth call of
// `name` (double_common.h). Every call but dcmi_init needs dcmi_init first in the
// same process, and every call is logged to DS_ACL_DOUBLE_LOG.
#include <cstdio>
#include <sstream>
#include <vector>

#include "double_common.h"

using dsdouble::fmt;
using dsdouble::log_call;

namespace {

constexpr int kOk = 0;
constexpr int kInvalidParameter = -8001;  // an error code for ids the double does not know
constexpr int kInjected = -8005;          // what an injected failure returns
constexpr int kNotInitialised = -8020;    // called before dcmi_init in this process

pid_t g_init_pid = 0;

struct PcieInfoAll {  // dcmi_pcie_info_all, 64 bytes
  unsigned int venderid, subvenderid, deviceid, subdeviceid;
  int domain;
  unsigned int bdf_busid, bdf_deviceid, bdf_funcid;
  unsigned char reserve[32];
};
static_assert(sizeof(PcieInfoAll) == 64, "dcmi_pcie_info_all is 64 bytes");

std::vector<std::string> split(const char* text) {
  std::vector<std::string> out;
  std::istringstream in(text ? text : "");
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

// DS_DCMI_DOUBLE_PCI's address for physical id `phy`, or "".
std::string address_of(unsigned int phy) {
  for (const std::string& item : split(std::getenv("DS_DCMI_DOUBLE_PCI"))) {
    const size_t colon = item.find(':');
    if (colon != std::string::npos && std::strtoul(item.substr(0, colon).c_str(), nullptr, 10) == phy)
      return item.substr(colon + 1);
  }
  return "";
}

// The common entry: an injected failure, or no dcmi_init in this process.
int enter(const char* call, const std::string& args) {
  if (dsdouble::inject_failure(call, "DS_DCMI_DOUBLE_FAIL")) {
    log_call(call, args + " FAIL injected");
    return kInjected;
  }
  log_call(call, args);
  return g_init_pid == getpid() ? kOk : kNotInitialised;
}

int card_device_of(unsigned int phy, int* card, int* device) {
  if (!card || !device || address_of(phy).empty()) return kInvalidParameter;
  *card = 100 + static_cast<int>(phy / 2);
  *device = static_cast<int>(phy % 2);
  return kOk;
}

}  // namespace

extern "C" {

int dcmi_init(void) {
  if (dsdouble::inject_failure("dcmi_init", "DS_DCMI_DOUBLE_FAIL")) {
    log_call("dcmi_init", "FAIL injected");
    return kInjected;
  }
  log_call("dcmi_init", "");
  g_init_pid = getpid();
  return kOk;
}

int dcmi_get_card_id_device_id_from_phyid(int* card_id, int* device_id, unsigned int device_phy_id) {
  if (int rc = enter("dcmi_get_card_id_device_id_from_phyid", fmt("phy=%u", device_phy_id))) return rc;
  return card_device_of(device_phy_id, card_id, device_id);
}

int dcmi_get_card_id_device_id_from_logicid(int* card_id, int* device_id, unsigned int device_logic_id) {
  if (int rc = enter("dcmi_get_card_id_device_id_from_logicid", fmt("logic=%u", device_logic_id))) return rc;
  const std::vector<std::string> phys = split(std::getenv("DS_DCMI_DOUBLE_LOGICAL"));
  if (phys.empty()) return card_device_of(device_logic_id, card_id, device_id);
  if (device_logic_id >= phys.size()) return kInvalidParameter;
  return card_device_of(static_cast<unsigned int>(std::atoi(phys[device_logic_id].c_str())), card_id, device_id);
}

int dcmi_get_device_pcie_info_v2(int card_id, int device_id, PcieInfoAll* info) {
  if (int rc = enter("dcmi_get_device_pcie_info_v2", fmt("card=%d device=%d", card_id, device_id))) return rc;
  if (!info || card_id < 100 || device_id < 0 || device_id > 1) return kInvalidParameter;
  const std::string address = address_of(static_cast<unsigned int>((card_id - 100) * 2 + device_id));
  unsigned int domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(address.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return kInvalidParameter;
  std::memset(info, 0, sizeof *info);
  info->venderid = 0x19e5;  // Huawei
  info->deviceid = 0xd802;
  info->domain = static_cast<int>(domain);
  info->bdf_busid = bus;
  info->bdf_deviceid = dev;
  info->bdf_funcid = fn;
  return kOk;
}

}  // extern "C"
