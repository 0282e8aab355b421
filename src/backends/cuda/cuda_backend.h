// cuda: the CUDA driver API (libcuda.so.1, opened at run time). Copy-engine
// copies on streams, batched copies with cuMemcpyBatchAsync (or a cached CUDA
// graph of memcpy nodes on older drivers), and an SM copy kernel from our own PTX.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace ds {

std::unique_ptr<Backend> make_cuda_backend();

}  // namespace ds
