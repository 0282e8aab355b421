// Every --help: what the binary prints is the program's help, every option it
// lists is one its sub-command's parser accepts, and every example at its end is a
// command that parses (in process, through parse_cli: no backend, no file, no run).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <map>
#include <sstream>

#include "app/command.h"
#include "cli_harness.h"
#include "core/error.h"

using namespace dstest;

namespace {

const std::vector<std::string> kSubs = {"", "copy", "trans", "aio", "load", "offload", "doctor"};

// One option line of a help: "  -f,--frags F    text" -> {"-f", "--frags"}, "F".
struct HelpOption {
  std::vector<std::string> names;
  std::string type;
};

std::vector<HelpOption> options_in(const std::string& help) {
  std::vector<HelpOption> out;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  -", 0) != 0) continue;
    // The names and the type end at the padding before the option's help.
    std::istringstream words(line.substr(0, line.find("  ", 2)));
    std::string names, type;
    words >> names >> type;
    HelpOption o;
    for (size_t at = 0; at <= names.size();) {
      const size_t comma = std::min(names.find(',', at), names.size());
      o.names.push_back(names.substr(at, comma - at));
      at = comma + 1;
    }
    o.type = type == "REQUIRED" ? "" : type;
    out.push_back(o);
  }
  return out;
}

// The examples at the end of a help: "  dev-sandbox ..." after "Examples:".
std::vector<std::vector<std::string>> examples_in(const std::string& help) {
  std::vector<std::vector<std::string>> out;
  const size_t at = help.find("\nExamples:\n");
  if (at == std::string::npos) return out;
  std::istringstream in(help.substr(at + 11));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  dev-sandbox ", 0) != 0) break;
    std::istringstream words(line);
    std::vector<std::string> args;
    std::string w;
    words >> w;  // dev-sandbox
    while (words >> w) args.push_back(w);
    out.push_back(args);
  }
  return out;
}

// A value the option accepts, from its type (the first of alternatives); "" for a flag.
std::string sample_value(const std::string& sub, const std::string& name, const std::string& type) {
  static const std::map<std::string, std::string> by_name = {
      {"copy -t", "host_to_device_batch_ce"}, {"trans -t", "H2D"}, {"trans -H", "pinned"},
      {"trans -D", "normal"}, {"trans -M", "ce"}, {"aio --phases", "dump,load"},
      {"copy --shm-numa-nodes", "0"}, {"copy --model-type", "gqa"}, {"copy --iodirect", "false"},
      {"copy --sdma", "false"}, {"load --sdma", "false"}, {"offload --sdma", "false"}, {"aio --engine", "libaio,psync"},
      {"aio --files", "shared"}};
  static const std::map<std::string, std::string> by_type = {
      {"N", "2"}, {"SIZE", "4K"}, {"BYTES", "64K"}, {"F", "2"}, {"S", "2"}, {"W", "1"}, {"D", "4"}, {"Q", "4"},
      {"K", "1"}, {"E", "2"}, {"R", "1"}, {"ID", "0"}, {"SECONDS", "10"}, {"DEV:NODE,...", "0:0"},
      {"SIZE[,SIZE...]", "16K,4K"}, {"FROM:TO", "4K:8K"}, {"FILE", "/tmp/ds-help-out"},
      {"FILE.svg", "/tmp/ds-help.svg"}, {"DIR", "/tmp/ds-help-ws2"}, {"NAME|PATH", "Qwen3-32B"},
      {"TOKENS", "256"}, {"DTYPE", "bf16"}, {"LAYOUT", "vllm-flash"}, {"FORMAT", "json"}, {"B", "sim"}, {"P", "256"}, {"[each]", ""}};
  const auto n = by_name.find(sub + " " + name);
  if (n != by_name.end()) return n->second;
  if (type.empty()) return "";
  const auto t = by_type.find(type);
  if (t != by_type.end()) return t->second;
  if (type.find('|') != std::string::npos) return type.substr(0, type.find('|'));
  ADD_FAILURE() << sub << " " << name << ": no sample value for type " << type << " (add one here)";
  return "";
}

// What the option needs beside it to be accepted on its own: the sub-command and
// its required options, and the option's companions.
std::vector<std::string> command_for(const std::string& sub, const std::string& name) {
  std::vector<std::string> args;
  if (sub.empty()) return {"doctor"};
  args.push_back(sub);
  const bool quick = sub == "copy" && (name == "--model-type" || name == "--iodirect" || name == "--sdma");
  if (sub == "copy" && !quick) args.insert(args.end(), {"-t", "host_to_device_ce"});
  if (quick) {
    for (const char* q : {"--model-type", "--iodirect", "--sdma"})
      if (name != q) args.insert(args.end(), {q, std::string(q) == "--model-type" ? "gqa" : "false"});
  }
  if (sub == "aio" || sub == "load" || sub == "offload") args.insert(args.end(), {"--workspace", "/tmp/ds-help-ws"});
  if (name == "--tp" || name == "--input-len" || name == "--block-size" || name == "--kv-dtype" ||
      name == "--kv-layout" ||
      name == "--dry-run" || name == "--layerwise")
    args.insert(args.end(), {"--model", "Qwen3-32B"});
  if (name == "--pool-blocks" || name == "--compare-contiguous") args.insert(args.end(), {"--block-table", "random"});
  if (name == "--host-pool-blocks") args.insert(args.end(), {"--host-block-table", "random"});
  if (name == "--plot" || name == "--plot-metric") args.insert(args.end(), {"--sweep", "4K:8K"});
  if (name == "--plot-metric") args.insert(args.end(), {"--plot", "/tmp/ds-help.svg"});
  if (name == "--shm-numa-nodes") args[2] = "one_share_host_to_all_device_ce_multi_stream";
  return args;
}

}  // namespace

TEST(CliHelp, TheBinaryPrintsTheProgramsHelp) {
  for (const std::string& sub : kSubs) {
    SCOPED_TRACE(sub);
    std::vector<std::string> args;
    if (!sub.empty()) args.push_back(sub);
    args.push_back("--help");
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, ds::help_text(sub));
  }
}

// `help` is --help: `dev-sandbox help` the program's, `help SUB` (after --backend too)
// that sub-command's, on stdout with exit 0; `help WORD` for no sub-command is refused
// as the unknown sub-command it names.
TEST(CliHelp, HelpWordIsTheHelpOption) {
  for (const std::string& sub : kSubs) {
    SCOPED_TRACE(sub);
    std::vector<std::string> args = {"help"};
    if (!sub.empty()) args.push_back(sub);
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out, ds::help_text(sub));
  }
  const RunResult after = run_tool({"--backend", "sim", "help", "aio"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, ds::help_text("aio"));
  const RunResult typo = run_tool({"help", "lod"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.out, "");
  EXPECT_EQ(typo.err,
            "dev-sandbox: error: unknown sub-command 'lod' (did you mean load?); the sub-commands are copy, trans, aio, "
            "load, offload, tune, run and doctor\n");
}

// Each option a help lists, under each of its names, with a value of its type
// (and what it needs beside it): parse_cli accepts it.
TEST(CliHelp, EveryListedOptionIsAccepted) {
  for (const std::string& sub : kSubs) {
    const std::vector<HelpOption> options = options_in(ds::help_text(sub));
    ASSERT_GT(options.size(), 0u) << sub;
    for (const HelpOption& o : options)
      for (const std::string& name : o.names) {
        std::vector<std::string> args = command_for(sub, name);
        if (sub.empty()) args.insert(args.begin(), name);
        else args.push_back(name);
        const std::string value = sample_value(sub, name, o.type);
        if (!value.empty()) args.insert(sub.empty() ? args.begin() + 1 : args.end(), value);
        std::string typed;
        for (const std::string& a : args) typed += " " + a;
        try {
          ds::parse_cli(args);
        } catch (const CLI::CallForHelp&) {
          EXPECT_TRUE(name == "-h" || name == "--help") << typed;
        } catch (const CLI::CallForVersion&) {
          EXPECT_EQ(name, "--version") << typed;
        } catch (const CLI::ParseError& e) {
          ADD_FAILURE() << "dev-sandbox" << typed << ": " << e.what();
        } catch (const ds::UsageError& e) {
          ADD_FAILURE() << "dev-sandbox" << typed << ": " << e.what();
        }
      }
  }
}

// What the issue found: load listed --layerwise, which it then refused. Only aio has it.
TEST(CliHelp, OnlyAioListsLayerwise) {
  for (const std::string& sub : kSubs)
    EXPECT_EQ(ds::help_text(sub).find("--layerwise ") != std::string::npos, sub == "aio") << sub;
  const RunResult r = run_tool({"load", "--workspace", "/tmp/x", "--model", "Qwen3-32B", "--layerwise"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "dev-sandbox: error: unknown option --layerwise for load; `dev-sandbox load --help` lists them\n");
}

// 2 to 4 examples at the end of every help, each a command parse_cli accepts, for
// the sub-command the help is about.
TEST(CliHelp, EveryHelpEndsWithExamplesThatParse) {
  for (const std::string& sub : kSubs) {
    SCOPED_TRACE(sub);
    const std::string help = ds::help_text(sub);
    const auto examples = examples_in(help);
    EXPECT_GE(examples.size(), 2u) << help;
    EXPECT_LE(examples.size(), 4u) << help;
    // The examples are the help's last lines.
    const size_t at = help.find("\nExamples:\n");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(help.find_first_not_of(" \n", help.find('\n', help.rfind("  dev-sandbox "))), std::string::npos);
    for (const auto& args : examples) {
      std::string typed;
      for (const std::string& a : args) typed += " " + a;
      try {
        const std::string parsed = ds::parse_cli(args);
        if (!sub.empty()) EXPECT_EQ(parsed, sub) << typed;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "dev-sandbox" << typed << ": " << e.what();
      }
    }
  }
}
