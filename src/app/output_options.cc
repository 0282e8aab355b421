#include "app/output_options.h"

#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "output/atomic_file.h"
#include "output/csv_writer.h"
#include "output/json_writer.h"
#include "output/tee_writer.h"
#include "output/text_writer.h"

namespace ds {

namespace {

// Forwards to the format's writer; owns the --output file, which appears only
// when finish() completes it (AtomicFile). After finish() it ignores further
// calls, so a caller may record a failure unconditionally. Results to stdout
// are checked after every write: a closed pipe stops the run (OutputClosed).
class OutputWriter : public ResultWriter {
 public:
  OutputWriter(std::unique_ptr<AtomicFile> file, std::ostream& out, std::string path, std::string format)
      : file_(std::move(file)), out_(out), path_(std::move(path)), format_(std::move(format)) {}
  ~OutputWriter() override { inner_.reset(); }
  void set_inner(std::unique_ptr<ResultWriter> w) { inner_ = std::move(w); }
  std::ostream& to() { return file_ ? file_->stream() : out_; }

  void begin(const RunInfo& info) override {
    if (finished_) return;
    inner_->begin(info);
    check_stdout();
  }
  void add(const CaseResult& r) override {
    if (finished_) return;
    inner_->add(r);
    check_stdout();
  }
  void validation(const std::string& c, bool pass) override {
    if (finished_) return;
    inner_->validation(c, pass);
    check_stdout();
  }
  void fail(const std::string& c, const std::string& error) override {
    if (!finished_) inner_->fail(c, error);
  }
  void nodes(const std::vector<NodeShare>& n, const std::vector<std::string>& labels) override {
    if (finished_) return;
    inner_->nodes(n, labels);
    check_stdout();
  }
  void finish() override {
    if (finished_) return;
    finished_ = true;
    inner_->finish();
    if (file_) {
      file_->commit();
      stderr_notes().tell("wrote the results to " + path_ + " (" + format_ + ")");
    } else {
      check_stdout();
    }
  }

 private:
  void check_stdout() {
    if (file_) return;
    out_.flush();
    if (!out_.fail()) return;
    const int err = errno;
    if (err == EPIPE) throw OutputClosed();
    throw RunError(std::string("writing results to stdout failed") + (err ? std::string(": ") + std::strerror(err) : ""));
  }

  std::unique_ptr<AtomicFile> file_;
  std::ostream& out_;
  std::string path_, format_;  // --output, --format: what finish() says it wrote
  std::unique_ptr<ResultWriter> inner_;
  bool finished_ = false;
};

}  // namespace

void add_output_options(CLI::App* app, OutputOptions& o) {
  app->add_option("--format", o.format,
                  "text|json|csv (default text); text,json or csv,json: both, the JSON document last")
      ->type_name("FORMAT");
  app->add_option("--output", o.output, "write results to FILE instead of stdout")->type_name("FILE");
}

namespace {

// The formats --format names, in order: one of text, json, csv, or a streaming one
// (text, csv) followed by json.
std::vector<std::string> formats_of(const std::string& format) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= format.size()) {
    const size_t end = std::min(format.find(',', at), format.size());
    out.push_back(format.substr(at, end - at));
    at = end + 1;
  }
  for (const std::string& f : out)
    if (f != "text" && f != "json" && f != "csv")
      throw UsageError("option --format got '" + format + "': accepts text, json or csv" +
                       (out.size() > 1 ? ", or text,json / csv,json" : ""));
  if (out.size() > 1 && !(out.size() == 2 && out[0] != "json" && out[1] == "json"))
    throw UsageError("option --format got '" + format +
                     "': two formats are text,json or csv,json (the JSON document comes last)");
  return out;
}

std::unique_ptr<ResultWriter> format_writer(const std::string& format, std::ostream& to) {
  if (format == "json") return std::make_unique<JsonWriter>(to);
  if (format == "csv") return std::make_unique<CsvWriter>(to);
  return std::make_unique<TextWriter>(to);
}

}  // namespace

void check_format(const std::string& format) { formats_of(format); }

std::unique_ptr<ResultWriter> make_writer(const OutputOptions& o, std::ostream& out) {
  const std::vector<std::string> formats = formats_of(o.format);
  std::unique_ptr<AtomicFile> file;
  if (!o.output.empty()) file = std::make_unique<AtomicFile>(o.output, "--output");
  auto w = std::make_unique<OutputWriter>(std::move(file), out, o.output, o.format);
  std::ostream& to = w->to();
  if (formats.size() == 1) {
    w->set_inner(format_writer(formats[0], to));
  } else {
    std::vector<std::unique_ptr<ResultWriter>> writers;
    for (const std::string& f : formats) writers.push_back(format_writer(f, to));
    w->set_inner(std::make_unique<TeeWriter>(std::move(writers)));
  }
  return w;
}

void write_or_record_failure(ResultWriter& writer, const std::vector<std::string>& command_line,
                             const std::function<void(bool& begun, std::string& current)>& measure) {
  bool begun = false;
  std::string current;
  try {
    measure(begun, current);
  } catch (const UsageError&) {
    throw;  // no document: the --output file never appears
  } catch (const OutputClosed&) {
    throw;  // nobody reads a document any more
  } catch (const std::exception& e) {
    if (!begun) {
      RunInfo info;
      info.tool_version = DS_VERSION;
      info.command_line = command_line;
      writer.begin(info);
    }
    writer.fail(current, e.what());  // ignored when the run already recorded it
    writer.finish();
    throw;
  }
}

RunInfo run_info(const SelectedBackend& selected, const std::vector<std::string>& command_line) {
  RunInfo info;
  info.tool_version = DS_VERSION;
  info.backend = selected.backend->name();
  info.backend_library = selected.probe.library_path;
  info.runtime_version = selected.probe.runtime_version;
  for (const auto& d : selected.probe.devices) info.devices.push_back(device_line(d));
  info.command_line = command_line;
  return info;
}

int run_ranks_writing(Cluster& ranks, const OutputOptions& o, const std::function<void(ResultWriter&)>& measure,
                      NodeLines lines, const std::function<std::string(const CaseResult&)>& label) {
  std::ostringstream none;
  auto writer = ranks.rank() == 0 ? make_writer(o, std::cout) : make_writer(OutputOptions{}, none);
  return run_across_ranks(ranks, *writer, measure, lines, label);
}

namespace {
// The backend line waits for the first thing the run says: a request the backend
// refuses (a usage error) stays one line.
std::string& pending_backend_line() {
  static std::string line;
  return line;
}

class StderrNotes : public Notes {
 public:
  void note(const std::string& line) override {
    say_pending();
    std::fprintf(stderr, "dev-sandbox: note: %s\n", line.c_str());
  }
  void tell(const std::string& line) override {
    say_pending();
    std::fprintf(stderr, "dev-sandbox: %s\n", line.c_str());
  }

 private:
  static void say_pending() {
    std::string& pending = pending_backend_line();
    if (pending.empty()) return;
    std::fprintf(stderr, "dev-sandbox: %s\n", pending.c_str());
    pending.clear();
  }
};
}  // namespace

Notes& stderr_notes() {
  static StderrNotes notes;
  return notes;
}

SelectedBackend select_and_say(const std::string& requested, const std::string& sim_tail) {
  SelectedBackend s = select_backend(requested);
  if (cluster().rank() == 0) pending_backend_line() = backend_line(s, sim_tail);
  return s;
}

}  // namespace ds
