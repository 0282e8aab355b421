#include "aio/block_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

namespace ds {

bool block_device_of(const std::string& dir, const std::string& fs_type, BlockDevice& dev, std::string& why) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    why = "stat(" + dir + ") failed";
    return false;
  }
  const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
  if (maj == 0) {  // anonymous: tmpfs, overlay, NFS, FUSE, btrfs
    why = fs_type + " has no block device of its own";
    return false;
  }
  const std::string link = "/sys/dev/block/" + std::to_string(maj) + ":" + std::to_string(min);
  char real[PATH_MAX];
  if (!realpath(link.c_str(), real)) {
    why = "no " + link + " for " + fs_type;
    return false;
  }
  std::string path = real;
  if (access((path + "/partition").c_str(), F_OK) == 0) path = path.substr(0, path.rfind('/'));  // the disk
  dev.name = path.substr(path.rfind('/') + 1);
  dev.stat_path = path + "/stat";
  DiskBytes probe;
  if (!read_disk_bytes(dev, probe)) {
    why = "cannot read " + dev.stat_path;
    return false;
  }
  return true;
}

bool read_disk_bytes(const BlockDevice& dev, DiskBytes& out) {
  std::ifstream in(dev.stat_path);
  // reads, merged, sectors read, ms, writes, merged, sectors written, ...
  uint64_t f[7];
  for (uint64_t& x : f)
    if (!(in >> x)) return false;
  out.read = f[2] * 512;
  out.written = f[6] * 512;
  return true;
}

}  // namespace ds
