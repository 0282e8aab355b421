#include "app/copy_params.h"

#include "core/units.h"

namespace ds {

CopyParams parse_copy_params(const CopyOptionText& t) {
  CopyParams p;
  const uint64_t block = parse_size("-s", t.size);
  const uint64_t blocks = parse_count("-n", t.blocks, 1);
  const int frags = parse_int("-f", t.frags, 0, kMaxFrags);
  p.layout = Layout::uniform(block, blocks, frags);
  p.iterations = parse_int("-i", t.iterations, 1, kMaxIterations);
  p.devices = parse_int("-d", t.devices, 1, kMaxDevices);
  p.streams = parse_int("--streams", t.streams, 1, kMaxStreams);
  p.warmup = parse_int("--warmup", t.warmup, 0, kMaxIterations);
  p.validate = t.validate;
  return p;
}

}  // namespace ds
