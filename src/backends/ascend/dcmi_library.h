// The Ascend driver's management library (DCMI, libdcmi.so), opened at run time and
// only for one thing: an NPU's PCI address, so its NUMA node can be read from sysfs.
// Optional: never a link dependency, and a library that is missing or fails leaves
// the nodes unknown with the reason (NUMA placement is best effort; --numa-map
// overrides), never a run failure.
//
// Where each fact comes from (public headers and docs, read through the stored-code
// index): dcmi_init(void), dcmi_get_card_id_device_id_from_phyid(int* card_id, int*
// device_id, unsigned int device_phy_id), dcmi_get_card_id_device_id_from_logicid(int*,
// int*, unsigned int device_logic_id), dcmi_get_device_pcie_info_v2(int card_id, int
// device_id, struct dcmi_pcie_info_all*) and that structure (the header's comment: "the
// size of dcmi_pcie_info_all is 64"): dcmi_interface_api.h as the driver ships it
// (gitcode cann/driver src/custom/include, and copies in several public projects);
// 0 is DCMI_OK. The library's usual places: /usr/local/Ascend/driver/lib64/driver and
// /usr/local/dcmi. NOT CONFIRMED on hardware here: that the driver's logical id
// AscendCL gives (aclrtGetLogicDevIdByUserDevId) is the device_logic_id DCMI takes, and
// its physical id (aclrtGetPhyDevIdByLogicDevId) DCMI's device_phy_id (device_pci.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ds {
namespace dcmi {

struct dcmi_pcie_info_all {
  unsigned int venderid;
  unsigned int subvenderid;
  unsigned int deviceid;
  unsigned int subdeviceid;
  int domain;
  unsigned int bdf_busid;
  unsigned int bdf_deviceid;
  unsigned int bdf_funcid;
  unsigned char reserve[32];
};
static_assert(sizeof(dcmi_pcie_info_all) == 64, "dcmi_pcie_info_all is 64 bytes");

using dcmi_init_t = int (*)();
using dcmi_get_card_id_device_id_t = int (*)(int*, int*, unsigned int);
using dcmi_get_device_pcie_info_v2_t = int (*)(int, int, dcmi_pcie_info_all*);

struct DcmiLibrary {
  std::string path;   // libdcmi.so actually opened; empty when none
  std::string error;  // why DCMI cannot be used (not found, symbols missing); empty: it can
  dcmi_init_t dcmi_init = nullptr;
  dcmi_get_card_id_device_id_t from_phyid = nullptr;    // dcmi_get_card_id_device_id_from_phyid
  dcmi_get_card_id_device_id_t from_logicid = nullptr;  // dcmi_get_card_id_device_id_from_logicid
  dcmi_get_device_pcie_info_v2_t pcie_info_v2 = nullptr;
  // dcmi_init once in each process that asks: empty when it succeeded (now or
  // earlier in this process), else "dcmi_init failed with error N".
  std::string ready() const;

 private:
  mutable pid_t initialised_pid_ = 0;
  mutable std::string init_error_;
};

// Opens libdcmi.so once per process: DEV_SANDBOX_DCMI_LIB when set (only that), else
// the driver's usual places, then the loader's path. Never throws: a library that
// cannot be used says why in `error`.
const DcmiLibrary& load_dcmi_library();

// "%04x:%02x:%02x.%x" of domain, bus, device and function: sysfs's form.
std::string pci_address_text(const dcmi_pcie_info_all& info);

}  // namespace dcmi
}  // namespace ds
