// Errors carry the call that failed; nothing below main() exits.
#pragma once

#include <stdexcept>
#include <string>

namespace ds {

// The command line was wrong: exit code 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// The run failed (runtime call, validation, resources): exit code 1.
class RunError : public std::runtime_error {
 public:
  explicit RunError(const std::string& what) : std::runtime_error(what) {}
};

// A worker that stopped because another one failed (or the run was stopped):
// a consequence, never the cause, so the fan-out reports the first real failure.
class Stopped : public RunError {
 public:
  explicit Stopped(const std::string& what) : RunError(what) {}
};

// Whoever reads our results went away (stdout a closed pipe, as with `| head`):
// the run ends quietly, everything it made removed (exit 141, as SIGPIPE would
// have ended it, but after the cleanup).
class OutputClosed : public RunError {
 public:
  OutputClosed() : RunError("stdout was closed") {}
};

// "call(args): reason" from errno.
RunError sys_error(const std::string& call, int err);

}  // namespace ds
