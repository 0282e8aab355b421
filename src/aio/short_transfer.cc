#include "aio/short_transfer.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "aio/io_engine.h"

namespace ds {

bool fd_is_direct(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_DIRECT) != 0;
}

uint64_t resume_at(uint64_t done, uint64_t moved, uint64_t total, bool direct) {
  const uint64_t next = done + moved;
  if (!direct || next >= total) return next;
  const uint64_t aligned = next / kDirectAlign * kDirectAlign;
  return aligned > done ? aligned : done;
}

bool file_ends_by(int fd, uint64_t offset) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= offset;
}

std::string stuck_text(uint64_t moved, unsigned calls) {
  return "moved " + std::to_string(moved) + " bytes " + std::to_string(calls) +
         " times in a row, less than the " + std::to_string(kDirectAlign) +
         " bytes O_DIRECT moves at a time: no progress";
}

}  // namespace ds
