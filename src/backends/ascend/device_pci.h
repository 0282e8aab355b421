// Each AscendCL device's PCI address, through DCMI (dcmi_library.h), so the probe can
// read the device's NUMA node from sysfs as the cuda backend does.
//
// ACL device ids are logical: ASCEND_RT_VISIBLE_DEVICES renumbers them. So the
// physical chip id aclrtGetDeviceInfo(dev, ACL_DEV_ATTR_PHY_CHIP_ID) gives is
// preferred (dcmi_get_card_id_device_id_from_phyid); where that attribute is missing or
// refused, the ACL id is taken as the driver's logical id
// (dcmi_get_card_id_device_id_from_logicid) only when ASCEND_RT_VISIBLE_DEVICES is
// unset; otherwise the device's address stays unknown, and so does every address when
// DCMI cannot be used. Either way the reason is said, never thrown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/ascend/dcmi_library.h"

namespace ds {
namespace acl {

// What aclrtGetDeviceInfo(dev, ACL_DEV_ATTR_PHY_CHIP_ID) answered for one device.
struct PhyChipId {
  bool exported = false;  // false: this CANN has no aclrtGetDeviceInfo
  int rc = 0;             // its answer; 0: `id` is the physical chip id
  int64_t id = -1;
};

struct DevicePciMap {
  std::vector<std::string> address;  // per ACL device: "0000:18:00.0"; empty when unknown
  std::string how;                   // doctor's "device -> PCI" line: how they were mapped, or why not
};

// `phy` holds one answer per ACL device (index = ACL device id).
DevicePciMap map_devices_to_pci(const std::vector<PhyChipId>& phy, const dcmi::DcmiLibrary& dcmi,
                                bool visible_devices_set);

}  // namespace acl
}  // namespace ds
