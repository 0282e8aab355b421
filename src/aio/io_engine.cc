#include "aio/io_engine.h"

namespace ds {

const char* engine_option_name(AioEngineKind kind) {
  return kind == AioEngineKind::kLibaio ? "libaio" : "io_uring";
}

const char* engine_method_label(AioEngineKind kind) {
  return kind == AioEngineKind::kLibaio ? "LIBAIO" : "IO_URING";
}

std::unique_ptr<IoEngine> make_io_engine(AioEngineKind kind, unsigned depth) {
  return kind == AioEngineKind::kLibaio ? make_libaio_engine(depth) : make_uring_engine(depth);
}

}  // namespace ds
