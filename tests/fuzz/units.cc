// Fuzz target `units`: sizes and counts as typed (core/units: parse_size, parse_count,
// parse_int). Input: the first byte picks the parser, the rest is the text.
// Properties: only UsageError escapes, with a one-line message; what is accepted is in
// range, and plain digits mean what they say.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 3;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool digits_only =
      !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  try {
    if (which == 0) {
      const uint64_t v = ds::parse_size("-s", text);
      FUZZ_CHECK(v >= 1, text);
      if (digits_only) FUZZ_CHECK(std::to_string(v) == text.substr(text.find_first_not_of('0')), text);
      const char last = text.back();
      if (last == 'k' || last == 'K') FUZZ_CHECK(v % 1024 == 0, text);
      (void)ds::format_kib(v);
      (void)ds::format_bytes(v);
    } else if (which == 1) {
      const uint64_t v = ds::parse_count("-n", text, 1);
      FUZZ_CHECK(v >= 1 && v <= (1ULL << 40), text);
      FUZZ_CHECK(digits_only, text);
    } else {
      const int v = ds::parse_int("-d", text, 1, 4096);
      FUZZ_CHECK(v >= 1 && v <= 4096, text);
      FUZZ_CHECK(digits_only, text);
    }
  } catch (const ds::UsageError& e) {
    FUZZ_CHECK(std::string(e.what()).find("option ") == 0, e.what());
  }
  return 0;
}
