// Memory shared with forked children: an anonymous MAP_SHARED mapping made before
// fork, so it has no name and cannot outlive the processes that map it.
#pragma once

#include <cstddef>

namespace ds {

class SharedMapping {
 public:
  explicit SharedMapping(size_t bytes);
  ~SharedMapping();
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_;
  size_t bytes_;
};

}  // namespace ds
