// What `aio` and `load` share about their workspaces: the directories (--workspace,
// repeatable) with their filesystems, the checks made before any shard file is
// written (memory filesystems refused, the O_DIRECT probe, --buffered notes, free
// space per workspace), and one worker's shard files spread over them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aio/io_engine.h"
#include "aio/shard_files.h"
#include "core/error.h"
#include "core/notes.h"

namespace ds {

// The run's workspaces (--workspace, repeatable) and their filesystems.
struct WorkspaceSet {
  std::vector<std::unique_ptr<Workspace>> workspaces;
  std::vector<FilesystemInfo> fs;
  std::vector<std::string> disk;  // the block device under each ("vda"), "" where none is found (tmpfs)

  size_t count() const { return workspaces.size(); }
  // "DIR (ext4)", or "DIR1 (ext4), DIR2 (xfs)".
  std::string dirs_text() const;
  // The filesystem types, each once: "ext4", "ext4+xfs".
  std::string types() const;
  // What the files are on, each once, for a result's From/To: "vda:ext4",
  // "vda:ext4+nvme0n1:xfs"; the filesystem alone where it has no block device ("tmpfs").
  std::string disks() const;
};

// Before anything else of a run: a directory of `dirs` that does not exist is a
// UsageError unless `create` (--create-workspace), so a typo never benchmarks
// another disk: "option --workspace got '/data/kv': no such directory (the nearest
// existing parent is /data, on vda:ext4); create it, or pass --create-workspace (made for
// this run and removed after it)".
void check_workspaces_exist(const std::vector<std::string>& dirs, bool create);

// The nearest existing directory at or above `path` ("." for a relative path none
// of whose parents exist, "/" at the top).
std::string nearest_existing_parent(const std::string& path);

// Makes every directory of `dirs` in `set` (created if missing, removed again by
// the set: check_workspaces_exist() refused that unless asked) and checks its filesystem: a memory filesystem, or one that refuses
// O_DIRECT, is refused (RunError saying so) unless `buffered`, which lets the run
// use the page cache there (a note to `notes` says so). Returns whether the run's
// I/O is O_DIRECT (false: buffered in every workspace).
bool open_workspaces(WorkspaceSet& set, const std::vector<std::string>& dirs, bool buffered, Notes& notes);

// Several workspaces: each one's share (`need(w)` bytes) must fit its free space
// before any is written, so a full one is found before the others were filled.
// RunError: "the workspace DIR (fs) has X free, but its share of the shard files
// needs Y (<what(w)>): No space left on device; nothing was written; <hint>".
void check_workspace_space(const WorkspaceSet& set, const std::function<uint64_t(size_t)>& need,
                           const std::function<std::string(size_t)>& what, const std::string& hint);

// One worker's shard files over the workspaces: file f lives in workspace f % W,
// as its (f / W)-th file there. Made after the WorkspaceSet it refers to, so the
// files are closed and removed before the directories go.
class ShardSet {
 public:
  explicit ShardSet(const WorkspaceSet& ws) : ws_(ws) {}
  std::vector<std::unique_ptr<ShardFiles>> files;

  size_t count() const { return ws_.count(); }
  size_t where(size_t f) const { return f % count(); }
  int fd(size_t f) const { return files[where(f)]->fd(f / count()); }
  std::string path(size_t f) const { return files[where(f)]->path(f / count()); }
  const std::string& dir(size_t f) const { return ws_.workspaces[where(f)]->path(); }
  const FilesystemInfo& fs_of(size_t f) const { return ws_.fs[where(f)]; }
  size_t size() const {
    size_t n = 0;
    for (const auto& x : files) n += x->size();
    return n;
  }

 private:
  const WorkspaceSet& ws_;
};

// A shard or block file that did not fit, as aio and load say it: "<who> ran out of
// space in DIR (fs) while <doing><whose>: <fit> fit: <strerror(err)>; <then>".
RunError out_of_space(const std::string& who, const WorkspaceSet& set, size_t w, const std::string& doing,
                      const std::string& whose, const std::string& fit, int err, const std::string& then);

// Writes `n` bytes of `buf` at `offset` of `fd` with plain pwrite, outside any
// timing: 0, or the errno of a full filesystem (ENOSPC, EDQUOT; a write that writes
// nothing counts as ENOSPC). RunError naming pwrite(path) for anything else. A short
// write goes on where aio/short_transfer.h says (through O_DIRECT from its last
// aligned boundary); one that makes no aligned progress kStuckCalls times in a row
// is a RunError "pwrite(path) moved ... no progress".
int write_at(int fd, const std::string& path, const char* buf, size_t n, uint64_t offset);

// Reads `n` bytes at `offset` of `fd` into `buf` with plain pread, outside any
// timing, short reads continued as write_at's: the bytes read (fewer only where the
// file ends, also where a short O_DIRECT read reached it). RunError naming
// pread(path)<why> for a failed call or no progress.
uint64_t read_at(int fd, const std::string& path, char* buf, size_t n, uint64_t offset, const std::string& why = "");

// RunError "<what> not 4096-byte aligned, which O_DIRECT needs" (what: "the staging
// buffers are") unless `p` is.
void check_odirect_aligned(const void* p, const std::string& what);

}  // namespace ds
