// Running dev-sandbox as a child process and capturing what it prints.
#pragma once

#include <functional>
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

// Starts the tool in the background, in its own process group, its output to
// files; returns its pid. Whatever a test starts this way and has not reaped when
// it ends (an assertion returned early) is killed with its group and reaped then.
int start_tool(const std::vector<std::string>& args, const std::string& out_path,
               const std::string& err_path);
// Waits for a started tool; its exit code (128+N when killed by signal N).
int wait_tool(int pid);
// The same guarantee for a process a test forks itself (mpiexec): `pid` leads its
// own process group; forget_started() once the test has reaped it.
void track_started(int pid);
void forget_started(int pid);

// Polls `ready` every 10 ms until it holds or `seconds` pass; whether it held.
// Deadlines are generous (a loaded 2-core machine): the condition, not the
// time, is what a test waits for.
bool wait_until(const std::function<bool()>& ready, double seconds = 60);
// CPU time a process has used so far (utime + stime, clock ticks); -1 when gone.
long cpu_ticks(int pid);
// Waits until `pid` has visibly worked since the call: used CPU (2 ticks) or,
// waiting on I/O, slept and woken 20 times. Whether it did within `seconds`.
bool wait_busy(int pid, double seconds = 60);
// Waits until `pid` has `children` child processes and each of them, having
// started, has worked since (wait_busy: its run is under way, not starting up):
// the children then, or fewer when `seconds` passed first.
std::vector<int> wait_children_busy(int pid, size_t children, double seconds = 60);

// A fresh empty file /tmp/<stem>-XXXXXX (mkstemp; mode 0666 when `shared`, so an
// unprivileged tool can append to it), removed when it goes out of scope: the
// doubles' call logs.
class TempFile {
 public:
  explicit TempFile(const char* stem, bool shared = false);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  std::string text() const;

 private:
  std::string path_;
};

// Removes a file, or a directory with what is in it, when it goes out of scope:
// also when an assertion ends the test early (/dev/shm workspaces, logs in /tmp).
class ScopedPath {
 public:
  explicit ScopedPath(std::string path) : path_(std::move(path)) {}
  ~ScopedPath();
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
// Pids whose parent is `pid`.
std::vector<int> child_pids(int pid);
// Reads a whole file.
std::string slurp(const std::string& path);

// Whether a 4 KiB O_DIRECT write works in `dir` (a probe file, removed).
bool direct_io_works(const std::string& dir);

// Entries of /dev/shm named by dev-sandbox (dev-sandbox-<pid>-<n>) whose
// process is gone: leftovers. Live runs of other tests are not counted.
std::vector<std::string> our_shm_entries();

// What a run says on stderr about itself, by the exact forms the tool prints:
// the backend line ("dev-sandbox: backend sim (auto: ...) -- ..."), the line before
// setup ("dev-sandbox: <case> will allocate host ...; about ..."), and piped, a line
// per finished case ("dev-sandbox: finished <case> in 1.2 s (setup 0.3 s)").
bool is_run_line(const std::string& line);
// `err` without those lines: the notes and errors a test asserts on.
std::string without_run_lines(const std::string& err);

// Lines of `text` starting with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);

// Splits a result row into its whitespace-separated cells.
std::vector<std::string> split_ws(const std::string& line);

}  // namespace dstest
