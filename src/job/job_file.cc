// The job file's reader: YAML through yaml-cpp (docs/run.md says why YAML).
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "job/job.h"

namespace ds {

namespace {

JobPlace place_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return JobPlace{m.line >= 0 ? static_cast<size_t>(m.line) + 1 : 0};
}

const char* kind_of(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "empty";
  return "a scalar";
}

struct Reader {
  const std::string& path;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& entry, const std::string& key,
                         const std::string& what) const {
    throw UsageError(job_error(path, place_of(at), entry, key, what));
  }

  // The keys of mapping `m` in order, each once.
  std::vector<std::pair<YAML::Node, YAML::Node>> pairs(const YAML::Node& m, const std::string& entry) const {
    std::vector<std::pair<YAML::Node, YAML::Node>> out;
    std::set<std::string> seen;
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->first.IsScalar() || it->first.Scalar().empty())
        fail(it->first, entry, "", "a key must be a plain word");
      const std::string key = it->first.Scalar();
      if (!seen.insert(key).second)
        fail(it->first, entry, entry.empty() ? "" : key,
             entry.empty() ? "entry '" + key + "' is given twice" : "given twice");
      out.emplace_back(it->first, it->second);
    }
    return out;
  }

  // An option's value: a scalar, or a list of scalars (the option given once per item).
  JobSetting setting(const YAML::Node& k, const YAML::Node& v, const std::string& entry, bool axis) const {
    JobSetting s;
    s.key = k.Scalar();
    s.place = place_of(k);
    if (axis && !v.IsSequence())
      fail(k, entry, "matrix." + s.key, std::string("an axis is a list of values ([a, b]), not ") + kind_of(v));
    if (v.IsScalar()) {
      s.values.push_back(v.Scalar());
    } else if (v.IsSequence()) {
      for (const YAML::Node& item : v) {
        if (!item.IsScalar())
          fail(item, entry, axis ? "matrix." + s.key : s.key,
               std::string("a list holds plain values, not ") + kind_of(item));
        s.values.push_back(item.Scalar());
      }
      if (s.values.empty())
        fail(k, entry, axis ? "matrix." + s.key : s.key, axis ? "an axis needs at least one value" : "an empty list");
    } else {
      fail(k, entry, s.key, std::string("a value is a plain value or a list of them, not ") + kind_of(v));
    }
    return s;
  }

  JobEntry entry(const YAML::Node& k, const YAML::Node& v) const {
    JobEntry e;
    e.name = k.Scalar();
    e.place = place_of(k);
    if (!v.IsMap()) fail(k, e.name, "", std::string("an entry is a mapping of its options, not ") + kind_of(v));
    bool has_command = false;
    for (const auto& kv : pairs(v, e.name)) {
      const std::string key = kv.first.Scalar();
      if (key == "command") {
        if (!kv.second.IsScalar()) fail(kv.first, e.name, key, "the sub-command is one word (copy, aio, load, ...)");
        e.command = kv.second.Scalar();
        has_command = true;
      } else if (key == "matrix") {
        if (!kv.second.IsMap())
          fail(kv.first, e.name, key, std::string("the matrix is a mapping of axes, not ") + kind_of(kv.second));
        for (const auto& axis : pairs(kv.second, e.name)) e.axes.push_back(setting(axis.first, axis.second, e.name, true));
        if (e.axes.empty()) fail(kv.first, e.name, key, "an empty matrix: give it an axis or leave it out");
      } else {
        e.options.push_back(setting(kv.first, kv.second, e.name, false));
      }
    }
    if (!has_command) fail(k, e.name, "", "no 'command' (the sub-command to run: copy, trans, aio, load, offload)");
    return e;
  }
};

}  // namespace

bool job_files_supported() { return true; }

JobSpec parse_job_text(const std::string& path, const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError(job_error(path, JobPlace{e.mark.line >= 0 ? static_cast<size_t>(e.mark.line) + 1 : 0}, "",
                               "", "not valid YAML: " + e.msg));
  }
  const Reader r{path};
  if (root.IsNull() || (root.IsMap() && root.size() == 0))
    throw UsageError(job_error(path, {}, "", "", "no entries: the file is a mapping of entry names to entries"));
  if (!root.IsMap())
    r.fail(root, "", "", std::string("the file is a mapping of entry names to entries, not ") + kind_of(root));
  JobSpec job;
  job.path = path;
  for (const auto& kv : r.pairs(root, "")) job.entries.push_back(r.entry(kv.first, kv.second));
  return job;
}

JobSpec read_job_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("run: cannot read the job file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_job_text(path, text.str());
}

}  // namespace ds
