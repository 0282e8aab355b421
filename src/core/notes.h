// Where what a run has to say goes, instead of straight to stderr: the command line
// prints it ("dev-sandbox: note: <line>", "dev-sandbox: <line>"), a test collects it.
#pragma once

#include <string>

namespace ds {

class Notes {
 public:
  virtual ~Notes() = default;
  // Something that ran differently from what was asked, or what to know about it.
  virtual void note(const std::string& line) = 0;
  // A plain report (what --keep kept).
  virtual void tell(const std::string& line) = 0;
};

}  // namespace ds
