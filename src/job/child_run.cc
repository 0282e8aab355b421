#include "job/child_run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>

#include "core/error.h"
#include "core/interrupt.h"

namespace ds {

namespace {

const char kErrorPrefix[] = "dev-sandbox: error: ";

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw sys_error("pipe2", errno);
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// The stderr lines as they come: passed on, the error line kept.
struct ErrLines {
  std::string partial, first_error, last;
  void feed(const char* data, size_t n) {
    std::fwrite(data, 1, n, stderr);
    partial.append(data, n);
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      line(partial.substr(0, nl));
      partial.erase(0, nl + 1);
    }
  }
  void line(const std::string& l) {
    if (l.empty()) return;
    last = l;
    if (first_error.empty() && l.rfind(kErrorPrefix, 0) == 0) first_error = l.substr(sizeof kErrorPrefix - 1);
  }
};

[[noreturn]] void exec_child(const std::string& program, const std::vector<std::string>& args, int out_fd,
                             int err_fd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGINT);  // the job killed outright: the point stops and cleans up too
  if (::getppid() != parent) ::_exit(128 + SIGINT);  // it died before the line above: no signal will come
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
  const std::string msg = std::string(kErrorPrefix) + "execv(" + program + "): " + std::strerror(errno) + "\n";
  if (::write(2, msg.data(), msg.size()) < 0) {
  }
  ::_exit(127);
}

bool reap_now(pid_t pid) {
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  return r != 0;  // reaped, or not ours to wait for (ECHILD)
}

}  // namespace

ChildGuard::~ChildGuard() {
  if (reaped_) return;
  ::kill(pid_, SIGINT);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s_);
  while (!reap_now(pid_)) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      return;
    }
    const timespec step{0, 10 * 1000 * 1000};
    nanosleep(&step, nullptr);
  }
}

int ChildGuard::wait() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) throw sys_error("waitpid", errno);
  }
  reaped_ = true;
  return status;
}

std::string self_program() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw sys_error("readlink(/proc/self/exe)", errno);
  return std::string(buf, static_cast<size_t>(n));
}

ChildOutcome run_child(const std::string& program, const std::vector<std::string>& args,
                       const ChildRunOptions& options) {
  // Declared before the pipes, so an unwind closes our ends first: a child stopped
  // by the guard is then never blocked writing to a pipe no one reads.
  std::optional<ChildGuard> child;
  Pipe out, err;
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw sys_error("fork", errno);
  if (pid == 0) exec_child(program, args, out.fd[1], err.fd[1], parent);
  child.emplace(pid, options.stop_grace_s);
  out.close_end(1);
  err.close_end(1);
  ChildOutcome o;
  ErrLines lines;
  bool passed_stop = false;
  char buf[65536];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    if (interrupted() && !passed_stop) {
      ::kill(pid, SIGINT);  // once: a second would not be a first stop for it
      passed_stop = true;
      o.interrupted = true;
    }
    if (options.each_turn) options.each_turn(pid, o.out);
    pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
    const int r = ::poll(fds, 2, 100);
    if (r < 0 && errno != EINTR) throw sys_error("poll", errno);
    for (int i = 0; i < 2 && r > 0; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        (i == 0 ? out : err).close_end(0);
      } else if (i == 0) {
        o.out.append(buf, static_cast<size_t>(n));
      } else {
        lines.feed(buf, static_cast<size_t>(n));
      }
    }
  }
  const int status = child->wait();
  if (!lines.partial.empty()) {
    std::fputc('\n', stderr);
    lines.line(lines.partial);
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.first_error = lines.first_error.empty() ? lines.last : lines.first_error;
  if (interrupted()) o.interrupted = true;
  return o;
}

}  // namespace ds
