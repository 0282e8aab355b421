// Fuzz target `cli_offload`: `dev-sandbox offload WORDS...` parsed and checked in
// process (tests/fuzz/cli_fuzz.h says what is checked). Input: the words, NUL-separated.
#include "cli_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dsfuzz::fuzz_cli({"offload"}, data, size);
}
