#include "app/output_options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "output/csv_writer.h"
#include "output/json_writer.h"
#include "output/text_writer.h"

namespace ds {

namespace {

// Forwards to the format's writer; owns the --output file. After finish() it
// ignores further calls, so a caller may record a failure unconditionally.
class OutputWriter : public ResultWriter {
 public:
  OutputWriter(std::unique_ptr<std::ofstream> file, std::string path, bool created)
      : file_(std::move(file)), path_(std::move(path)), created_(created) {}
  ~OutputWriter() override {
    inner_.reset();
    if (file_ && !finished_ && created_) {
      file_.reset();
      ::unlink(path_.c_str());
    }
  }
  void set_inner(std::unique_ptr<ResultWriter> w) { inner_ = std::move(w); }
  std::ostream* file() { return file_.get(); }

  void begin(const RunInfo& info) override {
    if (!finished_) inner_->begin(info);
  }
  void add(const CaseResult& r) override {
    if (!finished_) inner_->add(r);
  }
  void validation(const std::string& c, bool pass) override {
    if (!finished_) inner_->validation(c, pass);
  }
  void fail(const std::string& c, const std::string& error) override {
    if (!finished_) inner_->fail(c, error);
  }
  void finish() override {
    if (finished_) return;
    finished_ = true;
    inner_->finish();
    if (file_) {
      file_->close();
      if (file_->fail()) throw RunError("writing --output " + path_ + " failed");
    }
  }

 private:
  std::unique_ptr<std::ofstream> file_;
  std::string path_;
  bool created_;
  std::unique_ptr<ResultWriter> inner_;
  bool finished_ = false;
};

}  // namespace

void add_output_options(CLI::App* app, OutputOptions& o) {
  app->add_option("--format", o.format, "text|json|csv (default text)")->type_name("text|json|csv");
  app->add_option("--output", o.output, "write results to FILE instead of stdout")->type_name("FILE");
}

void check_format(const std::string& format) {
  if (format != "text" && format != "json" && format != "csv")
    throw UsageError("option --format got '" + format + "': accepts text, json or csv");
}

std::unique_ptr<ResultWriter> make_writer(const OutputOptions& o, std::ostream& out) {
  check_format(o.format);
  std::unique_ptr<std::ofstream> file;
  bool created = false;
  if (!o.output.empty()) {
    struct stat st;
    created = ::stat(o.output.c_str(), &st) != 0;
    if (!created && S_ISDIR(st.st_mode))
      throw RunError("cannot write --output " + o.output + ": it is a directory");
    errno = 0;
    file = std::make_unique<std::ofstream>(o.output, std::ios::out | std::ios::trunc);
    if (!file->is_open())
      throw RunError("cannot write --output " + o.output + ": " +
                     (errno ? std::strerror(errno) : "open failed"));
  }
  auto w = std::make_unique<OutputWriter>(std::move(file), o.output, created);
  std::ostream& to = w->file() ? *w->file() : out;
  if (o.format == "json")
    w->set_inner(std::make_unique<JsonWriter>(to));
  else if (o.format == "csv")
    w->set_inner(std::make_unique<CsvWriter>(to));
  else
    w->set_inner(std::make_unique<TextWriter>(to));
  return w;
}

void write_or_record_failure(ResultWriter& writer, const std::vector<std::string>& command_line,
                             const std::function<void(bool& begun, std::string& current)>& measure) {
  bool begun = false;
  std::string current;
  try {
    measure(begun, current);
  } catch (const UsageError&) {
    throw;  // no document, and the writer removes a file it created
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

}  // namespace ds
