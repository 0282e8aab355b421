// Where a read or write that came back short goes on: the one rule of every retry
// loop (the transfer loop's, aio/io_loop.h; the plain pread/pwrite loops outside the
// timing, aio/workspace_set.h write_at and read_at, staging's --validate read-back).
// Through an O_DIRECT descriptor the next call's buffer address, file offset and
// length must be kDirectAlign-aligned again (else EINVAL): what a short call moved
// past its last aligned boundary is moved again from that boundary (a few bytes
// written or read twice). A call that moves less than an aligned unit from an
// aligned place makes no aligned progress; kStuckCalls of them in a row end the
// transfer (stuck_text says why) rather than loop forever.
#pragma once

#include <cstdint>
#include <string>

namespace ds {

// Calls in a row without aligned progress before a transfer is given up.
constexpr unsigned kStuckCalls = 3;

// Whether `fd` was opened O_DIRECT (fcntl F_GETFL; false when that fails).
bool fd_is_direct(int fd);

// After a call that started `done` bytes into a transfer of `total` bytes moved
// `moved` (0 < moved <= total - done): where the next call starts, `done + moved`,
// or through O_DIRECT (`direct`) short of `total` that rounded down to kDirectAlign.
// Equal to `done`: no aligned progress.
uint64_t resume_at(uint64_t done, uint64_t moved, uint64_t total, bool direct);

// Whether the file behind `fd` ends at or before `offset` (fstat: a regular file's
// size; false where fstat fails or it is no regular file). A short O_DIRECT read that
// reached the end of its file (a truncated shard, at a size O_DIRECT cannot resume
// from) is told as the end of the file, not retried from its aligned place until it
// is stuck.
bool file_ends_by(int fd, uint64_t offset);

// "moved <moved> bytes <calls> times in a row, less than the 4096 bytes O_DIRECT moves
// at a time: no progress".
std::string stuck_text(uint64_t moved, unsigned calls);

}  // namespace ds
