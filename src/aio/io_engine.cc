#include "aio/io_engine.h"

#include "core/error.h"

namespace ds {

const char* engine_option_name(AioEngineKind kind) {
  switch (kind) {
    case AioEngineKind::kLibaio: return "libaio";
    case AioEngineKind::kUring: return "io_uring";
    case AioEngineKind::kPsync: return "psync";
  }
  return "?";
}

const char* engine_method_label(AioEngineKind kind) {
  switch (kind) {
    case AioEngineKind::kLibaio: return "LIBAIO";
    case AioEngineKind::kUring: return "IO_URING";
    case AioEngineKind::kPsync: return "PSYNC";
  }
  return "?";
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
  switch (kind) {
    case AioEngineKind::kLibaio: return make_libaio_engine(depth);
    case AioEngineKind::kUring: return make_uring_engine(depth);
    case AioEngineKind::kPsync: return make_psync_engine(depth);
  }
  throw RunError("unknown aio engine");
}

std::string engine_unavailable(AioEngineKind kind) {
  try {
    make_io_engine(kind, 1);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace ds
