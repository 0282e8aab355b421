#include "backend/backend.h"

#include "core/error.h"

namespace ds {

const char* to_string(CopyDir dir) {
  switch (dir) {
    case CopyDir::kH2D: return "H2D";
    case CopyDir::kD2H: return "D2H";
    case CopyDir::kD2D: return "D2D";
    case CopyDir::kH2H: return "H2H";
  }
  return "?";
}

void Device::kernel_copy(const CopyDesc&, Stream&) {
  throw RunError("kernel copies are not available on this backend");
}

bool Device::enable_peer_access(int, std::string*) { return true; }
void Device::prepare_batch(const CopyDesc*, size_t, CopyDir) {}
void Device::prepare_direct(const CopyDesc*, size_t) {}
void Device::prepare_kernel_copy() {}

}  // namespace ds
