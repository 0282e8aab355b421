// ascend: AscendCL on Ascend NPUs. Copy engine cases use aclrtMemcpyAsync
// and the batch copy API; the direct path is one FFTS+ task of SDMA contexts per IO
// task, launched through the Ascend runtime (libruntime.so).
#pragma once

#include <memory>

#include "backend/backend.h"

namespace ds {

std::unique_ptr<Backend> make_ascend_backend();

}  // namespace ds
