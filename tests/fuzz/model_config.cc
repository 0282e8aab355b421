// Fuzz target `model_config`: a model's config.json as --model PATH reads it
// (model/model.h: parse_model_config), then the sizing at a TP size and a prompt
// length taken from the first bytes. Properties: only UsageError escapes, with a
// one-line message naming the file; what is accepted sizes without overflow:
// every fragment is non-zero, the per-layer sum is their sum, and a card's bytes
// are its tasks times that sum.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  ds::WorkloadRequest req;
  req.tp = 1u << (data[0] % 6);                        // 1 .. 32
  req.input_len = 1 + static_cast<uint64_t>(data[1]) * 97;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    const ds::ModelShape shape = ds::parse_model_config(text, "fuzz/config.json");
    const ds::Workload w = ds::size_workload(shape, req);
    FUZZ_CHECK(!w.fragments.empty(), text);
    uint64_t sum = 0;
    for (uint64_t f : w.fragments) {
      FUZZ_CHECK(f > 0, text);
      sum += f;
    }
    FUZZ_CHECK(sum == w.layer_block_bytes, text);
    FUZZ_CHECK(w.blocks == (req.input_len + req.block_tokens - 1) / req.block_tokens, text);
    FUZZ_CHECK(w.bytes_per_card / w.layer_block_bytes == w.tasks_per_card, text);
  } catch (const ds::UsageError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(what.find('\n') == std::string::npos, what);
  }
  return 0;
}
