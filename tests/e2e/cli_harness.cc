#include "cli_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ftw.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace dstest {

namespace {

[[noreturn]] void exec_tool(const std::vector<std::string>& args, const std::vector<std::string>& wrap = {}) {
  std::vector<std::string> all = wrap;
  if (!wrap.empty()) all.push_back("--");
  all.push_back(DS_BINARY);
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

constexpr uid_t kNobody = 65534;

// Whether uid/gid 65534 can run the binary and read every absolute path named in `env`.
bool nobody_can_run(const std::map<std::string, std::string>& env) {
  if (geteuid() != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(1);
    if (access(DS_BINARY, X_OK) != 0) _exit(1);
    for (const auto& kv : env)
      if (!kv.second.empty() && kv.second[0] == '/' && access(kv.second.c_str(), F_OK) == 0 &&
          access(kv.second.c_str(), R_OK) != 0)
        _exit(1);
    _exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

bool direct_io_works(const std::string& dir) {
  const std::string f = dir + "/odirect-probe";
  const int fd = open(f.c_str(), O_CREAT | O_WRONLY | O_DIRECT, 0644);
  if (fd < 0) return false;
  void* buf = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool ok = buf != MAP_FAILED && pwrite(fd, buf, 4096, 0) == 4096;
  if (buf != MAP_FAILED) munmap(buf, 4096);
  close(fd);
  unlink(f.c_str());
  return ok;
}

std::vector<std::string> docker_profile(bool no_io_uring) {
#ifdef DS_DOCKER_SECCOMP
  std::vector<std::string> w = {DS_DOCKER_SECCOMP};
  if (no_io_uring) w.push_back("--no-io-uring");
  return w;
#else
  (void)no_io_uring;
  return {};
#endif
}

std::string unprivileged_mode(const std::map<std::string, std::string>& env) {
  return nobody_can_run(env) ? "uid 65534" : "without CAP_IPC_LOCK";
}

RunResult run_tool(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env) {
  RunOptions o;
  o.env = env;
  return run_tool_opts(args, o);
}

RunResult run_tool_opts(const std::vector<std::string>& args, const RunOptions& options) {
  const auto& env = options.env;
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {};
  const bool as_nobody = options.unprivileged && nobody_can_run(env);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
    if (options.memlock_limit >= 0) {
      struct rlimit rl;
      rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(options.memlock_limit);
      if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) _exit(126);
    }
    if ((options.drop_ipc_lock || (options.unprivileged && !as_nobody)) &&
        prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) != 0 && geteuid() == 0)
      _exit(126);
    if (as_nobody && (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0)) _exit(126);
    if (!options.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : options.cpus) CPU_SET(c, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(126);
    }
    exec_tool(args, options.wrap);
  }
  close(out[1]);
  close(err[1]);
  RunResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::vector<std::string> our_shm_entries() {
  std::vector<std::string> v;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      const char* tag = std::strstr(e->d_name, "dev-sandbox-");
      if (!tag) continue;
      const int pid = std::atoi(tag + std::strlen("dev-sandbox-"));
      if (pid <= 0 || kill(pid, 0) != 0) v.push_back(e->d_name);
    }
    closedir(d);
  }
  return v;
}

bool is_run_line(const std::string& line) {
  static const std::regex backend(
      R"(dev-sandbox: backend (ascend|cuda|sim) \((--backend [a-z]+|DEV_SANDBOX_BACKEND=[a-z]+|auto(: [^()]+)?)\)( -- [^\n]+)?)");
  static const std::regex plan(
      R"(dev-sandbox: [A-Za-z0-9_]+ will allocate host [^\n]+ \(filling [^\n]+ at a nominal [0-9.]+ GiB/s, then [0-9]+ (iteration|epoch|round)s? moving [^\n]+ at a nominal [0-9.]+ GiB/s\))");
  static const std::regex finished(R"(dev-sandbox: finished [A-Za-z0-9_+]+ in [0-9]+\.[0-9] s \(setup [0-9]+\.[0-9] s\))");
  return std::regex_match(line, backend) || std::regex_match(line, plan) || std::regex_match(line, finished);
}

std::string without_run_lines(const std::string& err) {
  std::string out;
  size_t at = 0;
  while (at < err.size()) {
    const size_t end = err.find('\n', at);
    const std::string line = err.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const bool last = end == std::string::npos;
    if (!is_run_line(line)) out += line + (last ? "" : "\n");
    at = last ? err.size() : end + 1;
  }
  return out;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) v.push_back(line);
  return v;
}

std::vector<std::string> split_ws(const std::string& line) {
  std::vector<std::string> v;
  std::istringstream in(line);
  std::string w;
  while (in >> w) v.push_back(w);
  return v;
}

}  // namespace dstest

namespace dstest {

namespace {

std::mutex& started_mutex() {
  static std::mutex m;
  return m;
}
std::set<int>& started() {
  static std::set<int> s;
  return s;
}

// At the end of every test: whatever it started and did not reap is ended, with
// its process group, and reaped (a failed assertion must not leave a run going).
class Reaper : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::set<int> left;
    {
      std::lock_guard<std::mutex> lock(started_mutex());
      left.swap(started());
    }
    for (int pid : left) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
      std::fprintf(stderr, "[harness] ended process %d (and its group), which the test left running\n", pid);
    }
  }
};
[[maybe_unused]] const bool kReaper = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new Reaper);
  return true;
}();

}  // namespace

void track_started(int pid) {
  std::lock_guard<std::mutex> lock(started_mutex());
  started().insert(pid);
}

void forget_started(int pid) {
  std::lock_guard<std::mutex> lock(started_mutex());
  started().erase(pid);
}

bool wait_until(const std::function<bool()>& ready, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

long cpu_ticks(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::atol(field.c_str());
    if (i == 15) stime = std::atol(field.c_str());
  }
  return utime + stime;
}

namespace {

long voluntary_switches(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::atol(line.c_str() + 24);
  return -1;
}

struct Activity {
  long ticks, switches;
  explicit Activity(int pid) : ticks(cpu_ticks(pid)), switches(voluntary_switches(pid)) {}
  bool worked_since(const Activity& base) const {
    return ticks >= base.ticks + 2 || switches >= base.switches + 20;
  }
};

}  // namespace

bool wait_busy(int pid, double seconds) {
  const Activity base(pid);
  return wait_until([&] { return Activity(pid).worked_since(base); }, seconds);
}

std::vector<int> wait_children_busy(int pid, size_t children, double seconds) {
  // The children of each look, each measured from the look that first saw it: a
  // short-lived child seen once (a probe that exits) is forgotten, not waited on.
  std::vector<std::pair<int, Activity>> seen;
  wait_until(
      [&] {
        const std::vector<int> kids = child_pids(pid);
        std::vector<std::pair<int, Activity>> now;
        bool worked = kids.size() >= children;
        for (int k : kids) {
          auto was = std::find_if(seen.begin(), seen.end(), [k](const std::pair<int, Activity>& s) { return s.first == k; });
          if (was == seen.end()) {
            now.emplace_back(k, Activity(k));
            worked = false;
          } else {
            worked = worked && Activity(k).worked_since(was->second);
            now.push_back(*was);
          }
        }
        seen = now;
        return worked;
      },
      seconds);
  return child_pids(pid);
}

TempFile::TempFile(const char* stem, bool shared) {
  std::string tmpl = std::string("/tmp/") + stem + "-XXXXXX";
  const int fd = mkstemp(&tmpl[0]);
  if (fd >= 0) {
    if (shared) fchmod(fd, 0666);
    close(fd);
  }
  path_ = tmpl;
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

std::string TempFile::text() const { return slurp(path_); }

ScopedPath::~ScopedPath() {
  if (path_.empty()) return;
  nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return std::remove(p); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

int start_tool(const std::vector<std::string>& args, const std::string& out_path,
               const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    exec_tool(args);
  }
  if (pid > 0) {
    setpgid(pid, pid);  // also here: the group exists before the parent may signal it
    track_started(pid);
  }
  return pid;
}

int wait_tool(int pid) {
  int status = 0;
  const bool reaped = waitpid(pid, &status, 0) == pid;
  forget_started(pid);
  if (!reaped) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<int> child_pids(int pid) {
  std::vector<int> v;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const int p = std::atoi(e->d_name);
      if (p <= 0) continue;
      std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
      std::string stat;
      std::getline(in, stat);
      const size_t close_paren = stat.rfind(')');
      if (close_paren == std::string::npos) continue;
      std::istringstream rest(stat.substr(close_paren + 2));
      char state;
      int ppid = 0;
      rest >> state >> ppid;
      if (ppid == pid && state != 'Z') v.push_back(p);
    }
    closedir(d);
  }
  return v;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace dstest
