#include "backends/ascend/device_pci.h"

#include <algorithm>
#include <map>
#include <utility>

#include "topology/topology.h"

namespace ds {
namespace acl {

namespace {

std::string answered(const char* call, int64_t arg, int rc) {
  return std::string(call) + "(" + std::to_string(arg) + ") answered " + std::to_string(rc);
}

// One device's card and chip for DCMI, through its logical id: how it was found in
// `method`, or why not in the return value.
std::string card_and_chip(const DeviceIds& ids, int acl_id, const dcmi::DcmiLibrary& dcmi, bool visible_devices_set,
                          int* card, int* chip, std::string* method) {
  int64_t logic = -1;
  std::string how;
  if (ids.logic.ok()) {
    logic = ids.logic.id;
    how = "logical id from aclrtGetLogicDevIdByUserDevId";
  } else {
    const std::string no_logic = ids.logic.exported
                                     ? "aclrtGetLogicDevIdByUserDevId answered " + std::to_string(ids.logic.rc)
                                     : std::string("this CANN does not export aclrtGetLogicDevIdByUserDevId");
    if (visible_devices_set)
      return no_logic + ", and ASCEND_RT_VISIBLE_DEVICES is set: ACL's device ids are renumbered, not the driver's";
    logic = acl_id;
    how = "ACL device id as the driver's logical id: " + no_logic + " and ASCEND_RT_VISIBLE_DEVICES is unset";
  }
  if (dcmi.from_logicid) {
    const int rc = dcmi.from_logicid(card, chip, static_cast<unsigned int>(logic));
    if (rc != 0)
      return "dcmi_get_card_id_device_id_from_logicid(" + std::to_string(logic) + ") failed with error " +
             std::to_string(rc);
    *method = how;
    return "";
  }
  // A DCMI without the logical-id call: the physical id of that logical id.
  if (!dcmi.from_phyid)
    return dcmi.path +
           " exports neither dcmi_get_card_id_device_id_from_logicid nor dcmi_get_card_id_device_id_from_phyid";
  if (!ids.phy.ok())
    return dcmi.path + " does not export dcmi_get_card_id_device_id_from_logicid, and " +
           (ids.phy.exported ? answered("aclrtGetPhyDevIdByLogicDevId", logic, ids.phy.rc)
                             : std::string("this CANN does not export aclrtGetPhyDevIdByLogicDevId"));
  const int rc = dcmi.from_phyid(card, chip, static_cast<unsigned int>(ids.phy.id));
  if (rc != 0)
    return "dcmi_get_card_id_device_id_from_phyid(" + std::to_string(ids.phy.id) + ") failed with error " +
           std::to_string(rc);
  *method = how + ", its physical id from aclrtGetPhyDevIdByLogicDevId";
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

DevicePciMap map_devices_to_pci(const std::vector<DeviceIds>& ids, const dcmi::DcmiLibrary& dcmi,
                                bool visible_devices_set) {
  DevicePciMap m;
  m.address.resize(ids.size());
  if (ids.empty()) {
    m.how = "no devices";
    return m;
  }
  const std::string not_ready = dcmi.ready();
  if (!not_ready.empty()) {
    m.how = "unknown: " + not_ready;
    return m;
  }
  std::vector<std::string> method(ids.size()), why(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    int card = -1, chip = -1;
    why[i] = card_and_chip(ids[i], static_cast<int>(i), dcmi, visible_devices_set, &card, &chip, &method[i]);
    if (!why[i].empty()) continue;
    dcmi::dcmi_pcie_info_all info{};
    const int rc = dcmi.pcie_info_v2(card, chip, &info);
    if (rc == 0)
      m.address[i] = dcmi::pci_address_text(info);
    else
      why[i] = "dcmi_get_device_pcie_info_v2(card " + std::to_string(card) + ", device " + std::to_string(chip) +
               ") failed with error " + std::to_string(rc);
  }
  // One address for two devices: which is which cannot be told, so neither is guessed.
  std::map<std::string, std::vector<int>> holders;
  for (size_t i = 0; i < ids.size(); ++i)
    if (!m.address[i].empty()) holders[m.address[i]].push_back(static_cast<int>(i));
  for (const auto& h : holders) {
    if (h.second.size() < 2) continue;
    for (int dev : h.second) {
      why[static_cast<size_t>(dev)] = "DCMI gave " + devices_text(h.second) + " one PCI address (" + h.first + ")";
      m.address[static_cast<size_t>(dev)].clear();
    }
  }
  Grouped methods, failures;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (why[i].empty())
      add_to(&methods, method[i], static_cast<int>(i));
    else
      add_to(&failures, why[i], static_cast<int>(i));
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
