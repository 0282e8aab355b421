#include "aio/block_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace ds {

namespace {

struct Partition {
  unsigned major = 0, minor = 0;
  std::string name;
};

// /proc/partitions: "major minor #blocks name" after a header line.
std::vector<Partition> proc_partitions() {
  std::vector<Partition> v;
  std::ifstream in("/proc/partitions");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    Partition p;
    unsigned long long blocks = 0;
    if (f >> p.major >> p.minor >> blocks >> p.name) v.push_back(p);
  }
  return v;
}

// The kernel's name of device maj:min in /proc/partitions, "" when not listed.
std::string name_in(const std::vector<Partition>& all, unsigned maj, unsigned min) {
  for (const Partition& p : all)
    if (p.major == maj && p.minor == min) return p.name;
  return "";
}

// The whole disk a partition belongs to, by the kernel's naming: sda1 -> sda,
// nvme0n1p2 -> nvme0n1, mmcblk0p1 -> mmcblk0. The name itself when it is a disk.
std::string whole_disk(const std::string& name, unsigned major, const std::vector<Partition>& all) {
  std::string best = name;
  size_t best_len = 0;
  for (const Partition& p : all) {
    if (p.major != major || p.name.size() >= name.size() || name.compare(0, p.name.size(), p.name) != 0) continue;
    size_t i = p.name.size();
    if (name[i] == 'p') ++i;
    if (i == name.size() || name.find_first_not_of("0123456789", i) != std::string::npos) continue;
    if (p.name.size() > best_len) {
      best = p.name;
      best_len = p.name.size();
    }
  }
  return best;
}

}  // namespace

std::string block_device_name(dev_t id) {
  const std::string uevent = "/sys/dev/block/" + std::to_string(major(id)) + ":" + std::to_string(minor(id)) + "/uevent";
  std::ifstream in(uevent);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("DEVNAME=", 0) == 0) return line.substr(8);
  return name_in(proc_partitions(), major(id), minor(id));
}

bool block_device_of(const std::string& dir, const std::string& fs_type, BlockDevice& dev, std::string& why) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    why = "stat(" + dir + ") failed";
    return false;
  }
  dev.id = st.st_dev;
  const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
  if (maj == 0) {  // anonymous: tmpfs, overlay, NFS, FUSE, btrfs
    why = fs_type + " has no block device of its own";
    return false;
  }
  const std::string link = "/sys/dev/block/" + std::to_string(maj) + ":" + std::to_string(min);
  char real[PATH_MAX];
  if (realpath(link.c_str(), real)) {
    std::string path = real;
    if (access((path + "/partition").c_str(), F_OK) == 0) path = path.substr(0, path.rfind('/'));  // the disk
    dev.name = path.substr(path.rfind('/') + 1);
    dev.stat_path = path + "/stat";
  } else {
    // No sysfs (a chroot with only /proc): the kernel's own tables, by number.
    const std::vector<Partition> all = proc_partitions();
    const std::string name = name_in(all, maj, min);
    if (name.empty()) {
      why = "no " + link + " and no " + std::to_string(maj) + ":" + std::to_string(min) + " in /proc/partitions for " +
            fs_type;
      return false;
    }
    dev.name = whole_disk(name, maj, all);
    dev.stat_path.clear();
  }
  DiskBytes probe;
  if (!read_disk_bytes(dev, probe)) {
    why = "cannot read " + dev.source();
    return false;
  }
  return true;
}

bool read_disk_bytes(const BlockDevice& dev, DiskBytes& out) {
  // Both list: reads, merged, sectors read, ms, writes, merged, sectors written, ...
  uint64_t f[7];
  if (!dev.stat_path.empty()) {
    std::ifstream in(dev.stat_path);
    for (uint64_t& x : f)
      if (!(in >> x)) return false;
  } else {
    std::ifstream in("/proc/diskstats");  // "major minor name" before them
    std::string line;
    bool found = false;
    while (!found && std::getline(in, line)) {
      std::istringstream l(line);
      unsigned maj = 0, min = 0;
      std::string name;
      if (!(l >> maj >> min >> name) || name != dev.name) continue;
      found = true;
      for (uint64_t& x : f)
        if (!(l >> x)) return false;
    }
    if (!found) return false;
  }
  out.read = f[2] * 512;
  out.written = f[6] * 512;
  return true;
}

}  // namespace ds
