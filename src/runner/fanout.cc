#include "runner/fanout.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "runner/shared_mapping.h"

namespace ds {

namespace {

constexpr size_t kMessageBytes = 1024;

struct ChildReport {
  char message[kMessageBytes];
  int secondary;  // the child stopped because another worker failed (Stopped)
};

void run_threads(int count, const std::function<void(int)>& body, Barrier& barrier) {
  std::vector<std::string> errors(static_cast<size_t>(count));
  std::vector<char> secondary(static_cast<size_t>(count), 0);
  std::vector<char> interrupted_at(static_cast<size_t>(count), 0);  // written by several threads
  std::vector<std::thread> threads;
  for (int w = 0; w < count; ++w) {
    threads.emplace_back([&, w] {
      try {
        body(w);
      } catch (const Interrupted&) {
        interrupted_at[static_cast<size_t>(w)] = 1;
        barrier.abort();
      } catch (const Stopped& e) {
        errors[static_cast<size_t>(w)] = e.what();
        secondary[static_cast<size_t>(w)] = 1;
        barrier.abort();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(w)] = e.what();
        barrier.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int w = 0; w < count; ++w)
    if (interrupted_at[static_cast<size_t>(w)]) throw Interrupted();
  // Report the worker that failed first, not the ones stopped because of it.
  for (int w = 0; w < count; ++w) {
    const std::string& e = errors[static_cast<size_t>(w)];
    if (!e.empty() && !secondary[static_cast<size_t>(w)]) throw RunError("device " + std::to_string(w) + ": " + e);
  }
  // Only workers that were stopped: still a consequence of something else.
  for (int w = 0; w < count; ++w)
    if (!errors[static_cast<size_t>(w)].empty())
      throw Stopped("device " + std::to_string(w) + ": " + errors[static_cast<size_t>(w)]);
}

[[noreturn]] void child_main(int w, const std::function<void(int)>& body, ChildReport* report,
                             pid_t parent) {
  // The parent handles Ctrl-C and stops us; we die with it if it dies.
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGTERM, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(3);
  int code = 0;
  try {
    body(w);
  } catch (const Stopped& e) {
    std::snprintf(report->message, kMessageBytes, "%s", e.what());
    report->secondary = 1;
    code = 1;
  } catch (const std::exception& e) {
    std::snprintf(report->message, kMessageBytes, "%s", e.what());
    code = 1;
  }
  std::fflush(nullptr);
  // A forked child ends here: _exit, so none of the parent's destructors or
  // atexit handlers (which own shared objects and files) run twice.
  _exit(code);
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return std::string("killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// `label`: what a failure is prefixed with, with the worker's number ("device 3: "); empty: nothing.
void run_fork(int count, const std::function<void(int)>& body, Barrier& barrier, const std::string& label,
              const Watch& watch) {
  SharedMapping reports_map(sizeof(ChildReport) * static_cast<size_t>(count));
  auto* reports = static_cast<ChildReport*>(reports_map.data());
  std::fflush(nullptr);
  const pid_t self = getpid();
  std::map<pid_t, int> alive;  // pid -> worker
  std::string first_error;
  bool first_is_secondary = false;
  bool was_interrupted = false, was_stuck = false;
  int64_t kill_deadline = -1;

  auto stop_all = [&](int64_t grace_ns) {
    barrier.abort();
    if (kill_deadline < 0) kill_deadline = now_ns() + grace_ns;
  };

  for (int w = 0; w < count; ++w) {
    if (interrupted()) {  // Ctrl-C before or between forks: start nothing more
      was_interrupted = true;
      stop_all(2000000000LL);
      break;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      first_error = std::string("fork: ") + std::strerror(errno);
      stop_all(0);
      break;
    }
    if (pid == 0) child_main(w, body, &reports[w], self);
    alive[pid] = w;
  }

  while (!alive.empty()) {
    if (interrupted() && !was_interrupted) {
      was_interrupted = true;
      stop_all(2000000000LL);
    }
    if (watch && kill_deadline < 0 && !was_interrupted) {
      std::string stuck = watch();
      if (!stuck.empty()) {
        // A stuck worker is killed, not waited on: whatever it waits for may never come.
        first_error = std::move(stuck);
        first_is_secondary = false;
        stop_all(0);
        for (const auto& kv : alive) kill(kv.first, SIGKILL);
        was_stuck = true;
      }
    }
    if (kill_deadline >= 0 && now_ns() >= kill_deadline) {
      for (const auto& kv : alive) kill(kv.first, SIGKILL);
    }
    // Never block without a limit: a Ctrl-C landing between the check above and
    // a blocking waitpid would be lost. SIGCHLD and SIGINT cut the nap short.
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) break;
      throw sys_error("waitpid", errno);
    }
    if (pid == 0) {
      const timespec nap{0, kill_deadline >= 0 ? 5000000L : 50000000L};
      nanosleep(&nap, nullptr);
      continue;
    }
    auto it = alive.find(pid);
    if (it == alive.end()) continue;
    const int w = it->second;
    alive.erase(it);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || was_interrupted || was_stuck) continue;
    std::string reason = reports[w].message[0] ? reports[w].message : describe_status(status);
    const bool secondary = reports[w].message[0] && reports[w].secondary;
    if (first_error.empty() || (first_is_secondary && !secondary)) {
      first_error = label.empty() ? reason : label + " " + std::to_string(w) + ": " + reason;
      first_is_secondary = secondary;
    }
    stop_all(5000000000LL);
  }
  if (was_interrupted) throw Interrupted();
  if (!first_error.empty()) throw RunError(first_error);
}

}  // namespace

void run_workers(Fanout fanout, int count, const std::function<void(int)>& body, Barrier& barrier,
                 const Watch& watch, const std::string& name) {
  switch (fanout) {
    case Fanout::kInline:
      for (int w = 0; w < count; ++w) body(w);
      return;
    case Fanout::kThreads:
      run_threads(count, body, barrier);
      return;
    case Fanout::kFork:
      run_fork(count, body, barrier, name, watch);
      return;
  }
}

void run_isolated(const std::function<void()>& body, Barrier& barrier, const Watch& watch) {
  run_fork(1, [&](int) { body(); }, barrier, "", watch);
}

}  // namespace ds
