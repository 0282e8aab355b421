#include "aio/workspace_set.h"

#include <unistd.h>

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "aio/block_device.h"
#include "aio/short_transfer.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/units.h"

namespace ds {

std::string WorkspaceSet::dirs_text() const {
  std::string t;
  for (size_t w = 0; w < count(); ++w) t += (w ? ", " : "") + workspaces[w]->path() + " (" + fs[w].type + ")";
  return t;
}

std::string WorkspaceSet::types() const {
  std::vector<std::string> seen;
  std::string t;
  for (const FilesystemInfo& x : fs)
    if (std::find(seen.begin(), seen.end(), x.type) == seen.end()) {
      seen.push_back(x.type);
      t += (t.empty() ? "" : "+") + x.type;
    }
  return t;
}

std::string nearest_existing_parent(const std::string& path) {
  std::string p = path;
  for (;;) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    struct stat st;
    if (!p.empty() && stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return p;
    const size_t slash = p.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    p = p.substr(0, slash);
  }
}

void check_workspaces_exist(const std::vector<std::string>& dirs, bool create) {
  if (create) return;
  for (const std::string& dir : dirs) {
    struct stat st;
    if (stat(dir.c_str(), &st) == 0 || errno != ENOENT) continue;  // not a directory, unreadable: said when opened
    const std::string parent = nearest_existing_parent(dir);
    std::string on;
    try {
      const FilesystemInfo fs = filesystem_of(parent);
      BlockDevice dev;
      std::string why;
      on = ", on " + (block_device_of(parent, fs.type, dev, why) ? dev.name + ":" : std::string()) + fs.type;
    } catch (const std::exception&) {
    }
    throw UsageError("option --workspace got '" + dir + "': no such directory (the nearest existing parent is " +
                     parent + on + "); create it, or pass --create-workspace (made for this run and removed after it)");
  }
}

std::string WorkspaceSet::disks() const {
  std::vector<std::string> seen;
  std::string t;
  for (size_t w = 0; w < fs.size(); ++w) {
    const std::string one = (w < disk.size() && !disk[w].empty() ? disk[w] + ":" : std::string()) + fs[w].type;
    if (std::find(seen.begin(), seen.end(), one) != seen.end()) continue;
    seen.push_back(one);
    t += (t.empty() ? "" : "+") + one;
  }
  return t;
}

bool open_workspaces(WorkspaceSet& files, const std::vector<std::string>& dirs, bool buffered, Notes& notes) {
  const size_t nws = dirs.size();
  for (const std::string& dir : dirs) {
    check_interrupted();
    files.workspaces.push_back(std::make_unique<Workspace>(dir));
  }
  std::vector<std::string> refusals(nws);
  bool direct = true;
  for (size_t w = 0; w < nws; ++w) {
    const std::string& path = files.workspaces[w]->path();
    files.fs.push_back(filesystem_of(path));
    const FilesystemInfo& fs = files.fs.back();
    BlockDevice dev;
    std::string no_device;
    files.disk.push_back(block_device_of(path, fs.type, dev, no_device) ? dev.name : std::string());
    if (fs.memory_backed)
      refusals[w] = "the workspace " + path + " is on " + fs.type +
                    ", which keeps files in memory and does not do O_DIRECT (newer kernels accept the "
                    "flag there but still use the page cache)";
    else if (probe_direct_io(path) == EINVAL)
      refusals[w] = "the workspace " + path + " is on " + fs.type +
                    ", which refuses O_DIRECT (open or write with O_DIRECT: Invalid argument)";
    if (!refusals[w].empty() && !buffered)
      throw RunError(refusals[w] + "; pass --buffered to measure buffered (page-cache) I/O there, or "
                                   "choose a workspace on a disk filesystem");
    if (!refusals[w].empty()) direct = false;
  }
  for (size_t w = 0; w < nws; ++w) {
    const std::string& path = files.workspaces[w]->path();
    if (!refusals[w].empty())
      notes.note(refusals[w] + "; measuring buffered (page-cache) I/O as --buffered allows");
    else if (buffered && direct)
      notes.note(files.fs[w].type + " at " + path + " does O_DIRECT, so --buffered changes nothing: the I/O is O_DIRECT");
    else if (!direct)
      notes.note(files.fs[w].type + " at " + path +
                 " does O_DIRECT, but the run is buffered in every workspace (another one refuses O_DIRECT)");
  }
  return direct;
}

void check_workspace_space(const WorkspaceSet& files, const std::function<uint64_t(size_t)>& need_of,
                           const std::function<std::string(size_t)>& what, const std::string& hint) {
  for (size_t w = 0; w < files.count(); ++w) {
    const std::string& path = files.workspaces[w]->path();
    const uint64_t need = need_of(w);
    struct statvfs sv;
    if (statvfs(path.c_str(), &sv) != 0) throw sys_error("statvfs(" + path + ")", errno);
    const uint64_t avail = static_cast<uint64_t>(sv.f_bavail) * static_cast<uint64_t>(sv.f_frsize);
    if (need > avail)
      throw RunError("the workspace " + path + " (" + files.fs[w].type + ") has " + format_bytes(avail) +
                     " free, but its share of the shard files needs " + format_bytes(need) + " (" + what(w) +
                     "): " + std::strerror(ENOSPC) + "; nothing was written; " + hint);
  }
}

RunError out_of_space(const std::string& who, const WorkspaceSet& set, size_t w, const std::string& doing,
                      const std::string& whose, const std::string& fit, int err, const std::string& then) {
  return RunError(who + " ran out of space in " + set.workspaces[w]->path() + " (" + set.fs[w].type + ") while " +
                  doing + whose + ": " + fit + " fit: " + std::strerror(err) + "; " + then);
}

int write_at(int fd, const std::string& path, const char* buf, size_t n, uint64_t offset) {
  const bool direct = fd_is_direct(fd);
  uint64_t put = 0;
  unsigned stuck = 0;
  while (put < n) {
    const ssize_t r = pwrite(fd, buf + put, n - put, static_cast<off_t>(offset + put));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == ENOSPC || errno == EDQUOT)) return errno;
    if (r < 0) throw sys_error("pwrite(" + path + ")", errno);
    if (r == 0) return ENOSPC;
    const uint64_t next = resume_at(put, static_cast<uint64_t>(r), n, direct);
    stuck = next == put ? stuck + 1 : 0;
    if (stuck >= kStuckCalls)
      throw RunError("pwrite(" + path + ") at offset " + std::to_string(offset + put) + ": " +
                     stuck_text(static_cast<uint64_t>(r), stuck));
    put = next;
  }
  return 0;
}

uint64_t read_at(int fd, const std::string& path, char* buf, size_t n, uint64_t offset, const std::string& why) {
  const bool direct = fd_is_direct(fd);
  uint64_t got = 0;
  unsigned stuck = 0;
  while (got < n) {
    const ssize_t r = pread(fd, buf + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw sys_error("pread(" + path + ")" + why, errno);
    if (r == 0) return got;
    // Through O_DIRECT a short read at the end of the file (a truncated shard) would
    // go on from its aligned place to the same short end: the file ends there.
    if (direct && static_cast<uint64_t>(r) < n - got && file_ends_by(fd, offset + got + static_cast<uint64_t>(r)))
      return got + static_cast<uint64_t>(r);
    const uint64_t next = resume_at(got, static_cast<uint64_t>(r), n, direct);
    stuck = next == got ? stuck + 1 : 0;
    if (stuck >= kStuckCalls)
      throw RunError("pread(" + path + ")" + why + " at offset " + std::to_string(offset + got) + ": " +
                     stuck_text(static_cast<uint64_t>(r), stuck));
    got = next;
  }
  return got;
}

void check_odirect_aligned(const void* p, const std::string& what) {
  if (!p || reinterpret_cast<uintptr_t>(p) % kDirectAlign != 0)
    throw RunError(what + " not " + std::to_string(kDirectAlign) + "-byte aligned, which O_DIRECT needs");
}

}  // namespace ds
