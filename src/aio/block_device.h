// "Proof that the disk was read": the block device under a workspace and its
// byte counters (sectors x 512), read before and after a phase of aio. The device
// is found by the workspace's st_dev, never by its path: /sys/dev/block/M:m
// where sysfs is mounted, else /proc/partitions and /proc/diskstats (a chroot
// with only /proc, where /proc/self/mountinfo does not list the workspace's mount).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ds {

struct BlockDevice {
  dev_t id = 0;           // the workspace's st_dev (also when no device is found)
  std::string name;       // "vda", "nvme0n1", "dm-0": the whole disk (a partition's parent)
  std::string stat_path;  // /sys/dev/block/M:m/../stat, resolved; "" when read from /proc/diskstats
  std::string source() const { return stat_path.empty() ? "/proc/diskstats (" + name + ")" : stat_path; }
};

// The block device that holds `dir`. false, with `why` ("tmpfs has no block
// device of its own"), where there is none to read: memory, overlay and network
// filesystems, or anonymous device numbers (btrfs subvolumes). dev.id is set
// either way, so two directories on one filesystem are one device.
bool block_device_of(const std::string& dir, const std::string& fs_type, BlockDevice& dev, std::string& why);

// The kernel's name of block device `id` ("vda1"), from sysfs or /proc/partitions;
// "" when neither knows it.
std::string block_device_name(dev_t id);

struct DiskBytes {
  uint64_t read = 0, written = 0;
};

// The device's counters now; false when they cannot be read.
bool read_disk_bytes(const BlockDevice& dev, DiskBytes& out);

}  // namespace ds
