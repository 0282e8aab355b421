#include "staging/block_files.h"

#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "cluster/cluster.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/units.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"

namespace ds {

unsigned StagedParams::staging_buffers() const {
  const uint64_t k = staging ? staging : iodepth;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(k, files())));
}

Layout StagedParams::contiguous_layout() const {
  std::vector<uint64_t> slots(static_cast<size_t>(files()));
  for (size_t b = 0; b < slots.size(); ++b) slots[b] = b;
  return layout.paged(slots, table.pool, tasks_per_file);
}

BlockPlaces::BlockPlaces(const StagedParams& p)
    : per_task_(p.layout.fragments_per_task()),
      tasks_per_file_(p.tasks_per_file),
      task_bytes_(p.layout.task_bytes()),
      per_file_(p.fragments_per_file()) {
  uint64_t at = 0;
  for (uint64_t b : p.layout.task_fragments()) {
    task_prefix_.push_back(at);
    at += b;
  }
}

uint64_t BlockPlaces::file_offset(uint64_t i) const {
  const uint64_t task = i / per_task_;
  return (task % tasks_per_file_) * task_bytes_ + task_prefix_[static_cast<size_t>(i % per_task_)];
}

void fill_block(const StagedParams& p, const BlockPlaces& at, int owner, uint64_t b, char* buf) {
  const uint64_t per_file = p.fragments_per_file();
  pattern_fill(buf, static_cast<size_t>(p.file_bytes()), pattern_key(owner, p.layout.fragments() + b));
  for (uint64_t i = b * per_file; i < (b + 1) * per_file; ++i)
    pattern_fill(buf + at.file_offset(i), static_cast<size_t>(p.layout.fragment(i).bytes), pattern_key(owner, i));
}

// Constant bytes: no fragment's pattern is a run of one byte value over 8 bytes.
void fill_poison(char* buf, size_t bytes) { std::memset(buf, 0xA5, bytes); }

bool check_block(const StagedParams& p, const BlockPlaces& at, int owner, uint64_t b, const char* buf,
                 uint64_t* fragment, uint64_t* offset) {
  const uint64_t per_file = p.fragments_per_file();
  for (uint64_t i = b * per_file; i < (b + 1) * per_file; ++i) {
    const uint64_t where = at.file_offset(i);
    const int64_t off = pattern_check(buf + where, static_cast<size_t>(p.layout.fragment(i).bytes), pattern_key(owner, i));
    if (off >= 0) {
      *fragment = i;
      *offset = where + static_cast<uint64_t>(off);
      return true;
    }
  }
  return false;
}

namespace {

void check_space(const BlockFilesRequest& r, size_t nsets) {
  const size_t nws = r.ws.count();
  const uint64_t nfiles = r.p.files();
  auto files_in = [&](size_t w) -> uint64_t { return nfiles > w ? (nfiles - w + nws - 1) / nws : 0; };
  check_workspace_space(
      r.ws, [&](size_t w) { return files_in(w) * r.p.file_bytes() * nsets; },
      [&](size_t w) {
        return std::to_string(files_in(w)) + " block files of " + std::to_string(nfiles) +
               (nsets > 1 ? ", for each of " + std::to_string(nsets) + " cards" : "");
      },
      "free space there, or lower -n, -s or -d" + std::string(r.command == "load" ? " (or use --shared)" : ""));
}

void lay_out_set(const BlockFilesRequest& r, CardFiles& set, size_t c, size_t nsets, const std::string& tag,
                 char* buf) {
  const StagedParams& p = r.p;
  const BlockPlaces at(p);
  const uint64_t nfiles = p.files();
  set.files = std::make_unique<ShardSet>(r.ws);
  for (size_t w = 0; w < r.ws.count(); ++w)
    set.files->files.push_back(std::make_unique<ShardFiles>(r.ws.workspaces[w]->path(), tag));
  if (r.content == BlockContent::kPoison) fill_poison(buf, static_cast<size_t>(p.file_bytes()));
  for (uint64_t b = 0; b < nfiles; ++b) {
    check_interrupted();
    const size_t f = static_cast<size_t>(b);
    const size_t w = set.files->where(f);
    int err = set.files->files[w]->add(p.file_bytes(), r.direct);
    if (err == 0) {
      if (r.content == BlockContent::kPattern) fill_block(p, at, set.owner, b, buf);
      err = write_at(set.files->fd(f), set.files->path(f), buf, static_cast<size_t>(p.file_bytes()), 0);
    }
    if (err != 0)
      throw out_of_space(r.command, r.ws, w, "laying out the block files",
                         nsets > 1 ? " of card " + std::to_string(c) + " of " + std::to_string(nsets) : "",
                         std::to_string(b) + " of " + std::to_string(nfiles) + " files of " +
                             format_bytes(p.file_bytes()),
                         err, "the block files were removed; free space or lower -n, -s or -d");
    set.extents.push_back(Extent{set.files->fd(f), 0, static_cast<size_t>(p.file_bytes())});
  }
  // What was written goes to the disk now, not during the first pass.
  for (uint64_t b = 0; b < nfiles; ++b)
    if (fdatasync(set.files->fd(static_cast<size_t>(b))) != 0)
      throw sys_error("fdatasync(" + set.files->path(static_cast<size_t>(b)) + ")", errno);
}

}  // namespace

std::vector<CardFiles> lay_out_block_files(const BlockFilesRequest& r) {
  const StagedParams& p = r.p;
  const bool across = p.cluster && p.cluster->multi();
  const size_t nsets = p.shared ? 1 : static_cast<size_t>(p.devices);
  check_space(r, nsets);
  auto block = map_anonymous(static_cast<size_t>(p.file_bytes()), true);  // 4 KiB aligned, as O_DIRECT needs
  char* buf = static_cast<char*>(block->host_ptr());
  std::vector<CardFiles> sets(nsets);
  for (size_t c = 0; c < nsets; ++c) {
    sets[c].owner = p.shared ? 0 : static_cast<int>(c);
    // Across ranks every rank its own files, named with its rank.
    const std::string tag = (across ? r.command + "-r" + std::to_string(p.cluster->rank()) : r.command) +
                            (p.shared ? "" : "-c" + std::to_string(c));
    lay_out_set(r, sets[c], c, nsets, tag, buf);
  }
  return sets;
}

void keep_block_files(const std::vector<const std::vector<CardFiles>*>& sets, WorkspaceSet& ws, Notes& notes) {
  size_t kept = 0;
  for (const std::vector<CardFiles>* of : sets)
    for (const CardFiles& set : *of)
      for (const auto& f : set.files->files) {
        f->keep();
        kept += f->size();
      }
  for (size_t w = 0; w < ws.count(); ++w) ws.workspaces[w]->keep();
  notes.tell("kept " + std::to_string(kept) + " block files in " + ws.dirs_text() + " (--keep)");
}

}  // namespace ds
