// "Proof that the disk was read": the block device under a workspace and its
// byte counters (/sys/block/<dev>/stat, sectors x 512), read before and after a
// phase of aio.
#pragma once

#include <cstdint>
#include <string>

namespace ds {

struct BlockDevice {
  std::string name;       // "vda", "nvme0n1", "dm-0": the whole disk (a partition's parent)
  std::string stat_path;  // /sys/dev/block/M:m/../stat, resolved
};

// The block device that holds `dir`. false, with `why` ("tmpfs: no block device"),
// where there is none to read: memory, overlay and network filesystems, or
// anonymous device numbers (btrfs subvolumes).
bool block_device_of(const std::string& dir, const std::string& fs_type, BlockDevice& dev, std::string& why);

struct DiskBytes {
  uint64_t read = 0, written = 0;
};

// The device's counters now; false when the stat file cannot be read.
bool read_disk_bytes(const BlockDevice& dev, DiskBytes& out);

}  // namespace ds
