#include "output/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace ds {

namespace {

std::string errno_text(int err) { return err ? std::strerror(err) : "open failed"; }

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string option) : path_(std::move(path)), option_(std::move(option)) {
  struct stat st;
  const bool exists = ::lstat(path_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw RunError("cannot write " + option_ + " " + path_ + ": it is a directory");
  if (!exists || S_ISREG(st.st_mode)) {
    const size_t slash = path_.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "" : path_.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
    temp_ = dir + "." + base + ".dev-sandbox-" + std::to_string(::getpid()) + ".tmp";
  }
  errno = 0;
  out_ = std::make_unique<std::ofstream>(temp_.empty() ? path_ : temp_, std::ios::out | std::ios::trunc);
  if (!out_->is_open()) {
    const int err = errno;
    out_.reset();
    if (!temp_.empty()) ::unlink(temp_.c_str());
    throw RunError("cannot write " + option_ + " " + path_ + ": " + errno_text(err));
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  out_.reset();
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::commit() {
  if (committed_) return;
  out_->flush();
  out_->close();
  const bool failed = out_->fail();
  if (failed) throw RunError("writing " + option_ + " " + path_ + " failed" + (errno ? std::string(": ") + std::strerror(errno) : ""));
  if (!temp_.empty() && std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    throw RunError("writing " + option_ + " " + path_ + " failed: rename from " + temp_ + ": " + std::strerror(err));
  }
  committed_ = true;
}

void check_writable(const std::string& path, const std::string& option) {
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) throw RunError("cannot write " + option + " " + path + ": it is a directory");
  errno = 0;
  {
    std::ofstream f(path, std::ios::out | std::ios::app);
    if (!f.is_open())
      throw RunError("cannot write " + option + " " + path + ": " + (errno ? std::strerror(errno) : "open failed"));
  }
  if (!existed) ::unlink(path.c_str());
}

}  // namespace ds
