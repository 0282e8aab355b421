// Each AscendCL device's PCI address, through DCMI (dcmi_library.h), so the probe can
// read the device's NUMA node from sysfs as the cuda backend does.
//
// ACL device ids are "user" ids: ASCEND_RT_VISIBLE_DEVICES renumbers them. The driver
// (and DCMI) know a device by its logical id, and by a physical id. So each device's
// logical id comes from aclrtGetLogicDevIdByUserDevId (the runtime's
// ChgUserDevIdToDeviceId: user id -> driver device id, hicann/runtime api_impl.cc
// ApiImpl::GetLogicDevIdByUserDevId) and goes to dcmi_get_card_id_device_id_from_logicid;
// a DCMI without that call gets the physical id of that logical id instead
// (aclrtGetPhyDevIdByLogicDevId = rtGetDevicePhyIdByIndex, api_c_device.cc) through
// dcmi_get_card_id_device_id_from_phyid. Where AscendCL has no logical id for a device,
// its ACL id is taken as the logical id only while ASCEND_RT_VISIBLE_DEVICES is unset.
// Not used: aclrtGetDeviceInfo(ACL_DEV_ATTR_PHY_CHIP_ID), which is the driver's
// INFO_TYPE_PHY_CHIP_ID, a chip index read together with INFO_TYPE_PHY_DIE_ID
// (npu_driver.cc GetChipIdDieId): on Atlas A3 two devices (dies) share one chip id, so
// it is not an id DCMI takes. Two devices that come out with one PCI address are
// both left unknown, never guessed. Every reason is said, never thrown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/ascend/dcmi_library.h"

namespace ds {
namespace acl {

// What one AscendCL id call answered.
struct IdAnswer {
  bool exported = false;  // false: this CANN does not export the call
  int rc = 0;             // its answer; 0: `id` holds the id
  int64_t id = -1;
  bool ok() const { return exported && rc == 0; }
};

// One ACL device's driver ids as AscendCL gave them.
struct DeviceIds {
  IdAnswer logic;  // aclrtGetLogicDevIdByUserDevId(ACL id)
  // aclrtGetPhyDevIdByLogicDevId(the logical id above, or the ACL id where there is none)
  IdAnswer phy;
};

struct DevicePciMap {
  std::vector<std::string> address;  // per ACL device: "0000:18:00.0"; empty when unknown
  std::string how;                   // doctor's "device -> PCI" line: how they were mapped, or why not
};

// `ids` holds one entry per ACL device (index = ACL device id).
DevicePciMap map_devices_to_pci(const std::vector<DeviceIds>& ids, const dcmi::DcmiLibrary& dcmi,
                                bool visible_devices_set);

}  // namespace acl
}  // namespace ds
