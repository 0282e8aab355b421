// The aio workspace and its shard files: what is created is removed again by
// the destructors (at the end, on failure, on Ctrl-C) unless kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct FilesystemInfo {
  std::string type;        // "ext4", "xfs", "tmpfs", ... (mount table, else statfs f_type)
  uint64_t magic = 0;      // statfs f_type
  bool memory_backed = false;  // tmpfs, ramfs: no disk below, O_DIRECT has no meaning
};

// The filesystem `dir` lives on. Throws RunError when statfs fails.
FilesystemInfo filesystem_of(const std::string& dir);

// The workspace directory, created with its missing parents; the directories it
// created are removed at destruction (when empty) unless keep() was called.
class Workspace {
 public:
  explicit Workspace(const std::string& path);  // RunError: cannot create / not a directory
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  const std::string& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  std::vector<std::string> created_;  // parents first
  bool keep_ = false;
};

// Whether files in `dir` can be written with O_DIRECT: 0 when they can, EINVAL
// when the filesystem refuses the flag (at open or at the first write). A probe
// file is created and removed. Other failures (read-only, permission, full)
// throw RunError: the workspace is not writable.
int probe_direct_io(const std::string& dir);

// The shard files of one run, dev-sandbox-aio.<pid>.<index> in the workspace, or
// dev-sandbox-aio.<pid>.<tag>.<index> with a tag (aio --workers: "w<worker>").
// `pid`: the process that made them (0: this one); another process of the run
// attaches to them (aio --files shared: rank 0 creates, the others attach).
class ShardFiles {
 public:
  explicit ShardFiles(std::string dir, std::string tag = "", long pid = 0);
  ~ShardFiles();  // closes, and removes unless keep()
  ShardFiles(const ShardFiles&) = delete;
  ShardFiles& operator=(const ShardFiles&) = delete;

  // Creates the next shard (O_EXCL; O_DIRECT when `direct`) and reserves its
  // `bytes` on disk with fallocate where the filesystem can, as fio does, so
  // block allocation stays out of the timed dump. Returns 0, or the errno of a
  // failed reservation (ENOSPC, EDQUOT) after removing that shard; throws
  // RunError for anything else.
  int add(uint64_t bytes, bool direct);

  // Opens the next shard as made by another process (read-write; O_DIRECT when
  // `direct`). RunError naming open() when it is not there. Removed at the end
  // like a created one unless keep().
  void attach(bool direct);

  size_t size() const { return fds_.size(); }
  int fd(size_t i) const { return fds_[i]; }
  std::string path(size_t i) const;
  const std::string& dir() const { return dir_; }
  void keep() { keep_ = true; }

 private:
  std::string dir_;
  std::string tag_;
  long pid_;  // of the process that made them: their names, also as told by a child
  std::vector<int> fds_;
  bool keep_ = false;
};

}  // namespace ds
