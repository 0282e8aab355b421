#include "backends/ascend/device_pci.h"

#include <algorithm>
#include <utility>

#include "topology/topology.h"

namespace ds {
namespace acl {

namespace {

// One device's card and chip for DCMI, by the best id this device has: how it was
// found in `method`, or why not in the return value.
std::string card_and_chip(const PhyChipId& phy, unsigned int acl_id, const dcmi::DcmiLibrary& dcmi,
                          bool visible_devices_set, int* card, int* chip, std::string* method) {
  if (phy.exported && phy.rc == 0) {
    if (!dcmi.from_phyid) return dcmi.path + " does not export dcmi_get_card_id_device_id_from_phyid";
    const int rc = dcmi.from_phyid(card, chip, static_cast<unsigned int>(phy.id));
    if (rc != 0)
      return "dcmi_get_card_id_device_id_from_phyid(" + std::to_string(phy.id) + ") failed with error " +
             std::to_string(rc);
    *method = "physical id from aclrtGetDeviceInfo";
    return "";
  }
  const std::string no_phy = phy.exported ? "aclrtGetDeviceInfo(ACL_DEV_ATTR_PHY_CHIP_ID) answered " +
                                                std::to_string(phy.rc)
                                          : "this CANN does not export aclrtGetDeviceInfo";
  if (visible_devices_set)
    return no_phy + ", and ASCEND_RT_VISIBLE_DEVICES is set: ACL's device ids are renumbered, not the driver's";
  if (!dcmi.from_logicid) return no_phy + ", and " + dcmi.path + " does not export dcmi_get_card_id_device_id_from_logicid";
  const int rc = dcmi.from_logicid(card, chip, acl_id);
  if (rc != 0)
    return "dcmi_get_card_id_device_id_from_logicid(" + std::to_string(acl_id) + ") failed with error " +
           std::to_string(rc);
  *method = "ACL device id as the driver's logical id: " + no_phy + " and ASCEND_RT_VISIBLE_DEVICES is unset";
  return "";
}

// Entries in first-seen order, each with the devices it applies to.
using Grouped = std::vector<std::pair<std::string, std::vector<int>>>;
void add_to(Grouped* g, const std::string& what, int device) {
  auto it = std::find_if(g->begin(), g->end(), [&](const auto& e) { return e.first == what; });
  if (it == g->end()) it = g->insert(g->end(), {what, {}});
  it->second.push_back(device);
}

std::string devices_text(const std::vector<int>& ids) {
  return (ids.size() == 1 ? "device " : "devices ") + format_id_list(ids);
}

}  // namespace

DevicePciMap map_devices_to_pci(const std::vector<PhyChipId>& phy, const dcmi::DcmiLibrary& dcmi,
                                bool visible_devices_set) {
  DevicePciMap m;
  m.address.resize(phy.size());
  if (phy.empty()) {
    m.how = "no devices";
    return m;
  }
  const std::string not_ready = dcmi.ready();
  if (!not_ready.empty()) {
    m.how = "unknown: " + not_ready;
    return m;
  }
  Grouped methods, failures;
  for (size_t i = 0; i < phy.size(); ++i) {
    const int dev = static_cast<int>(i);
    int card = -1, chip = -1;
    std::string method;
    std::string why = card_and_chip(phy[i], static_cast<unsigned int>(i), dcmi, visible_devices_set, &card, &chip,
                                    &method);
    if (why.empty()) {
      dcmi::dcmi_pcie_info_all info{};
      const int rc = dcmi.pcie_info_v2(card, chip, &info);
      if (rc == 0)
        m.address[i] = dcmi::pci_address_text(info);
      else
        why = "dcmi_get_device_pcie_info_v2(card " + std::to_string(card) + ", device " + std::to_string(chip) +
              ") failed with error " + std::to_string(rc);
    }
    if (why.empty())
      add_to(&methods, method, dev);
    else
      add_to(&failures, why, dev);
  }
  std::string how;
  if (!methods.empty()) {
    // "DCMI <path> (how)", then each device left unknown and why.
    const bool name_devices = methods.size() > 1 || !failures.empty();
    how = "DCMI " + dcmi.path + " (";
    for (size_t k = 0; k < methods.size(); ++k)
      how += (k ? "; " : "") + (name_devices ? devices_text(methods[k].second) + ": " : "") + methods[k].first;
    how += ")";
    for (const auto& f : failures) how += "; " + devices_text(f.second) + " unknown: " + f.first;
  } else if (failures.size() == 1) {
    how = "unknown: " + failures[0].first;  // every device, for one reason
  } else {
    how = "unknown";
    for (size_t k = 0; k < failures.size(); ++k)
      how += (k ? "; " : ": ") + devices_text(failures[k].second) + ": " + failures[k].first;
  }
  m.how = how;
  return m;
}

}  // namespace acl
}  // namespace ds
