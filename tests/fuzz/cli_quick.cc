// Fuzz target `cli_quick`: `dev-sandbox WORDS...` with no sub-command word given:
// quick mode (--model-type/--iodirect/--sdma insert `copy`), --backend before the
// sub-command, and finding the sub-command among the words (tests/fuzz/cli_fuzz.h
// says what is checked). Input: the words, NUL-separated.
#include "cli_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dsfuzz::fuzz_cli({}, data, size);
}
