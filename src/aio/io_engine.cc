#include "aio/io_engine.h"

#include "core/error.h"

namespace ds {

const char* engine_option_name(AioEngineKind kind) {
  return kind == AioEngineKind::kLibaio ? "libaio" : "io_uring";
}

const char* engine_method_label(AioEngineKind kind) {
  return kind == AioEngineKind::kLibaio ? "LIBAIO" : "IO_URING";
}

// An engine whose library was not found at build time (doctor says so).
#if !DS_HAVE_LIBAIO
std::unique_ptr<IoEngine> make_libaio_engine(unsigned) {
  throw RunError("this dev-sandbox was built without libaio (Debian: libaio-dev; rebuild), so --engine libaio is "
                 "not available; use --engine io_uring");
}
#endif
#if !DS_HAVE_URING
std::unique_ptr<IoEngine> make_uring_engine(unsigned) {
  throw RunError("this dev-sandbox was built without liburing (Debian: liburing-dev; rebuild), so --engine "
                 "io_uring is not available; use --engine libaio");
}
#endif

std::unique_ptr<IoEngine> make_io_engine(AioEngineKind kind, unsigned depth) {
  return kind == AioEngineKind::kLibaio ? make_libaio_engine(depth) : make_uring_engine(depth);
}

}  // namespace ds
