// map_devices_to_pci on a scripted DCMI: which id goes to DCMI (the logical id
// AscendCL gives, its physical id where DCMI lacks the logical call, the ACL id only
// while ASCEND_RT_VISIBLE_DEVICES is unset, or none), two devices on one address left
// unknown, the card/device pair
// DCMI answered going on to dcmi_get_device_pcie_info_v2, the address text, and the
// doctor line when things fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/ascend/dcmi_library.h"
#include "backends/ascend/device_pci.h"

using namespace ds;
using namespace ds::acl;

namespace {

// The scripted library: physical id p is card 10 + p, device 0; a logical id l is
// physical id 8 - l; card 10 + p answers domain 1, bus 0x10 + p, device 0x1f, function 3.
std::vector<std::string> g_calls;
int g_init_rc = 0;
int g_fail_pcie_card = -1;

int fake_init() {
  g_calls.push_back("init");
  return g_init_rc;
}
int fake_from_phyid(int* card, int* device, unsigned int phy) {
  g_calls.push_back("phy " + std::to_string(phy));
  *card = 10 + static_cast<int>(phy);
  *device = 0;
  return 0;
}
int fake_from_logicid(int* card, int* device, unsigned int logic) {
  g_calls.push_back("logic " + std::to_string(logic));
  return fake_from_phyid(card, device, 8 - logic);
}
int fake_pcie(int card, int device, dcmi::dcmi_pcie_info_all* info) {
  g_calls.push_back("pcie " + std::to_string(card) + "/" + std::to_string(device));
  if (card == g_fail_pcie_card) return -8005;
  info->domain = 1;
  info->bdf_busid = static_cast<unsigned int>(0x10 + card - 10);
  info->bdf_deviceid = 0x1f;
  info->bdf_funcid = 3;
  return 0;
}

dcmi::DcmiLibrary fake_dcmi() {
  g_calls.clear();
  g_init_rc = 0;
  g_fail_pcie_card = -1;
  dcmi::DcmiLibrary lib;
  lib.path = "/fake/libdcmi.so";
  lib.dcmi_init = fake_init;
  lib.from_phyid = fake_from_phyid;
  lib.from_logicid = fake_from_logicid;
  lib.pcie_info_v2 = fake_pcie;
  return lib;
}

IdAnswer id(int64_t v) {
  IdAnswer a;
  a.exported = true;
  a.id = v;
  return a;
}
IdAnswer refused(int rc) {
  IdAnswer a;
  a.exported = true;
  a.rc = rc;
  return a;
}
// AscendCL's logical id `l` (and, where asked, its physical id `p`).
DeviceIds logical(int64_t l, int64_t p = -1) {
  DeviceIds d;
  d.logic = id(l);
  if (p >= 0) d.phy = id(p);
  return d;
}
DeviceIds no_logical(IdAnswer logic = IdAnswer{}, int64_t p = -1) {
  DeviceIds d;
  d.logic = logic;
  if (p >= 0) d.phy = id(p);
  return d;
}

}  // namespace

TEST(AscendDevicePci, AddressTextIsSysfsForm) {
  dcmi::dcmi_pcie_info_all info{};
  info.domain = 0;
  info.bdf_busid = 0xaf;
  info.bdf_deviceid = 0;
  info.bdf_funcid = 0;
  EXPECT_EQ(dcmi::pci_address_text(info), "0000:af:00.0");
  info.domain = 0x12;
  info.bdf_busid = 3;
  info.bdf_deviceid = 0x1f;
  info.bdf_funcid = 7;
  EXPECT_EQ(dcmi::pci_address_text(info), "0012:03:1f.7");
}

// The logical id AscendCL gives (aclrtGetLogicDevIdByUserDevId) goes to DCMI's logical-id
// call, whatever ASCEND_RT_VISIBLE_DEVICES says; DCMI's card/device pair to the PCI query.
TEST(AscendDevicePci, LogicalIdsGoToDcmiAndItsCardDevicePairToPcieInfo) {
  const dcmi::DcmiLibrary lib = fake_dcmi();
  const DevicePciMap m = map_devices_to_pci({logical(4), logical(5)}, lib, true);
  EXPECT_EQ(m.address, (std::vector<std::string>{"0001:14:1f.3", "0001:13:1f.3"}));  // logical 4 -> phy 4, 5 -> 3
  EXPECT_EQ(g_calls, (std::vector<std::string>{"init", "logic 4", "phy 4", "pcie 14/0", "logic 5", "phy 3",
                                               "pcie 13/0"}));
  EXPECT_EQ(m.how, "DCMI /fake/libdcmi.so (logical id from aclrtGetLogicDevIdByUserDevId)");
}

// A DCMI without the logical-id call: the physical id AscendCL gives for that logical
// id (aclrtGetPhyDevIdByLogicDevId) goes to DCMI's physical-id call.
TEST(AscendDevicePci, WithoutDcmisLogicalCallThePhysicalIdOfTheLogicalIdIsUsed) {
  dcmi::DcmiLibrary lib = fake_dcmi();
  lib.from_logicid = nullptr;
  DevicePciMap m = map_devices_to_pci({logical(0, 6), logical(1, 7)}, lib, false);
  EXPECT_EQ(m.address, (std::vector<std::string>{"0001:16:1f.3", "0001:17:1f.3"}));
  EXPECT_EQ(g_calls, (std::vector<std::string>{"init", "phy 6", "pcie 16/0", "phy 7", "pcie 17/0"}));
  EXPECT_EQ(m.how,
            "DCMI /fake/libdcmi.so (logical id from aclrtGetLogicDevIdByUserDevId, its physical id from "
            "aclrtGetPhyDevIdByLogicDevId)");

  lib = fake_dcmi();
  lib.from_logicid = nullptr;
  m = map_devices_to_pci({logical(0)}, lib, false);  // no aclrtGetPhyDevIdByLogicDevId
  EXPECT_EQ(m.address, (std::vector<std::string>{""}));
  EXPECT_EQ(m.how,
            "unknown: /fake/libdcmi.so does not export dcmi_get_card_id_device_id_from_logicid, and this CANN does "
            "not export aclrtGetPhyDevIdByLogicDevId");
  lib.from_phyid = nullptr;
  m = map_devices_to_pci({logical(0, 6)}, lib, false);
  EXPECT_EQ(m.how,
            "unknown: /fake/libdcmi.so exports neither dcmi_get_card_id_device_id_from_logicid nor "
            "dcmi_get_card_id_device_id_from_phyid");
}

// Two devices with one PCI address: which is which is not known, so neither is placed.
TEST(AscendDevicePci, TwoDevicesWithOneAddressAreBothUnknown) {
  const dcmi::DcmiLibrary lib = fake_dcmi();
  // Devices 0 and 2 with one logical id (as a wrong mapping would give): one card, one
  // address, twice.
  const DevicePciMap m = map_devices_to_pci({logical(4), logical(2), logical(4)}, lib, false);
  EXPECT_EQ(m.address, (std::vector<std::string>{"", "0001:16:1f.3", ""}));
  EXPECT_EQ(m.how,
            "DCMI /fake/libdcmi.so (device 1: logical id from aclrtGetLogicDevIdByUserDevId); devices 0,2 unknown: "
            "DCMI gave devices 0,2 one PCI address (0001:14:1f.3)");
}

TEST(AscendDevicePci, AclIdsAsLogicalIdsOnlyWhenVisibleDevicesIsUnset) {
  dcmi::DcmiLibrary lib = fake_dcmi();
  DevicePciMap m = map_devices_to_pci({no_logical(), no_logical()}, lib, false);  // no aclrtGetLogicDevIdByUserDevId
  EXPECT_EQ(m.address, (std::vector<std::string>{"0001:18:1f.3", "0001:17:1f.3"}));  // logical 0 -> phy 8
  EXPECT_EQ(g_calls, (std::vector<std::string>{"init", "logic 0", "phy 8", "pcie 18/0", "logic 1", "phy 7",
                                               "pcie 17/0"}));
  EXPECT_EQ(m.how,
            "DCMI /fake/libdcmi.so (ACL device id as the driver's logical id: this CANN does not export "
            "aclrtGetLogicDevIdByUserDevId and ASCEND_RT_VISIBLE_DEVICES is unset)");

  lib = fake_dcmi();
  m = map_devices_to_pci({no_logical(refused(207000)), no_logical(refused(207000))}, lib, true);
  EXPECT_EQ(m.address, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(g_calls, (std::vector<std::string>{"init"}));
  EXPECT_EQ(m.how,
            "unknown: aclrtGetLogicDevIdByUserDevId answered 207000, and ASCEND_RT_VISIBLE_DEVICES is set: ACL's "
            "device ids are renumbered, not the driver's");
}

TEST(AscendDevicePci, FailuresLeaveAddressesUnknownAndSayWhy) {
  dcmi::DcmiLibrary lib = fake_dcmi();
  lib.error = "libdcmi.so could not be opened";
  DevicePciMap m = map_devices_to_pci({logical(0)}, lib, false);
  EXPECT_EQ(m.address, (std::vector<std::string>{""}));
  EXPECT_EQ(m.how, "unknown: libdcmi.so could not be opened");
  EXPECT_TRUE(g_calls.empty());

  lib = fake_dcmi();
  g_init_rc = -8005;
  m = map_devices_to_pci({logical(0), logical(1)}, lib, false);
  EXPECT_EQ(m.address, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(m.how, "unknown: dcmi_init (/fake/libdcmi.so) failed with error -8005");

  // One card's PCI query fails; one device has no logical id and ids are renumbered.
  lib = fake_dcmi();
  g_fail_pcie_card = 17;  // logical 1 -> phy 7 -> card 17
  m = map_devices_to_pci({logical(0), logical(1), no_logical(refused(207000)), logical(3)}, lib, true);
  EXPECT_EQ(m.address, (std::vector<std::string>{"0001:18:1f.3", "", "", "0001:15:1f.3"}));
  EXPECT_EQ(m.how,
            "DCMI /fake/libdcmi.so (devices 0,3: logical id from aclrtGetLogicDevIdByUserDevId); device 1 unknown: "
            "dcmi_get_device_pcie_info_v2(card 17, device 0) failed with error -8005; device 2 unknown: "
            "aclrtGetLogicDevIdByUserDevId answered 207000, and ASCEND_RT_VISIBLE_DEVICES is set: ACL's device ids "
            "are renumbered, not the driver's");

  // No devices at all (DCMI not even initialised).
  lib = fake_dcmi();
  m = map_devices_to_pci({}, lib, false);
  EXPECT_EQ(m.how, "no devices");
  EXPECT_TRUE(g_calls.empty());
}
