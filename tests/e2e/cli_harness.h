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

struct RunOptions {
  std::map<std::string, std::string> env;  // extra environment
  long memlock_limit = -1;                 // RLIMIT_MEMLOCK for the tool, bytes (-1: as is)
  bool drop_ipc_lock = false;              // drop CAP_IPC_LOCK, as an unprivileged user has
  // Run as an unprivileged user: as root, as uid/gid 65534 (nobody) when that user can
  // reach the binary and every absolute path in `env`; otherwise (or when already not
  // root) as the current user without CAP_IPC_LOCK. Either way RLIMIT_MEMLOCK binds.
  bool unprivileged = false;
  // A launcher the tool runs under: exec'd as wrap[0] wrap[1..] -- DS_BINARY args
  // (e.g. the Docker-profile seccomp filter, ds-docker-seccomp).
  std::vector<std::string> wrap;
  std::vector<int> cpus;  // the CPU affinity the tool starts with (empty: as is)
};

// The launcher that runs a command under a seccomp filter refusing what Docker's
// default profile refuses without CAP_SYS_NICE (tests/tools/docker_seccomp.c);
// `no_io_uring` also refuses io_uring, as newer Docker releases do.
std::vector<std::string> docker_profile(bool no_io_uring = false);

// How run_tool_opts runs an unprivileged tool here: "uid 65534" or "without CAP_IPC_LOCK".
std::string unprivileged_mode(const std::map<std::string, std::string>& env);

// Runs the dev-sandbox binary (DS_BINARY) with `args`, extra environment `env`.
RunResult run_tool(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {});
RunResult run_tool_opts(const std::vector<std::string>& args, const RunOptions& options);

// Starts the tool in the background, its output to files; returns its pid.
int start_tool(const std::vector<std::string>& args, const std::string& out_path,
               const std::string& err_path);
// Waits for a started tool; its exit code (128+N when killed by signal N).
int wait_tool(int pid);
// Pids whose parent is `pid`.
std::vector<int> child_pids(int pid);
// Reads a whole file.
std::string slurp(const std::string& path);

// Whether a 4 KiB O_DIRECT write works in `dir` (a probe file, removed).
bool direct_io_works(const std::string& dir);

// Entries of /dev/shm named by dev-sandbox (dev-sandbox-<pid>-<n>) whose
// process is gone: leftovers. Live runs of other tests are not counted.
std::vector<std::string> our_shm_entries();

// Lines of `text` starting with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);

// Splits a result row into its whitespace-separated cells.
std::vector<std::string> split_ws(const std::string& line);

}  // namespace dstest
