#include "aio/shard_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <fstream>
#include <sstream>

#include "aio/block_device.h"
#include "core/error.h"

namespace ds {

namespace {

constexpr uint64_t kExtMagic = 0xEF53, kTmpfsMagic = 0x01021994, kRamfsMagic = 0x858458f6,
                   kHugetlbfsMagic = 0x958458f6;

std::string magic_name(uint64_t m) {
  switch (m) {
    case kExtMagic: return "ext";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case kTmpfsMagic: return "tmpfs";
    case kRamfsMagic: return "ramfs";
    case kHugetlbfsMagic: return "hugetlbfs";
    case 0x794c7630: return "overlay";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    case 0x2FC12FC1: return "zfs";
    case 0xFF534D42: return "cifs";
    default: break;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "filesystem type 0x%llx", static_cast<unsigned long long>(m));
  return buf;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && oct.find_first_not_of("01234567") == std::string::npos) {
        out += static_cast<char>(std::strtol(oct.c_str(), nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// The type of the mount whose device number is `id` (mountinfo's third field,
// major:minor). By number, not by path: inside a chroot mountinfo lists the
// mounts by their paths outside it, or not at all. Every mount of one device
// has its type. "" when none is listed.
std::string mount_type(dev_t id) {
  std::ifstream in("/proc/self/mountinfo");
  const std::string want = std::to_string(major(id)) + ":" + std::to_string(minor(id));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string mount_id, parent, dev;
    if (!(fields >> mount_id >> parent >> dev) || dev != want) continue;
    const size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream tail(line.substr(sep + 3));
    std::string type;
    if (tail >> type) return unescape(type);
  }
  return "";
}

// Where no mount lists the device (a chroot): the ext family's magic is one for
// ext2, ext3 and ext4; a device the ext4 driver mounted has /proc/fs/ext4/<name>.
std::string ext_type(dev_t id) {
  const std::string name = block_device_name(id);
  struct stat st;
  if (!name.empty() && stat(("/proc/fs/ext4/" + name).c_str(), &st) == 0) return "ext4";
  return "ext";
}

void close_quietly(int fd) {
  if (fd >= 0) close(fd);
}

}  // namespace

FilesystemInfo filesystem_of(const std::string& dir) {
  struct statfs st;
  if (statfs(dir.c_str(), &st) != 0) throw sys_error("statfs(" + dir + ")", errno);
  FilesystemInfo info;
  info.magic = static_cast<uint64_t>(static_cast<unsigned long>(st.f_type)) & 0xFFFFFFFFULL;
  info.memory_backed =
      info.magic == kTmpfsMagic || info.magic == kRamfsMagic || info.magic == kHugetlbfsMagic;
  struct stat sd;
  if (stat(dir.c_str(), &sd) == 0) info.type = mount_type(sd.st_dev);
  if (info.type.empty()) info.type = info.magic == kExtMagic && stat(dir.c_str(), &sd) == 0 ? ext_type(sd.st_dev)
                                                                                           : magic_name(info.magic);
  return info;
}

Workspace::Workspace(const std::string& path) : path_(path) {
  while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
  if (path_.empty()) throw RunError("the workspace path is empty");
  // mkdir -p, remembering what we made.
  size_t pos = 0;
  for (;;) {
    pos = path_.find('/', pos + 1);
    const std::string prefix = path_.substr(0, pos);
    struct stat st;
    if (!prefix.empty() && prefix != ".") {
      if (stat(prefix.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
          throw RunError("workspace " + path_ + ": " + prefix + " is not a directory");
      } else if (errno == ENOENT) {
        if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
          const int err = errno;
          for (auto it = created_.rbegin(); it != created_.rend(); ++it) rmdir(it->c_str());
          created_.clear();
          throw RunError("cannot create workspace " + path_ + ": mkdir(" + prefix +
                         "): " + std::strerror(err));
        }
        created_.push_back(prefix);
      } else {
        throw RunError("workspace " + path_ + ": stat(" + prefix + "): " + std::strerror(errno));
      }
    }
    if (pos == std::string::npos) break;
  }
}

Workspace::~Workspace() {
  if (keep_) return;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) rmdir(it->c_str());
}

int probe_direct_io(const std::string& dir) {
  const std::string path = dir + "/dev-sandbox-aio." + std::to_string(getpid()) + ".probe";
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EINVAL) {
      unlink(path.c_str());  // some filesystems create the file before refusing the flag
      return EINVAL;
    }
    throw RunError("cannot create files in workspace " + dir + ": open(" + path + "): " +
                   std::strerror(err));
  }
  const size_t bytes = 4096;
  void* buf = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    const int err = errno;
    close(fd);
    unlink(path.c_str());
    throw sys_error("mmap(4096)", err);
  }
  std::memset(buf, 0x5a, bytes);
  ssize_t w;
  do {
    w = pwrite(fd, buf, bytes, 0);
  } while (w < 0 && errno == EINTR);
  const int err = w < 0 ? errno : 0;
  munmap(buf, bytes);
  close(fd);
  unlink(path.c_str());
  if (err == EINVAL) return EINVAL;
  if (err != 0)
    throw RunError("cannot write files in workspace " + dir + ": pwrite(" + path + ", O_DIRECT): " +
                   std::strerror(err));
  if (w != static_cast<ssize_t>(bytes))
    throw RunError("cannot write files in workspace " + dir + ": pwrite(" + path +
                   ") wrote " + std::to_string(w) + " of 4096 bytes");
  return 0;
}

ShardFiles::ShardFiles(std::string dir, std::string tag, long pid)
    : dir_(std::move(dir)), tag_(std::move(tag)), pid_(pid != 0 ? pid : static_cast<long>(getpid())) {}

void ShardFiles::attach(bool direct) {
  const std::string p = path(fds_.size());
  const int fd = open(p.c_str(), O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (fd < 0) throw sys_error("open(" + p + (direct ? ", O_DIRECT)" : ")") + " made by rank 0", errno);
  fds_.push_back(fd);
}

std::string ShardFiles::path(size_t i) const {
  return dir_ + "/dev-sandbox-aio." + std::to_string(pid_) + "." + (tag_.empty() ? "" : tag_ + ".") +
         std::to_string(i);
}

int ShardFiles::add(uint64_t bytes, bool direct) {
  const std::string p = path(fds_.size());
  const int fd =
      open(p.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0) throw sys_error("open(" + p + (direct ? ", O_DIRECT)" : ")"), errno);
  int rc;
  do {
    rc = fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    if (err == ENOSPC || err == EDQUOT) {
      close_quietly(fd);
      unlink(p.c_str());
      return err;
    }
    if (err != EOPNOTSUPP && err != ENOSYS) {
      close_quietly(fd);
      unlink(p.c_str());
      throw sys_error("fallocate(" + p + ", " + std::to_string(bytes) + ")", err);
    }
    // No reservation on this filesystem: the dump allocates as it writes.
  }
  fds_.push_back(fd);
  return 0;
}

ShardFiles::~ShardFiles() {
  for (size_t i = 0; i < fds_.size(); ++i) {
    close_quietly(fds_[i]);
    if (!keep_) unlink(path(i).c_str());
  }
}

}  // namespace ds
