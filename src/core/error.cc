#include "core/error.h"

#include <cstring>

namespace ds {

RunError sys_error(const std::string& call, int err) {
  return RunError(call + ": " + std::strerror(err));
}

}  // namespace ds
