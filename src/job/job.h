// Job files (`dev-sandbox run JOB`, docs/run.md): named entries, each one
// sub-command with its options and matrix axes whose product is expanded into
// points, each point one run of that sub-command with its own label. This layer
// knows no command line library: what a sub-command and its options are comes
// from the caller (JobCommands, answered by app/ from the real CLI11 apps), so
// a point's argv is exactly what a person would type.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ds {

// Where something was written in the job file: line 1-based (0: unknown).
struct JobPlace {
  size_t line = 0;
};

// One option of an entry: `key: value` (given once) or `key: [a, b]` (given once
// per item, as `-t a -t b`), or one axis of its matrix (one value per point).
struct JobSetting {
  std::string key;                  // as written: "s", "iodirect", "io-size"
  std::vector<std::string> values;  // the scalars as written
  JobPlace place;
};

struct JobEntry {
  std::string name;
  std::string command;  // the sub-command: copy, trans, aio, load, offload
  JobPlace place;       // the entry's name
  std::vector<JobSetting> options;
  std::vector<JobSetting> axes;  // the matrix, in the order written; empty: one point
};

struct JobSpec {
  std::string path;  // as given on the command line
  std::vector<JobEntry> entries;
};

// How one key becomes words of the command line.
struct JobOption {
  std::string flag;        // "-s", "--io-size"; empty: no such option (error says why)
  bool takes_value = true; // false: a flag (true adds it, false leaves it out)
  bool value_optional = false;  // takes a value or none (--validate [each]): true/false as a flag's
  std::string error;       // why `key` is refused ("unknown option ... (did you mean ...?)")
};

// What app/ answers about the sub-commands.
class JobCommands {
 public:
  virtual ~JobCommands() = default;
  // "" when `command` is a sub-command a job may run; else why not (one line).
  virtual std::string check_command(const std::string& command) const = 0;
  virtual JobOption option(const std::string& command, const std::string& key) const = 0;
};

// "JOB:LINE: entry 'NAME': key 'KEY': WHAT" (parts left out when empty): the one
// form of every bad-job message.
std::string job_error(const std::string& path, JobPlace place, const std::string& entry, const std::string& key,
                      const std::string& what);

// One run of an entry.
struct JobPoint {
  std::string entry;
  std::string command;
  std::vector<std::pair<std::string, std::string>> axes;  // name, value, in the matrix's order
  std::string label;               // "copy_ce" or "copy_ce[s=4K,iodirect=true]"
  std::vector<std::string> args;   // argv without the program name: "copy", "-s", "4K", ...
  JobPlace place;                  // the entry's
};

// "ENTRY" alone, or "ENTRY[a=1,b=2]".
std::string point_label(const std::string& entry, const std::vector<std::pair<std::string, std::string>>& axes);

// The most points one job may have: a matrix past it is a mistake (or a job to split).
constexpr size_t kMaxJobPoints = 100000;

// Every point of every entry, entries in order, each entry's product with the last
// axis varying fastest (the way nested shell loops run). UsageError (job_error)
// for a key `commands` refuses, a flag given other than true/false, a bad
// sub-command, more than kMaxJobPoints points in all.
std::vector<JobPoint> expand_job(const JobSpec& job, const JobCommands& commands);

// Reads and checks the job file's shape (docs/run.md): UsageError, one line
// (job_error), for a file that cannot be read or parsed, an entry that is not a
// mapping, no `command`, a matrix that is empty or not a mapping, an axis that is
// not a list or an empty one, a duplicated entry or key, a value that is not a
// scalar (or a list of scalars). Built without a job-file library, UsageError
// saying so (job_files_supported() is false).
JobSpec read_job_file(const std::string& path);
JobSpec parse_job_text(const std::string& path, const std::string& text);
bool job_files_supported();

}  // namespace ds
