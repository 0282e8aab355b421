#include "cases/matrix.h"

#include <algorithm>
#include <cctype>

#include "cases/case_runner.h"
#include "core/error.h"

namespace ds {

namespace {

struct Named {
  const char* name;
  BufKind kind;
};

const Named kHostTypes[] = {{"normal", BufKind::kPageable},
                            {"anonymous", BufKind::kAnonymous},
                            {"registered", BufKind::kRegistered},
                            {"pinned", BufKind::kPinned}};
const Named kDeviceTypes[] = {{"normal", BufKind::kDevice}};

// Multi-stream without -M: the copy default of 4 streams.
constexpr int kDefaultStreams = 4;

struct Method {
  std::string name;
  CopyMethod method;
  int streams;
};

Method parse_method(const std::string& m) {
  if (m == "ce") return {m, CopyMethod::kCe, 1};
  if (m == "batch_ce") return {m, CopyMethod::kCeBatch, 1};
  if (m == "sm") return {m, CopyMethod::kKernel, 1};
  if (m == "memcpy") return {m, CopyMethod::kMemcpy, 1};
  if (m.rfind("ms_", 0) == 0) {
    const std::string n = m.substr(3);
    const bool digits = !n.empty() && n.size() <= 4 &&
                        std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!digits || std::stoi(n) < 1 || std::stoi(n) > kMaxStreams)
      throw UsageError("option -M got '" + m + "': ms_<S> needs S streams, a whole number from 1 to " +
                       std::to_string(kMaxStreams) + " (e.g. ms_48)");
    return {m, CopyMethod::kCeMultiStream, std::stoi(n)};
  }
  throw UsageError("option -M got '" + m + "': accepts ce, batch_ce, ms_<S> (e.g. ms_48), sm (cuda), memcpy (sim)");
}

// Every method, ms_<S> with the default S: what -M means when it is not given.
std::vector<Method> default_methods() {
  return {{"ce", CopyMethod::kCe, 1},
          {"batch_ce", CopyMethod::kCeBatch, 1},
          {"ms_" + std::to_string(kDefaultStreams), CopyMethod::kCeMultiStream, kDefaultStreams},
          {"sm", CopyMethod::kKernel, 1},
          {"memcpy", CopyMethod::kMemcpy, 1}};
}

template <size_t N>
std::vector<Named> pick(const Named (&all)[N], const std::vector<std::string>& wanted, const char* option) {
  if (wanted.empty()) return std::vector<Named>(all, all + N);
  std::vector<Named> out;
  for (const auto& w : wanted) {
    auto it = std::find_if(all, all + N, [&](const Named& n) { return w == n.name; });
    if (it == all + N) {
      std::string accepted;
      for (const Named& n : all) accepted += std::string(accepted.empty() ? "" : "|") + n.name;
      throw UsageError(std::string("option ") + option + " got '" + w + "': accepts " + accepted);
    }
    if (std::none_of(out.begin(), out.end(), [&](const Named& n) { return w == n.name; })) out.push_back(*it);
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<TransCombo> trans_matrix(const TransFilters& f, const Backend& backend) {
  std::vector<std::string> dirs;
  for (const auto& d : f.directions) {
    if (d != "H2D" && d != "D2H") throw UsageError("option -t got '" + d + "': accepts H2D|D2H");
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  }
  if (dirs.empty()) dirs = {"H2D", "D2H"};
  const auto hosts = pick(kHostTypes, f.host_types, "-H");
  const auto devices = pick(kDeviceTypes, f.device_types, "-D");
  std::vector<Method> methods;
  for (const auto& m : f.methods) {
    Method parsed = parse_method(m);
    if (std::none_of(methods.begin(), methods.end(), [&](const Method& x) { return x.name == parsed.name; }))
      methods.push_back(parsed);
  }
  if (methods.empty()) methods = default_methods();

  std::vector<TransCombo> out;
  for (const auto& dir : dirs) {
    const bool h2d = dir == "H2D";
    for (const Named& h : hosts) {
      for (const Named& d : devices) {
        for (const Method& m : methods) {
          CaseSpec c;
          c.name = lower(dir) + "_" + h.name + "_" + d.name + "_" + m.name;
          c.brief = std::string(h2d ? "memcpy from " : "memcpy to ") + h.name + " host " +
                    (h2d ? "to " : "from ") + d.name + " device with " + m.name + " and fork submit";
          c.src = h2d ? h.kind : d.kind;
          c.dst = h2d ? d.kind : h.kind;
          c.shared_src = false;
          c.method = m.method;
          c.topology = Topology::kFork;
          if (unsupported_reason(c, backend).empty()) out.push_back({c, m.streams});
        }
      }
    }
  }
  return out;
}

std::vector<std::string> trans_offered_methods(const Backend& backend) {
  std::vector<std::string> names;
  for (const Method& m : default_methods()) {
    TransFilters only;
    only.methods = {m.name};
    if (!trans_matrix(only, backend).empty()) names.push_back(m.name);
  }
  return names;
}

std::vector<std::string> trans_offered(const Backend& backend) {
  std::vector<std::string> names;
  for (const auto& c : trans_matrix(TransFilters{}, backend)) names.push_back(c.spec.name);
  return names;
}

}  // namespace ds
