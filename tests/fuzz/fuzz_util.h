// Shared by the libFuzzer targets in tests/fuzz (one file per target, each defining
// LLVMFuzzerTestOneInput) and by their corpus replay in the normal suite.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// A property the target checks: on failure, say which and abort (libFuzzer saves the
// input as a crash; the replay test fails naming the corpus file).
#define FUZZ_CHECK(cond, what)                                                          \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d): %s\n", #cond, __FILE__, __LINE__, \
                   std::string(what).c_str());                                          \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace dsfuzz {

// The input split at NUL bytes: the words of an argv (which cannot hold a NUL), or
// the fields of a made-up result.
inline std::vector<std::string> split_nul(const uint8_t* data, size_t size) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0)
      words.emplace_back();
    else
      words.back() += static_cast<char>(data[i]);
  }
  return words;
}

// The message as printed, checked: one line, no control characters.
inline void check_one_line(const std::string& printed) {
  for (char c : printed)
    FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "a control character in: " + printed);
}

}  // namespace dsfuzz
