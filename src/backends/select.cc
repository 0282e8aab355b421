#include "backends/select.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace ds {

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& f : backend_factories()) v.push_back(f.name);
    return v;
  }();
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  for (const auto& f : backend_factories())
    if (f.name == name) return f.make();
  std::string accepted = "auto";
  for (const auto& n : backend_names()) accepted += "|" + n;
  throw UsageError("option --backend got '" + name + "': accepts " + accepted);
}

namespace {

nlohmann::json to_json(const DeviceInfo& d) {
  return {{"index", d.index},     {"kind", d.kind},           {"name", d.name},
          {"pci", d.pci_bus_id},  {"numa", d.numa_node},      {"memory", d.memory_name},
          {"free", d.free_bytes}, {"total", d.total_bytes}};
}

DeviceInfo device_from_json(const nlohmann::json& j) {
  DeviceInfo d;
  d.index = j.at("index");
  d.kind = j.at("kind");
  d.name = j.at("name");
  d.pci_bus_id = j.at("pci");
  d.numa_node = j.at("numa");
  d.memory_name = j.at("memory");
  d.free_bytes = j.at("free");
  d.total_bytes = j.at("total");
  return d;
}

nlohmann::json to_json(const BackendProbe& p) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : p.devices) devices.push_back(to_json(d));
  return {{"loaded", p.loaded},
          {"error", p.error},
          {"library_path", p.library_path},
          {"runtime_version", p.runtime_version},
          {"device_count", p.device_count},
          {"devices", devices},
          {"facts", p.facts},
          {"direct_unavailable", p.direct_unavailable},
          {"register_unavailable", p.register_unavailable},
          {"gate_unavailable", p.gate_unavailable}};
}

BackendProbe from_json(const nlohmann::json& j) {
  BackendProbe p;
  p.loaded = j.at("loaded");
  p.error = j.at("error");
  p.library_path = j.at("library_path");
  p.runtime_version = j.at("runtime_version");
  p.device_count = j.at("device_count");
  for (const auto& d : j.at("devices")) p.devices.push_back(device_from_json(d));
  p.facts = j.at("facts").get<std::vector<std::pair<std::string, std::string>>>();
  p.direct_unavailable = j.at("direct_unavailable");
  p.register_unavailable = j.at("register_unavailable");
  p.gate_unavailable = j.at("gate_unavailable");
  return p;
}

}  // namespace

BackendProbe probe_in_child(Backend& backend) {
  int fds[2];
  if (pipe(fds) != 0) throw sys_error("pipe", errno);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    throw sys_error("fork", err);
  }
  if (pid == 0) {
    close(fds[0]);
    signal(SIGINT, SIG_DFL);  // a stuck runtime start must not outlive Ctrl-C
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    BackendProbe p;
    try {
      backend.init_process();
      p = backend.probe();
    } catch (const std::exception& e) {
      p = BackendProbe{};
      p.error = e.what();
    }
    const std::string text = to_json(p).dump();
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t w = write(fds[1], text.data() + off, text.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);  // a forked child must not run the parent's destructors
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t r = read(fds[0], buf, sizeof buf);
    if (r > 0) {
      text.append(buf, static_cast<size_t>(r));
    } else if (r < 0 && errno == EINTR) {
      if (interrupted()) {
        close(fds[0]);
        kill(pid, SIGKILL);
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        throw Interrupted();
      }
      continue;
    } else {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  BackendProbe p;
  try {
    p = from_json(nlohmann::json::parse(text));
  } catch (const std::exception&) {
    p.error = backend.name() + " probe process ended without a report (" +
              (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                   : "exit " + std::to_string(WEXITSTATUS(status))) +
              ")";
  }
  return p;
}

std::string auto_passed_over(const std::vector<std::pair<std::string, BackendProbe>>& before) {
  std::vector<std::string> missing, empty;
  for (const auto& b : before) (b.second.loaded ? empty : missing).push_back(b.first);
  auto either = [](const std::vector<std::string>& names) {
    std::string t;
    for (size_t i = 0; i < names.size(); ++i)
      t += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return t;
  };
  std::string why;
  if (!missing.empty()) why = "no " + either(missing) + " runtime found";
  if (!empty.empty())
    why += (why.empty() ? "the " : "; the ") + either(empty) + " runtime" + (empty.size() == 1 ? "" : "s") +
           " loaded but " + (empty.size() == 1 ? "sees" : "see") + " no device";
  return why;
}

std::string backend_line(const SelectedBackend& s, const std::string& sim_tail) {
  std::string line = "backend " + s.backend->name() + " (" + s.how + ")";
  if (s.backend->device_memory_is_host() && !sim_tail.empty()) line += " -- " + sim_tail;
  return line;
}

SelectedBackend select_backend(const std::string& requested) {
  std::string name = requested;
  std::string how = "--backend " + requested;
  if (name.empty()) {
    const char* env = std::getenv("DEV_SANDBOX_BACKEND");
    name = (env && *env) ? env : "auto";
    how = "DEV_SANDBOX_BACKEND=" + name;
    if (name != "auto" &&
        std::find(backend_names().begin(), backend_names().end(), name) == backend_names().end()) {
      std::string accepted = "auto";
      for (const auto& n : backend_names()) accepted += "|" + n;
      throw UsageError("DEV_SANDBOX_BACKEND is '" + name + "': accepts " + accepted);
    }
  }
  if (name != "auto") {
    SelectedBackend s{make_backend(name), {}, how};
    s.probe = probe_in_child(*s.backend);
    if (!s.probe.loaded) throw RunError(s.probe.error);
    if (s.probe.device_count < 1) throw RunError(name + ": the runtime loaded but sees no device");
    return s;
  }
  std::vector<std::pair<std::string, BackendProbe>> before;
  for (const auto& n : backend_names()) {
    SelectedBackend s{make_backend(n), {}, {}};
    s.probe = probe_in_child(*s.backend);
    if (s.probe.loaded && s.probe.device_count >= 1) {
      const std::string passed = auto_passed_over(before);
      s.how = "auto" + (passed.empty() ? std::string() : ": " + passed) +
              (s.backend->device_memory_is_host() ? "; see `dev-sandbox doctor`" : "");
      return s;
    }
    before.emplace_back(n, s.probe);
  }
  throw RunError("no backend could be started (not even sim)");
}

}  // namespace ds
