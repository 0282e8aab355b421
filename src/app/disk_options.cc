#include "app/disk_options.h"

#include "aio/aio_measure.h"
#include "core/error.h"
#include "core/units.h"

namespace ds {

std::vector<std::string> parse_workspaces(const std::vector<std::string>& typed) {
  std::vector<std::string> out;
  auto norm = [](std::string d) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    return d;
  };
  for (const std::string& w : typed) {
    if (w.empty()) throw UsageError("option --workspace got '': expects a directory");
    for (const std::string& seen : out)
      if (norm(seen) == norm(w)) throw UsageError("option --workspace got '" + w + "' twice: each directory once");
    out.push_back(w);
  }
  if (out.empty()) throw UsageError("option --workspace is required");
  return out;
}

AioEngineKind parse_engine(const std::string& text, bool psync) {
  if (text == "libaio") return AioEngineKind::kLibaio;
  if (text == "io_uring") return AioEngineKind::kUring;
  if (psync && text == "psync") return AioEngineKind::kPsync;
  throw UsageError("option --engine got '" + text + "': accepts libaio|io_uring" + (psync ? "|psync" : ""));
}

unsigned parse_depth(const std::string& option, const std::string& text, uint64_t min) {
  const uint64_t depth = parse_count(option, text, min);
  if (depth > kMaxIoDepth)
    throw UsageError("option " + option + " got '" + text + "': must be at most " + std::to_string(kMaxIoDepth));
  return static_cast<unsigned>(depth);
}

}  // namespace ds
