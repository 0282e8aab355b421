#include "topology/topology.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/units.h"

namespace ds {

namespace {

std::string first_line(const std::string& path, bool* found) {
  std::ifstream in(path);
  *found = static_cast<bool>(in);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

bool parse_int(const std::string& s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::atoi(s.c_str());
  return true;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

std::string sysfs_root() {
  const char* r = std::getenv("DS_SYSFS_ROOT");
  return r && *r ? std::string(r) : std::string();
}

bool parse_id_list(const std::string& text_in, std::vector<int>* out) {
  const std::string text = trim(text_in);
  std::vector<int> ids;
  for (const std::string& item : text.empty() ? std::vector<std::string>() : split_commas(text)) {
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!parse_int(item, &lo)) return false;
      hi = lo;
    } else if (!parse_int(item.substr(0, dash), &lo) || !parse_int(item.substr(dash + 1), &hi) || hi < lo) {
      return false;
    }
    if (hi - lo > 65536) return false;
    for (int i = lo; i <= hi; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  *out = std::move(ids);
  return true;
}

std::string format_id_list(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

const NumaNode* HostTopology::node(int id) const {
  for (const NumaNode& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

std::vector<int> HostTopology::node_ids() const {
  std::vector<int> ids;
  for (const NumaNode& n : nodes) ids.push_back(n.id);
  return ids;
}

HostTopology read_host_topology(const std::string& root) {
  HostTopology t;
  const std::string dir = root + "/sys/devices/system/node";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      int id = 0;
      if (std::string(e->d_name).rfind("node", 0) != 0 || !parse_int(e->d_name + 4, &id)) continue;
      NumaNode n;
      n.id = id;
      bool found = false;
      const std::string list = first_line(dir + "/" + e->d_name + "/cpulist", &found);
      if (!parse_id_list(list, &n.cpus)) n.cpus.clear();  // unreadable: treated as no CPUs
      t.nodes.push_back(n);
    }
    closedir(d);
  }
  if (t.nodes.empty()) {  // a kernel without NUMA: one node with every CPU
    NumaNode n;
    bool found = false;
    if (!parse_id_list(first_line(root + "/sys/devices/system/cpu/online", &found), &n.cpus) || n.cpus.empty()) {
      n.cpus.clear();
      for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) n.cpus.push_back(static_cast<int>(c));
    }
    t.nodes.push_back(n);
  }
  std::sort(t.nodes.begin(), t.nodes.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return t;
}

std::string sysfs_pci_address(const std::string& bus_id) {
  std::string id = trim(bus_id);
  for (auto& ch : id) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon != 4 && id.find(':', colon + 1) != std::string::npos) {
    const unsigned long domain = std::strtoul(id.substr(0, colon).c_str(), nullptr, 16);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04lx", domain);
    id = buf + id.substr(colon);
  }
  return id;
}

int pci_numa_node(const std::string& bus_id, const std::string& root) {
  bool found = false;
  const std::string text =
      trim(first_line(root + "/sys/bus/pci/devices/" + sysfs_pci_address(bus_id) + "/numa_node", &found));
  if (!found || text.empty()) return kNodeUnknown;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || v > 65535) return kNodeUnknown;
  if (v < 0) return kNodeNone;
  return static_cast<int>(v);
}

}  // namespace ds
