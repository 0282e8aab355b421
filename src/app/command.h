// Each sub-command lives in its own file and plugs into the one CLI11 app.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ds {

class JobCommands;

struct GlobalOptions {
  std::string backend;                    // --backend (before or after the sub-command)
  std::vector<std::string> command_line;  // argv as typed
};

struct Command {
  CLI::App* app;
  std::function<int()> run;  // called after a successful parse; returns the exit code
  // What run checks of the options before it selects a backend, opens a file or runs
  // anything (UsageError); run does the same itself. Empty: nothing to check.
  std::function<void()> check = {};
  // The lines at the end of its --help: real commands, each one parse_cli accepts.
  std::vector<std::string> examples = {};
};

// The examples at the end of `dev-sandbox --help`.
std::vector<std::string> top_level_examples();

// What `dev-sandbox [SUB] --help` prints: the help of `sub`, or of the program
// for "". Empty for a sub-command that does not exist.
std::string help_text(const std::string& sub);

Command add_copy_command(CLI::App& root, GlobalOptions& global);
Command add_doctor_command(CLI::App& root, GlobalOptions& global);
Command add_trans_command(CLI::App& root, GlobalOptions& global);
Command add_aio_command(CLI::App& root, GlobalOptions& global);
Command add_load_command(CLI::App& root, GlobalOptions& global);
Command add_offload_command(CLI::App& root, GlobalOptions& global);
Command add_tune_command(CLI::App& root, GlobalOptions& global);
Command add_run_command(CLI::App& root, GlobalOptions& global);

// Parses and runs; the exit code of the whole program (0, 1, 2, 130).
int run_cli(int argc, char** argv);

// The in-process seam for tests and tests/fuzz: parses `args` (argv without the
// program name) exactly as run_cli does, then the chosen sub-command's check; selects
// no backend, touches no file, runs nothing. Returns the sub-command ("copy" for quick
// mode; "" when run_cli would print the usage), or throws what run_cli turns into
// exit 2: CLI::ParseError (help requests included) or UsageError.
std::string parse_cli(const std::vector<std::string>& args);

// What run_cli would refuse `args` (argv without the program name) with, in its
// words (exit 2), without running anything (parse_cli's seam); "" when it
// parses and passes the sub-command's check.
std::string check_cli(const std::vector<std::string>& args);

// The sub-commands a job file may run and their options (job/job.h), from the
// same CLI11 apps the command line parses with.
std::unique_ptr<JobCommands> cli_job_commands();

// `message` as one line: control characters (a newline in a value echoed back) are
// written as \n, \r, \t or \xHH.
std::string one_line(const std::string& message);

// "dev-sandbox: error: <message>" on stderr, as one line.
void print_error(const std::string& message);

}  // namespace ds
