// The command-line targets (cli_copy, cli_quick, cli_trans, cli_aio): the input's
// NUL-separated words after `prefix` go through ds::parse_cli, the seam that parses
// and checks exactly as dev-sandbox does but runs nothing. Properties: only what
// dev-sandbox turns into exit 2 escapes (CLI::ParseError, ds::UsageError), and the
// error line it would print is one line.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "app/command.h"
#include "core/error.h"
#include "fuzz_util.h"

namespace dsfuzz {

inline int fuzz_cli(std::vector<std::string> args, const uint8_t* data, size_t size) {
  if (size > 0) {
    const std::vector<std::string> words = split_nul(data, size);
    args.insert(args.end(), words.begin(), words.end());
  }
  try {
    const std::string command = ds::parse_cli(args);
    FUZZ_CHECK(command.empty() || command == "copy" || command == "trans" || command == "aio" ||
                   command == "load" || command == "offload" || command == "doctor" || command == "run",
               command);
  } catch (const CLI::ParseError& e) {
    check_one_line(ds::one_line(e.what()));
  } catch (const ds::UsageError& e) {
    check_one_line(ds::one_line(e.what()));
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, std::string("an exception that is not a usage error: ") + e.what());
  }
  return 0;
}

}  // namespace dsfuzz
