#include "runner/phase_trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace ds {

PhaseTrace::PhaseTrace(int worker, int iterations) : worker_(worker) {
  const char* path = std::getenv("DEV_SANDBOX_PHASE_TRACE");
  if (!path || !*path) return;
  on_ = true;
  path_ = path;
  marks_.reserve(static_cast<size_t>(iterations > 0 ? iterations : 0));
}

PhaseTrace::~PhaseTrace() {
  if (!on_ || marks_.empty()) return;
  std::string text;
  const std::string head = std::to_string(getpid()) + " " + std::to_string(worker_) + " ";
  for (size_t i = 0; i < marks_.size(); ++i)
    text += head + std::to_string(i) + " " + std::to_string(marks_[i].begin) + " " + std::to_string(marks_[i].end) +
            "\n";
  // A debugging aid: a trace that cannot be written is not the run's failure.
  const int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const ssize_t w = write(fd, text.data(), text.size());
  (void)w;
  close(fd);
}

}  // namespace ds
