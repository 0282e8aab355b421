// Runs dev-sandbox with stderr on a pseudo-terminal, as a user at a terminal sees it
// (the progress lines are shown only there): shared by the progress tests.
#pragma once

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace dstest {

// Whether this machine can give us a pseudo-terminal: a minimal container may have
// no /dev/pts. Empty when it can, else why not.
inline std::string no_pty_reason() {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) return std::string("posix_openpt: ") + std::strerror(errno);
  std::string why;
  if (grantpt(master) != 0 || unlockpt(master) != 0) {
    why = std::string("grantpt/unlockpt: ") + std::strerror(errno);
  } else {
    const char* name = ptsname(master);
    const int slave = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    if (slave < 0)
      why = std::string("open ") + (name ? name : "the terminal") + ": " + std::strerror(errno);
    else
      close(slave);
  }
  close(master);
  return why;
}

// Runs the tool with stderr on a pseudo-terminal (stdout to /dev/null), `env` added
// to its environment; what the terminal received, and the exit code.
inline std::string run_in_pty(const std::vector<std::string>& args, int* exit_code,
                              const std::map<std::string, std::string>& env = {}) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return "forkpty failed";
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
    std::vector<std::string> copy = args;
    std::string bin = DS_BINARY;
    std::vector<char*> argv{&bin[0]};
    for (auto& a : copy) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  std::string seen;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) {
      seen.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child closed the terminal
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return seen;
}

}  // namespace dstest
