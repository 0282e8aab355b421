// What the end-to-end tests of the disk commands (aio, load) share: a fresh
// directory on a disk filesystem that does O_DIRECT, tmpfs detection, a small
// tmpfs mount for a full filesystem, and directory listings.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace dstest {
namespace disk {

constexpr long kTmpfsMagic = 0x01021994;

inline bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

inline bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

inline std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> v;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        v.push_back(e->d_name);
    closedir(d);
  }
  return v;
}

inline void remove_tree(const std::string& dir) {
  for (const auto& e : entries(dir)) {
    const std::string path = dir + "/" + e;
    if (unlink(path.c_str()) != 0 && errno == EISDIR) remove_tree(path);
  }
  rmdir(dir.c_str());
}

inline bool is_tmpfs(const std::string& path) {
  struct statfs st;
  return statfs(path.c_str(), &st) == 0 && static_cast<long>(st.f_type) == kTmpfsMagic;
}

// A fresh directory on a disk filesystem that does O_DIRECT (the build tree,
// else /var/tmp); empty when there is none. Removed, with what a test left in it,
// when the test process that made it exits (not a forked child of it).
inline std::string disk_base() {
  struct Made {
    std::string dir;
    pid_t by = getpid();
    ~Made() {
      if (!dir.empty() && getpid() == by) remove_tree(dir);
    }
  };
  static const Made base{[] {
    for (const std::string cand : {std::string(DS_AIO_TEST_BASE), std::string("/var/tmp")}) {
      std::string tmpl = cand + "/aio-e2e-XXXXXX";
      if (!mkdtemp(&tmpl[0])) continue;
      if (!is_tmpfs(tmpl) && dstest::direct_io_works(tmpl)) return tmpl;  // cli_harness.h
      rmdir(tmpl.c_str());
    }
    return std::string();
  }()};
  return base.dir;
}

inline std::string unique_name(const std::string& stem) {
  static int serial = 0;
  return stem + "-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
}

// A 4 MiB tmpfs mounted on a fresh directory (root only), unmounted and removed
// again when it goes; `error` says why there is none.
struct SmallTmpfs {
  std::string dir, error;
  SmallTmpfs() {
    char tmpl[] = "/tmp/ds-disk-enospc-XXXXXX";
    if (!mkdtemp(tmpl)) {
      error = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    if (mount("tmpfs", tmpl, "tmpfs", 0, "size=4M") != 0) {
      error = std::string("mount -t tmpfs -o size=4M not permitted here: ") + std::strerror(errno);
      rmdir(tmpl);
      return;
    }
    dir = tmpl;
  }
  ~SmallTmpfs() {
    if (dir.empty()) return;
    umount(dir.c_str());
    rmdir(dir.c_str());
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
};

}  // namespace disk
}  // namespace dstest
