// The results of a job, one JSON line per finished point (docs/run.md, "The
// results file"), appended and flushed to the disk as each point finishes, so
// an interrupted job resumes where it stopped (--resume). `tune` and --report
// read the same lines.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "output/result_extra.h"

namespace ds {

struct PointRecord {
  std::string entry;
  std::string label;
  std::vector<std::pair<std::string, std::string>> axes;  // name, value: the matrix's, in order
  std::vector<std::string> command_line;                   // what ran, program name first
  bool ok = false;
  int exit_code = 0;
  std::string error;   // failed: the first error line the command printed
  double seconds = 0;  // the point's wall time, start to exit
  Json result;         // the command's --format json document; null when it wrote none
};

// {"entry", "label", "axes": [[name, value], ...] (in order), "status": "ok"|"failed", "exit_code", "error",
// "seconds", "command_line", "result"}, one line without the newline.
std::string encode_record(const PointRecord& r);
// RunError naming what is missing when `line` is not what encode_record wrote.
PointRecord decode_record(const std::string& line);

// Same entry and same axis values.
bool same_point(const PointRecord& r, const std::string& entry,
                const std::vector<std::pair<std::string, std::string>>& axes);

class ResultsLog {
 public:
  // Opens `path` to append (created when missing). With `resume`, reads the
  // records already there first: a last line cut short (no newline, or not
  // whole JSON) is dropped and the file cut back to the line before it, so it is
  // rewritten; any other line that is not a record is UsageError "PATH:LINE: ...".
  // Without `resume`, a file that already holds a line is UsageError (it would
  // mix two jobs). RunError naming the path when it cannot be opened or read.
  ResultsLog(std::string path, bool resume);
  ~ResultsLog();
  ResultsLog(const ResultsLog&) = delete;
  ResultsLog& operator=(const ResultsLog&) = delete;

  const std::vector<PointRecord>& previous() const { return previous_; }
  bool dropped_partial_line() const { return dropped_; }
  // Writes the line and its newline in one write and flushes it to the disk
  // (fdatasync); RunError naming the path on failure.
  void append(const PointRecord& r);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<PointRecord> previous_;
  bool dropped_ = false;
};

}  // namespace ds
