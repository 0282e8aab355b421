// Running dev-sandbox as a child process and capturing what it prints.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dstest {

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out, err;
};

// Runs the dev-sandbox binary (DS_BINARY) with `args`, extra environment `env`.
RunResult run_tool(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {});

// Entries of /dev/shm whose name contains "dev-sandbox".
std::vector<std::string> our_shm_entries();

// Lines of `text` starting with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);

// Splits a result row into its whitespace-separated cells.
std::vector<std::string> split_ws(const std::string& line);

}  // namespace dstest
