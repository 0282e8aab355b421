// The block files of a staged measurement: one file per block, holding its tasks'
// fragments back to back (padded to 4096 bytes for O_DIRECT), one set per card or
// one set for all (--shared); laid out untimed before the first pass and on the disk
// before it starts. A fragment's bytes are the pattern of (owner, fragment index),
// so what a card holds and what a file holds can be checked against each other.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aio/io_loop.h"
#include "aio/shard_files.h"
#include "aio/workspace_set.h"
#include "core/notes.h"
#include "staging/staged_params.h"

namespace ds {

// Where fragment i (of one card's layout) is inside its block file.
class BlockPlaces {
 public:
  explicit BlockPlaces(const StagedParams& p);
  uint64_t file_offset(uint64_t fragment) const;
  uint64_t block_of(uint64_t fragment) const { return fragment / per_file_; }

 private:
  uint64_t per_task_, tasks_per_file_, task_bytes_, per_file_;
  std::vector<uint64_t> task_prefix_;
};

// One set of block files: file b is block b, moved whole (extent b).
struct CardFiles {
  std::unique_ptr<ShardSet> files;
  std::vector<Extent> extents;  // per block: fd, 0, file_bytes
  int owner = 0;                // whose pattern they hold (or are to hold)
};

// What the files hold once laid out: load's pattern, or (offload) bytes no card's
// pattern has, so a block the pipeline never writes fails the check.
enum class BlockContent { kPattern, kPoison };

// Block b's bytes as the store holds them: each fragment the pattern of (owner,
// fragment), the padding to 4096 the pattern of (owner, fragments + b).
void fill_block(const StagedParams& p, const BlockPlaces& at, int owner, uint64_t b, char* buf);
// The poison of a file (BlockContent::kPoison): what a check never accepts.
void fill_poison(char* buf, size_t bytes);
// The first fragment of block b in `buf` that differs from the pattern: its index
// and the offset in the file (return true), or false when the block is right.
bool check_block(const StagedParams& p, const BlockPlaces& at, int owner, uint64_t b, const char* buf,
                 uint64_t* fragment, uint64_t* offset);

struct BlockFilesRequest {
  const StagedParams& p;
  WorkspaceSet& ws;
  bool direct;              // O_DIRECT descriptors (else buffered)
  std::string command;      // "load", "offload": file names and messages
  BlockContent content;
};

// Checks the workspaces' free space for every set, then writes every card's files (or
// one set with --shared), fdatasync'ed; out_of_space naming the workspace on ENOSPC
// (the files made so far are the caller's WorkspaceSet's to remove).
std::vector<CardFiles> lay_out_block_files(const BlockFilesRequest& r);

// --keep, after a successful run: every file of these sets stays, and the workspaces
// made for them; the note says how many and where.
void keep_block_files(const std::vector<const std::vector<CardFiles>*>& sets, WorkspaceSet& ws, Notes& notes);

}  // namespace ds
