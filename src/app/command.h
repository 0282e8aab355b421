// Each sub-command lives in its own file and plugs into the one CLI11 app.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace ds {

struct GlobalOptions {
  std::string backend;                    // --backend (before or after the sub-command)
  std::vector<std::string> command_line;  // argv as typed
};

struct Command {
  CLI::App* app;
  std::function<int()> run;  // called after a successful parse; returns the exit code
};

Command add_copy_command(CLI::App& root, GlobalOptions& global);
Command add_doctor_command(CLI::App& root, GlobalOptions& global);
Command add_trans_command(CLI::App& root, GlobalOptions& global);
Command add_aio_command(CLI::App& root, GlobalOptions& global);

// Parses and runs; the exit code of the whole program (0, 1, 2, 130).
int run_cli(int argc, char** argv);

// "dev-sandbox: error: <message>" on stderr.
void print_error(const std::string& message);

}  // namespace ds
