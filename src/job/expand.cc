// A job's points: each entry's matrix product, each point's argv.
#include "core/error.h"
#include "job/job.h"

namespace ds {

std::string job_error(const std::string& path, JobPlace place, const std::string& entry, const std::string& key,
                      const std::string& what) {
  std::string out = path;
  if (place.line) out += ":" + std::to_string(place.line);
  out += ":";
  if (!entry.empty()) out += " entry '" + entry + "':";
  if (!key.empty()) out += " key '" + key + "':";
  return out + " " + what;
}

std::string point_label(const std::string& entry, const std::vector<std::pair<std::string, std::string>>& axes) {
  if (axes.empty()) return entry;
  std::string out = entry + "[";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? "," : "") + axes[i].first + "=" + axes[i].second;
  return out + "]";
}

namespace {

// The words `value` of option `o` (key `key`) adds: a flag true or false, a value after its option.
void add_words(std::vector<std::string>& args, const JobOption& o, const std::string& value, const std::string& path,
               const JobEntry& e, const JobSetting& s, const std::string& key) {
  if (o.value_optional && (value == "true" || value == "false")) {
    if (value == "true") args.push_back(o.flag);
    return;
  }
  if (!o.takes_value) {
    if (value == "true") args.push_back(o.flag);
    else if (value != "false") throw UsageError(job_error(path, s.place, e.name, key, "a flag: true or false, not '" + value + "'"));
    return;
  }
  args.push_back(o.flag);
  args.push_back(value);
}

JobOption option_of(const JobCommands& commands, const std::string& path, const JobEntry& e, const JobSetting& s,
                    const std::string& key) {
  const JobOption o = commands.option(e.command, s.key);
  if (o.flag.empty()) throw UsageError(job_error(path, s.place, e.name, key, o.error));
  return o;
}

void check_keys(const JobSpec& job, const JobEntry& e) {
  for (const JobSetting& a : e.axes)
    for (const JobSetting& o : e.options)
      if (o.key == a.key)
        throw UsageError(job_error(job.path, a.place, e.name, "matrix." + a.key,
                                   "also given as an option of the entry (line " + std::to_string(o.place.line) +
                                       "): give it in one place"));
}

}  // namespace

std::vector<JobPoint> expand_job(const JobSpec& job, const JobCommands& commands) {
  size_t total = 0;
  for (const JobEntry& e : job.entries) {
    size_t n = 1;
    for (const JobSetting& a : e.axes) {
      n = a.values.size() > kMaxJobPoints / n ? kMaxJobPoints + 1 : n * a.values.size();
      if (n > kMaxJobPoints) break;
    }
    total += n;
    if (total > kMaxJobPoints)
      throw UsageError(job_error(job.path, e.place, e.name, "matrix",
                                 "the job has more than " + std::to_string(kMaxJobPoints) +
                                     " points (the product of every entry's axes): split it"));
  }
  std::vector<JobPoint> out;
  for (const JobEntry& e : job.entries) {
    const std::string refused = commands.check_command(e.command);
    if (!refused.empty()) throw UsageError(job_error(job.path, e.place, e.name, "command", refused));
    check_keys(job, e);
    std::vector<std::string> base = {e.command};
    for (const JobSetting& s : e.options) {
      const JobOption o = option_of(commands, job.path, e, s, s.key);
      for (const std::string& v : s.values) add_words(base, o, v, job.path, e, s, s.key);
    }
    std::vector<JobOption> axis_options;
    for (const JobSetting& a : e.axes) axis_options.push_back(option_of(commands, job.path, e, a, "matrix." + a.key));
    // An odometer over the axes, the last one fastest.
    std::vector<size_t> at(e.axes.size(), 0);
    for (;;) {
      JobPoint p;
      p.entry = e.name;
      p.command = e.command;
      p.place = e.place;
      p.args = base;
      for (size_t i = 0; i < e.axes.size(); ++i) {
        const std::string& v = e.axes[i].values[at[i]];
        p.axes.emplace_back(e.axes[i].key, v);
        add_words(p.args, axis_options[i], v, job.path, e, e.axes[i], "matrix." + e.axes[i].key);
      }
      p.label = point_label(e.name, p.axes);
      out.push_back(std::move(p));
      size_t i = e.axes.size();
      while (i > 0 && ++at[i - 1] == e.axes[i - 1].values.size()) at[--i] = 0;
      if (i == 0) break;
    }
  }
  return out;
}

}  // namespace ds
