#include "runner/shared_mapping.h"

#include <sys/mman.h>

#include <cerrno>

#include "core/error.h"

namespace ds {

SharedMapping::SharedMapping(size_t bytes) : bytes_(bytes) {
  ptr_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (ptr_ == MAP_FAILED) throw sys_error("mmap(MAP_SHARED|MAP_ANONYMOUS)", errno);
}

SharedMapping::~SharedMapping() { munmap(ptr_, bytes_); }

}  // namespace ds
