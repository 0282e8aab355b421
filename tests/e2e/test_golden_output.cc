// The output of a fixed set of runs, compared with what tests/golden/ holds, the
// measured numbers masked: restructuring the code must not change what users read.
// Text keeps its layout up to the Count column (the timing cells vary in width);
// JSON and CSV keep every key and column. Rewrite the files after a deliberate change
// with DS_GOLDEN_UPDATE=1 (then review the diff).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

using namespace dstest;

namespace {

struct GoldenRun {
  const char* name;  // the golden file: tests/golden/<name>.txt
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  const char* format;  // text, json, csv
};

// A summary line: which results it ranks (sorted, the order is the machine's), not
// their figures or marks.
std::string mask_summary(const std::string& line) {
  const size_t colon = line.find("):");
  std::vector<std::string> names;
  static const std::regex entry(R"((?:^|\s)[0-9]+\. (\S+?)\*? [0-9.]+ GiB/s)");
  const std::string rest = line.substr(colon + 2);
  for (auto m = std::sregex_iterator(rest.begin(), rest.end(), entry); m != std::sregex_iterator(); ++m)
    names.push_back((*m)[1]);
  std::sort(names.begin(), names.end());
  std::string out = line.substr(0, colon + 2) + " <ranking of";
  for (const std::string& n : names) out += " " + n;
  return out + ">";
}

// Text: a result row keeps everything up to and including the Count cell; the
// timing cells and BW become "<timings>"; the Wall line keeps its labels, its
// figures become "<n>". Everything else stays as printed.
// A Method of "<engine>+BUF..." (the page cache where this machine's filesystem
// refused O_DIRECT) is shown without "+BUF", its column (in the header and the row)
// as wide as the writer makes it for that Method: at least 10, one more than the cell.
void mask_buffered_method(std::string& header, std::string& row) {
  const size_t at = header.find("Method"), next = header.find("Size(KB)");
  if (at == std::string::npos || next == std::string::npos || row.size() < next) return;
  std::string method = row.substr(at, row.find(' ', at) - at);
  const size_t buf = method.find("+BUF");
  if (buf == std::string::npos) return;
  method.erase(buf, 4);
  const size_t width = std::max<size_t>(10, method.size() + 1);
  header = header.substr(0, at) + "Method" + std::string(width - 6, ' ') + header.substr(next);
  row = row.substr(0, at) + method + std::string(width - method.size(), ' ') + row.substr(next);
}

std::string mask_text(const std::string& out) {
  std::istringstream in(out);
  std::string line, masked, header;
  bool row_next = false;
  while (std::getline(in, line)) {
    if (row_next) {
      mask_buffered_method(header, line);
      masked += header + "\n";
      // From, To, Method, Size(KB), Count: five cells, then the timings.
      size_t pos = 0;
      for (int cell = 0; cell < 5; ++cell) {
        pos = line.find_first_not_of(' ', pos);
        pos = line.find(' ', pos);
      }
      line = line.substr(0, pos) + " <timings>";
      row_next = false;
    }
    if (line.rfind("  From ", 0) == 0) {  // written with its row
      row_next = true;
      header = line;
      continue;
    }
    // The notes depend on how the machine timed this run (their exact texts are
    // pinned in tests/unit/test_verdict.cc and test_verdict_e2e.cc): left out.
    if (line.rfind("  Note: ", 0) == 0) continue;
    if (line.rfind("  Verdict: ", 0) == 0)
      line = std::regex_replace(line, std::regex(R"([0-9]+(\.[0-9]+)?( GiB/s| per card))"), "<n>$2");
    if (line.rfind("Summary (", 0) == 0) line = mask_summary(line);
    if (line.rfind("  Wall: ", 0) == 0) line = std::regex_replace(line, std::regex(R"(=[0-9. /]+)"), "=<n> ");
    // duplex: each direction's row keeps its Size and Count; the figures are masked.
    if (line.rfind("  H2D: ", 0) == 0 || line.rfind("  D2H: ", 0) == 0)
      line = std::regex_replace(line, std::regex(R"((Copy\(us\)-\(Min/Max/Avg/P50/P90\)|BW\(GB/s\))=[0-9. /]+)"),
                                "$1=<n> ");
    if (line.rfind("  Duplex: ", 0) == 0) line = std::regex_replace(line, std::regex(R"([0-9]+\.[0-9]+)"), "<n>");
    if (line.rfind("  Stages: ", 0) == 0) {  // load: the figures and the verdict they give
      line = std::regex_replace(line, std::regex(R"([0-9]+\.[0-9]+)"), "<n>");
      line = std::regex_replace(line, std::regex(R"(bottleneck: .*)"), "bottleneck: <verdict>");
    }
    // load --offload-ratio: each direction's line, the busy times, the Mix line and its verdict.
    for (const char* mixed : {"  Load: ", "  Offload: ", "  Busy: ", "  Mix: "})
      if (line.rfind(mixed, 0) == 0) {
        line = std::regex_replace(line, std::regex(R"(P90\)=[0-9. /]+)"), "P90)=<n> ");
        line = std::regex_replace(line, std::regex(R"(% of [0-9.]+ \((affinity|cgroup quota)\) )"),
                                  "% of <cpus> (<bound>) ");
        line = std::regex_replace(line, std::regex(R"(\([0-9.]+ of [0-9.]+ ms\))"), "(<n> of <n> ms)");
        line = std::regex_replace(line, std::regex(R"([0-9]+(\.[0-9]+)?(x|%| GiB/s|,| \+| =| \())"), "<n>$2");
        line = std::regex_replace(line, std::regex(R"(BW\(GB/s\)=[0-9.]+)"), "BW(GB/s)=<n>");
        line = std::regex_replace(line, std::regex(R"(short: .*)"), "short: <verdict>");
      }
    masked += line + "\n";
  }
  return masked;
}

// JSON: measured values become 0; paths that vary with the machine are masked.
std::string mask_json(const std::string& out) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(out);
  for (auto& r : doc["results"]) {
    for (const char* stage : {"submit_us", "copy_us", "wall_us", "start_skew_us"})
      for (auto& kv : r[stage].items()) kv.value() = 0;
    for (const char* v : {"bandwidth_gib_s", "bandwidth_gb_s", "wall_bandwidth_gib_s", "setup_s", "retries"}) r[v] = 0;
    r["verdict"] = {{"text", "<verdict>"}, {"notes", "<notes>"}};  // worded from the figures
    if (r.contains("kv_load_ms"))  // --model: one request's times
      for (const char* v : {"per_card", "end_to_end"}) r["kv_load_ms"][v] = 0;
    for (const char* staged : {"load_stages", "offload_stages"})  // the stages alone, and the verdict they give
      if (r.contains(staged))
        for (auto& kv : r[staged].items()) {
          if (kv.value().is_object())
            for (auto& s : kv.value().items()) s.value() = 0;
          else if (kv.value().is_number())
            kv.value() = 0;
          else
            kv.value() = "<verdict>";
        }
    if (r.contains("duplex"))  // each direction's bytes, block and count stay
      for (auto& kv : r["duplex"].items()) {
        if (kv.value().is_object()) {
          for (auto& f : kv.value().items())
            if (f.key() != "bytes" && f.key() != "block_bytes" && f.key() != "count") {
              if (f.value().is_object())
                for (auto& st : f.value().items()) st.value() = 0;
              else
                f.value() = 0;
            }
        } else if (kv.key() != "ratio") {
          kv.value() = 0;
        }
      }
    if (r.contains("mix"))  // load --offload-ratio: every measured figure, and the verdict they give
      for (auto& kv : r["mix"].items()) {
        auto zero = [](nlohmann::ordered_json& v) {
          if (v.is_object())
            for (auto& s : v.items()) s.value() = 0;
          else if (v.is_number_float())
            v = 0;
        };
        if (kv.key() == "load" || kv.key() == "offload") {
          for (auto& d : kv.value().items())
            if (d.key() != "bytes" && d.key() != "block_bytes" && d.key() != "count") zero(d.value());
        } else if (kv.key() == "short") {
          kv.value() = "<verdict>";
        } else if (kv.key() != "offload_ratio" && kv.key() != "ratio" && kv.key() != "cpus") {
          zero(kv.value());
        } else if (kv.key() == "cpus") {
          kv.value() = 0;  // the CPUs this machine lets the workers use
        }
        if (kv.key() == "cpus_bound") kv.value() = "<bound>";  // what bound them: affinity or a cgroup quota
      }
    if (r.contains("device_io"))  // aio: the disk under the workspace varies with the machine
      for (auto& d : r["device_io"]) {
        d["device"] = "<dev>";
        d["not_found"] = nullptr;
        d["bytes"] = 0;
        d["percent"] = 0;
        d["below_95"] = false;
      }
  }
  for (auto& r : doc["results"]) {
    if (!r.contains("numa")) continue;
    // --numa: which CPUs and nodes the workers had varies with the machine.
    auto mask_buffer = [](nlohmann::ordered_json& b) {
      for (const char* k : {"node", "bound_to"})
        if (!b[k].is_null()) b[k] = "<node>";
      b["pages_by_node"] = "<nodes>";
    };
    for (auto& w : r["numa"]["workers"]) {
      w["cpus"] = "<cpus>";
      if (!w["node"].is_null()) w["node"] = "<node>";
      for (auto& b : w["buffers"]) mask_buffer(b);
    }
    for (auto& b : r["numa"]["shared_region"]) mask_buffer(b);
  }
  if (doc.contains("summary"))  // the ranking's order and figures are the machine's
    for (auto& g : doc["summary"]) {
      for (auto& e : g["ranking"]) {
        e["bandwidth_gib_s"] = 0;
        e["percent_of_best"] = 0;
        e["noted"] = false;
      }
      std::sort(g["ranking"].begin(), g["ranking"].end(),
                [](const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) { return a["name"] < b["name"]; });
    }
  if (doc["backend"].is_object() && doc["backend"]["library"].is_string()) doc["backend"]["library"] = "<lib>";
  if (!doc["command_line"].empty()) doc["command_line"][0] = "dev-sandbox";
  return doc.dump(2) + "\n";
}

// CSV: the numeric timing columns become "#".
std::string mask_csv(const std::string& out) {
  std::istringstream in(out);
  std::string line, masked;
  std::vector<bool> numeric;
  bool header = true;
  while (std::getline(in, line)) {
    std::vector<std::string> cells(1);  // a quoted cell (a brief with a comma) kept whole
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted)
        cells.emplace_back();
      else
        cells.back().push_back(c);
    }
    if (header) {
      for (const auto& c : cells)
        numeric.push_back(c.find("_us_") != std::string::npos || c.find("bandwidth") != std::string::npos ||
                          c == "setup_s" || c == "retries");
      header = false;
    } else {
      for (size_t i = 0; i < cells.size() && i < numeric.size(); ++i)
        if (numeric[i] && !cells[i].empty()) cells[i] = "#";
    }
    for (size_t i = 0; i < cells.size(); ++i) masked += (i ? "," : "") + cells[i];
    masked += "\n";
  }
  return masked;
}

// What varies with the machine: the aio workspace, its filesystem, O_DIRECT or not.
std::string mask_machine(std::string s, const std::string& workspace) {
  for (size_t at = s.find(workspace); !workspace.empty() && at != std::string::npos; at = s.find(workspace))
    s.replace(at, workspace.size(), "<workspace>");
  // The rows name the disk and filesystem ("file::vda:ext4", "file::overlay"), whose
  // length varies too: the cell and the spaces after it.
  s = std::regex_replace(s, std::regex(R"(file::(?:[a-z0-9_]+:)?[a-z0-9_]+( +)?)"), "file::<disk>:<fs>$1");
  s = std::regex_replace(s, std::regex(R"(file::<disk>:<fs> +)"), "file::<disk>:<fs>  ");
  s = std::regex_replace(s, std::regex(R"(<workspace> \([a-z0-9_]+\))"), "<workspace> (<fs>)");
  s = std::regex_replace(s, std::regex(R"((LIBAIO|IO_URING)\+BUF)"), "$1");
  s = std::regex_replace(s, std::regex(R"(, (O_DIRECT|buffered), iodepth)"), ", <direct>, iodepth");
  // aio's device counters: the disk under the workspace and what else it did meanwhile.
  s = std::regex_replace(s, std::regex(R"(\n  Device[^\n]*)"), "\n  Device <device counters>");
  return s;
}

std::string golden_path(const std::string& name) { return std::string(DS_GOLDEN_DIR) + "/" + name + ".txt"; }

std::string aio_workspace() {
  static const std::string ws = [] {
    for (const std::string base : {std::string(DS_AIO_TEST_BASE), std::string("/var/tmp")}) {
      std::string tmpl = base + "/ds-golden-XXXXXX";
      std::vector<char> buf(tmpl.begin(), tmpl.end());
      buf.push_back('\0');
      if (mkdtemp(buf.data())) return std::string(buf.data());
    }
    return std::string();
  }();
  return ws;
}

// Stands for the aio workspace in the arguments until a test runs (listing the
// tests must not create directories).
const char* const kWorkspaceArg = "<workspace-arg>";

const std::vector<GoldenRun>& runs() {
  static const std::vector<GoldenRun> r = {
      {"sim_copy_cases",
       {"--backend", "sim", "copy", "-t", "host_to_device_ce", "-t", "host_to_device_batch_ce", "-t",
        "all_host_to_all_device_ce_multi_stream", "-t", "one_share_host_to_all_device_ffts_direct_h2d", "-t",
        "one_device_to_all_device_ce", "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
       {},
       "text"},
      // The D2H multi-card block: each card to its own pinned buffer, to its own part of
      // one shared region, to O_DIRECT-style buffers; one Summary for device -> host.
      {"sim_copy_d2h",
       {"--backend", "sim", "copy", "-t", "all_device_to_all_host_ce_multi_stream", "-t",
        "all_device_to_one_share_host_ce_multi_stream", "-t", "all_device_to_all_odirect_host_ce_multi_stream", "-s",
        "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
       {},
       "text"},
      {"sim_copy_duplex",
       {"--backend", "sim", "copy", "-t", "all_host_to_all_device_duplex_ce_multi_stream", "-t",
        "all_odirect_host_to_all_device_duplex_ce_multi_stream", "-t",
        "one_share_host_to_all_device_duplex_ce_multi_stream", "-s", "8K", "-n", "4",
        "-i", "2", "-d", "2", "--duplex-ratio", "0.5", "--validate"},
       {},
       "text"},
      {"sim_copy_duplex_json",
       {"--backend", "sim", "copy", "-t", "all_host_to_all_device_duplex_ce_multi_stream", "-s", "8K", "-n", "4",
        "-i", "2", "-d", "2", "--duplex-ratio", "0.5", "--validate", "--format", "json"},
       {},
       "json"},
      {"sim_copy_duplex_csv",
       {"--backend", "sim", "copy", "-t", "all_host_to_all_device_duplex_ce_multi_stream", "-s", "8K", "-n", "4",
        "-i", "2", "-d", "2", "--duplex-ratio", "0.5", "--format", "csv"},
       {},
       "csv"},
      {"sim_quick_mode_frags",
       {"--backend", "sim", "--model-type", "gqa", "--iodirect", "true", "--sdma", "true", "-s", "4K", "-n", "4",
        "-f", "4", "-i", "2", "-d", "2", "--validate"},
       {},
       "text"},
      {"sim_trans",
       {"--backend", "sim", "trans", "-t", "H2D", "-H", "pinned", "-H", "normal", "-M", "ce", "-M", "ms_2", "-M",
        "memcpy", "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
       {},
       "text"},
      {"sim_sweep",
       {"--backend", "sim", "copy", "-t", "host_to_device_ce", "--sweep", "4K:16K", "-n", "16", "-i", "2"},
       {},
       "text"},
      {"sim_copy_json",
       {"--backend", "sim", "copy", "-t", "host_to_device_ce", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
        "4K", "-n", "8", "-i", "2", "-d", "2", "--validate", "--format", "json"},
       {},
       "json"},
      {"sim_copy_csv",
       {"--backend", "sim", "copy", "-t", "host_to_device_ce", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
        "4K", "-n", "8", "-i", "2", "-d", "2", "--format", "csv"},
       {},
       "csv"},
      {"sim_aio",
       {"--backend", "sim", "aio", "--create-workspace", "--workspace", kWorkspaceArg, "--io-size", "64K", "--io-number", "8",
        "--epoch-number", "2", "--iodepth", "4", "--buffered", "--validate"},
       {},
       "text"},
      {"sim_aio_json",
       {"--backend", "sim", "aio", "--create-workspace", "--workspace", kWorkspaceArg, "--io-size", "64K", "--io-number", "4",
        "--epoch-number", "2", "--engine", "libaio", "--io-type", "alloc", "--buffered", "--format", "json"},
       {},
       "json"},
      {"sim_load",
       {"--backend", "sim", "load", "--create-workspace", "--workspace", kWorkspaceArg, "-s", "64K", "-n", "8", "-d", "2", "-i", "2",
        "--iodepth", "4", "--buffered", "--validate"},
       {},
       "text"},
      {"sim_load_json",
       {"--backend", "sim", "load", "--create-workspace", "--workspace", kWorkspaceArg, "--block-layout", "16K,4K", "-n", "4", "-d", "2",
        "-i", "2", "--sdma", "true", "--buffered", "--validate", "--format", "json"},
       {},
       "json"},
      {"sim_offload",
       {"--backend", "sim", "offload", "--create-workspace", "--workspace", kWorkspaceArg, "-s", "64K", "-n", "8", "-d", "2",
        "-i", "2", "--iodepth", "4", "--buffered", "--validate"},
       {},
       "text"},
      // One latent on every card (DeepSeek-V3, MLA): one file set, each card its share.
      {"sim_offload_json",
       {"--backend", "sim", "offload", "--create-workspace", "--workspace", kWorkspaceArg, "--model", "DeepSeek-V3",
        "--input-len", "512", "-d", "2", "-i", "2", "--buffered", "--validate", "--format", "json"},
       {},
       "json"},
      {"sim_offload_csv",
       {"--backend", "sim", "offload", "--create-workspace", "--workspace", kWorkspaceArg, "-s", "16K", "-n", "4", "-d", "2",
        "-i", "2", "--buffered", "--format", "csv"},
       {},
       "csv"},
      {"sim_load_mix",
       {"--backend", "sim", "load", "--create-workspace", "--workspace", kWorkspaceArg, "-s", "64K", "-n", "8", "-d", "2", "-i", "2",
        "--iodepth", "4", "--offload-ratio", "0.5", "--buffered", "--validate"},
       {},
       "text"},
      {"sim_load_mix_json",
       {"--backend", "sim", "load", "--create-workspace", "--workspace", kWorkspaceArg, "--block-layout", "16K,4K", "-n", "4", "-d", "2",
        "-i", "2", "--offload-ratio", "1.5", "--buffered", "--validate", "--format", "json"},
       {},
       "json"},
      {"sim_load_mix_csv",
       {"--backend", "sim", "load", "--create-workspace", "--workspace", kWorkspaceArg, "-s", "16K", "-n", "4", "-d", "2",
        "-i", "2", "--offload-ratio", "2", "--buffered", "--format", "csv"},
       {},
       "csv"},
      {"ascend_quick_modes",
       {"--backend", "ascend", "--model-type", "mla", "--iodirect", "false", "--sdma", "true", "-s", "4K", "-n",
        "4", "-f", "12", "-i", "2", "-d", "2", "--validate"},
       {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE}, {"DS_ACL_DOUBLE_DEVICES", "8"}},
       "text"},
      {"ascend_batch_refused",
       {"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-t", "all_odirect_host_to_all_device_ce_multi_stream",
        "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
       {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE}, {"DS_ACL_DOUBLE_DEVICES", "8"}, {"DS_ACL_DOUBLE_BATCH_FEATURE", "1"}},
       "text"},
      {"cuda_cases",
       {"--backend", "cuda", "copy", "-t", "host_to_device_sm", "-t", "device_to_host_sm", "-t",
        "all_host_to_all_device_ffts_direct_h2d", "-s", "1000", "-n", "7", "-f", "3", "-i", "2", "-d", "2",
        "--validate"},
       {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "4"}},
       "text"},
      // The longest From, To and Method each backend prints (every case of its
      // catalog run: odirect_mmap::all is the widest From everywhere; CE-MS-FORK fills
      // the user guide's Method column exactly, FFTS-SDMA-FORK overflows it; load's
      // Method joins the engine's and the copy's), each with one that fits, in line.
      {"sim_long_labels",
       {"--backend", "sim", "copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d", "-t",
        "all_host_to_all_device_ce_multi_stream", "-t", "shm_to_all_host_memcpy", "-t", "host_to_device_ce", "-s",
        "4K", "-n", "8", "-i", "2", "-d", "2"},
       {},
       "text"},
      {"sim_load_long_method",
       {"--backend", "sim", "load", "--create-workspace", "--workspace", kWorkspaceArg, "-s", "64K", "-n", "4", "-d", "2", "-i", "2",
        "--sdma", "true", "--buffered"},
       {},
       "text"},
      {"cuda_long_labels",
       {"--backend", "cuda", "copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d", "-t",
        "one_share_host_to_all_device_ce_multi_stream", "-t", "host_to_device_ce", "-s", "4K", "-n", "8", "-i", "2",
        "-d", "2"},
       {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "4"}},
       "text"},
      {"ascend_long_labels",
       {"--backend", "ascend", "copy", "-t", "one_share_host_to_all_device_ffts_direct_h2d", "-t",
        "all_odirect_host_to_all_device_ffts_direct_h2d", "-t", "host_to_device_ce", "-s", "4K", "-n", "8", "-i", "2",
        "-d", "2"},
       {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE}, {"DS_ACL_DOUBLE_DEVICES", "8"}},
       "text"},
  };
  return r;
}

class GoldenOutput : public ::testing::TestWithParam<size_t> {};

// The aio runs remove the workspace they create; this removes its parent.
class RemoveWorkspace : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!aio_workspace().empty()) rmdir(aio_workspace().c_str());
  }
};
const auto* const kRemoveWorkspace = ::testing::AddGlobalTestEnvironment(new RemoveWorkspace);

}  // namespace

TEST_P(GoldenOutput, MatchesWhatUsersRead) {
  const GoldenRun& g = runs()[GetParam()];
  ASSERT_FALSE(aio_workspace().empty());
  std::vector<std::string> args = g.args;
  for (auto& a : args)
    if (a == kWorkspaceArg) a = aio_workspace() + "/ws";
  const RunResult r = run_tool(args, g.env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string got = std::string(g.format) == "json"  ? mask_json(r.out)
                    : std::string(g.format) == "csv" ? mask_csv(r.out)
                                                     : mask_text(r.out);
  got = mask_machine(got, aio_workspace() + "/ws");
  const std::string path = golden_path(g.name);
  if (std::getenv("DS_GOLDEN_UPDATE")) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no golden file " << path << " (DS_GOLDEN_UPDATE=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "output of " << g.name << " changed; if on purpose, rerun with DS_GOLDEN_UPDATE=1";
}

INSTANTIATE_TEST_SUITE_P(Runs, GoldenOutput, ::testing::Range<size_t>(0, runs().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return std::string(runs()[i.param].name); });

namespace {

// Where each header cell starts (after the two-space indent): the header's cells hold
// no spaces, so a cell starts after a space.
std::vector<size_t> cell_starts(const std::string& header) {
  std::vector<size_t> at;
  for (size_t i = 2; i < header.size(); ++i)
    if (header[i] != ' ' && header[i - 1] == ' ') at.push_back(i);
  return at;
}

}  // namespace

// The runs with every backend's longest labels, unmasked: each row's cells start at
// the offsets of its header's, every cell ends in at least one space before the next
// (no two figures touch), and the header names are the user guide's, in its order.
TEST(GoldenAlignment, EveryRowStartsItsCellsWhereItsHeaderDoes) {
  ASSERT_FALSE(aio_workspace().empty());
  const std::vector<std::string> headers = {"From", "To", "Method", "Size(KB)", "Count",
                                            "Submit(us)-(Min/Max/Avg/P50/P90)", "", "BW(GB/s)"};
  size_t rows = 0;
  for (const GoldenRun& g : runs()) {
    const std::string name = g.name;
    if (name.find("long_") == std::string::npos) continue;
    std::vector<std::string> args = g.args;
    for (auto& a : args)
      if (a == kWorkspaceArg) a = aio_workspace() + "/ws";
    const RunResult r = run_tool(args, g.env);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    std::istringstream in(r.out);
    std::string header, row;
    while (std::getline(in, header)) {
      if (header.rfind("  From ", 0) != 0) continue;
      ASSERT_TRUE(static_cast<bool>(std::getline(in, row))) << name;
      ++rows;
      const std::vector<size_t> at = cell_starts(header);
      ASSERT_EQ(at.size(), headers.size()) << name << "\n" << header;
      for (size_t c = 0; c < at.size(); ++c) {
        const size_t end = c + 1 < at.size() ? at[c + 1] : header.size();
        if (!headers[c].empty()) EXPECT_EQ(header.substr(at[c], headers[c].size()), headers[c]) << header;
        ASSERT_LT(at[c], row.size()) << name << "\n" << header << "\n" << row;
        EXPECT_NE(row[at[c]], ' ') << name << ": column " << c << " does not start under its header\n"
                                   << header << "\n" << row;
        EXPECT_EQ(row[at[c] - 1], ' ') << name << ": column " << c << " runs into the one before\n"
                                       << header << "\n" << row;
        if (c + 1 < at.size()) EXPECT_EQ(row[end - 1], ' ') << name << ": column " << c << " touches the next\n" << row;
      }
    }
  }
  EXPECT_EQ(rows, 11u) << "every long-label run's blocks were checked";
}
