// An output file that appears whole or not at all (--output, --plot): written to
// a temporary next to it, ".<name>.dev-sandbox-<pid>.tmp" in the same directory
// (so the rename stays in one filesystem), and renamed over the target only when
// complete. Dropped without commit(), the temporary is removed and the target
// was never touched; a process killed on the way leaves at most the temporary,
// whose name no run reads. A target that exists and is not a plain file (a
// device such as /dev/null or /dev/stdout, a FIFO, a symbolic link) is written
// in place instead: renaming over it would replace it.
#pragma once

#include <fstream>
#include <memory>
#include <string>

namespace ds {

class AtomicFile {
 public:
  // RunError naming `option` and the path when it cannot be written there.
  AtomicFile(std::string path, std::string option);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return *out_; }
  // Flushes, closes and renames into place; RunError naming the path on failure
  // (a full disk, say), the temporary then removed.
  void commit();
  const std::string& temporary() const { return temp_; }  // empty when written in place

 private:
  std::string path_, option_, temp_;
  std::unique_ptr<std::ofstream> out_;
  bool committed_ = false;
};

// Before a run: RunError "cannot write <option> <path>: <why>" when `path` is a
// directory or cannot be opened for writing; leaves no file it did not find.
void check_writable(const std::string& path, const std::string& option);

}  // namespace ds
