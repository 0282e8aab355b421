#include "job/results_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ds {

std::string encode_record(const PointRecord& r) {
  Json j = Json::object();
  j["entry"] = r.entry;
  j["label"] = r.label;
  // An array of [name, value] pairs, in the matrix's order: an object's keys come
  // back sorted where nlohmann_json is older than 3.9 (output/result_extra.h), and
  // --resume matches a point by its axes in order.
  Json axes = Json::array();
  for (const auto& a : r.axes) axes.push_back(Json::array({a.first, a.second}));
  j["axes"] = axes;
  j["status"] = r.ok ? "ok" : "failed";
  j["exit_code"] = r.exit_code;
  j["error"] = r.error.empty() ? Json() : Json(r.error);
  j["seconds"] = r.seconds;
  j["command_line"] = r.command_line;
  j["result"] = r.result;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

PointRecord decode_record(const std::string& line) {
  Json j;
  try {
    j = Json::parse(line);
  } catch (const std::exception&) {
    throw RunError("not JSON");
  }
  PointRecord r;
  try {
    r.entry = j.at("entry").get<std::string>();
    r.label = j.at("label").get<std::string>();
    const Json& axes = j.at("axes");
    if (!axes.is_array()) throw RunError("axes is not a list of [name, value] pairs");
    for (const Json& a : axes) {
      if (!a.is_array() || a.size() != 2) throw RunError("an axis is not a [name, value] pair");
      r.axes.emplace_back(a.at(0).get<std::string>(), a.at(1).get<std::string>());
    }
    const std::string status = j.at("status").get<std::string>();
    if (status != "ok" && status != "failed") throw RunError("status is neither ok nor failed");
    r.ok = status == "ok";
    r.exit_code = j.at("exit_code").get<int>();
    if (!j.at("error").is_null()) r.error = j.at("error").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    r.command_line = j.at("command_line").get<std::vector<std::string>>();
    r.result = j.at("result");
  } catch (const RunError&) {
    throw;
  } catch (const std::exception& e) {
    throw RunError(std::string("not a point's record (") + e.what() + ")");
  }
  return r;
}

bool same_point(const PointRecord& r, const std::string& entry,
                const std::vector<std::pair<std::string, std::string>>& axes) {
  return r.entry == entry && r.axes == axes;
}

ResultsLog::ResultsLog(std::string path, bool resume) : path_(std::move(path)) {
  std::string text;
  {
    std::ifstream in(path_, std::ios::binary);
    if (in) {
      std::ostringstream s;
      s << in.rdbuf();
      text = s.str();
    }
  }
  if (!resume && !text.empty())
    throw UsageError("run: the results file " + path_ +
                     " already holds results: --resume continues that job, or give --out another file");
  size_t keep = 0, at = 0, line_no = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    ++line_no;
    const bool last = nl == std::string::npos || nl + 1 == text.size();
    try {
      if (nl == std::string::npos) throw RunError("cut short");
      if (!line.empty()) previous_.push_back(decode_record(line));
      keep = nl + 1;
    } catch (const RunError& e) {
      if (!last) throw UsageError(path_ + ":" + std::to_string(line_no) + ": not a line dev-sandbox run wrote (" +
                                  e.what() + "): give --out another file");
      dropped_ = true;
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw RunError(sys_error("open(" + path_ + ")", errno).what());
  if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw RunError(sys_error("ftruncate(" + path_ + ")", err).what());
  }
}

ResultsLog::~ResultsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsLog::append(const PointRecord& r) {
  const std::string line = encode_record(r) + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RunError(sys_error("write(" + path_ + ")", errno).what());
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0 && errno != EINVAL) throw RunError(sys_error("fdatasync(" + path_ + ")", errno).what());
}

}  // namespace ds
