// Fuzz target `sweep`: --sweep FROM:TO (measurement/sweep: sweep_steps) with -n. Input: the
// range text, NUL, the -n text. Properties: only UsageError escapes; the steps start
// at FROM, end at TO, double each time, and -n never grows nor drops below 1.
#include <cstdint>
#include <string>

#include "measurement/sweep.h"
#include "core/error.h"
#include "core/units.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> w = dsfuzz::split_nul(data, size);
  const std::string range = w[0];
  try {
    const uint64_t blocks = ds::parse_count("-n", w.size() > 1 ? w[1] : "8", 1);
    const std::vector<ds::SweepStep> steps = ds::sweep_steps(range, blocks);
    FUZZ_CHECK(!steps.empty() && steps.size() <= 64, range);
    const size_t colon = range.find(':');
    FUZZ_CHECK(steps.front().block_bytes == ds::parse_size("--sweep", range.substr(0, colon)), range);
    FUZZ_CHECK(steps.back().block_bytes == ds::parse_size("--sweep", range.substr(colon + 1)), range);
    for (size_t i = 0; i < steps.size(); ++i) {
      FUZZ_CHECK(steps[i].blocks >= 1 && steps[i].blocks <= blocks, range);
      if (i) {
        FUZZ_CHECK(steps[i].block_bytes == 2 * steps[i - 1].block_bytes, range);
        FUZZ_CHECK(steps[i].blocks <= steps[i - 1].blocks, range);
      }
    }
  } catch (const ds::UsageError& e) {
    FUZZ_CHECK(std::string(e.what()).find("option ") == 0 || std::string(e.what()).find("--sweep") == 0,
               e.what());
  }
  return 0;
}
