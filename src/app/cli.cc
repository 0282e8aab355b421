#include <algorithm>
#include <iostream>
#include <sstream>

#include "aio/aio_result.h"
#include "app/command.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/suggest.h"
#include "cases/duplex_result.h"
#include "cases/gather_result.h"
#include "cases/table_result.h"
#include "job/job.h"
#include "staging/staged_stages.h"

namespace ds {

namespace {

const char* const kQuickHelp = R"(
Quick mode (the user guide's form; maps to one copy case, then takes copy's options):
  dev-sandbox --model-type gqa|mla --iodirect true|false --sdma true|false [copy options]
  gqa false false -> all_host_to_all_device_ce_multi_stream
  gqa true  false -> all_odirect_host_to_all_device_ce_multi_stream
  gqa false true  -> all_host_to_all_device_ffts_direct_h2d
  gqa true  true  -> all_odirect_host_to_all_device_ffts_direct_h2d
  mla any   false -> one_share_host_to_all_device_ce_multi_stream
  mla any   true  -> one_share_host_to_all_device_ffts_direct_h2d
Model-driven (one request's KV per card; GQA -> all_..., MLA/DSA -> one_share_...; -d = --tp):
  dev-sandbox --model NAME|PATH [--tp N] [--input-len TOKENS] --iodirect X --sdma Y [--dry-run]
  dev-sandbox --model list
Exit codes: 0 success, 1 the run failed, 2 the command line was wrong.)";

// "\nExamples:\n  dev-sandbox ...\n" for the end of a help.
std::string examples_text(const std::vector<std::string>& examples) {
  std::string out = "\nExamples:";
  for (const std::string& e : examples) out += "\n  " + e;
  return out;
}

bool is_selector(const std::string& a) {
  for (const char* s : {"--model-type", "--model", "--iodirect", "--sdma"}) {
    const std::string opt = s;
    if (a == opt || a.rfind(opt + "=", 0) == 0) return true;
  }
  return false;
}

// The flags: the options that take no value (every other option takes one).
const char* const kFlags[] = {"--validate", "--keep", "--buffered", "--layerwise", "--dry-run", "--shared",
                              "--list", "--version", "-h", "--help"};

// The index of the first word that is neither an option nor the value of one
// (args.size() when there is none).
size_t first_word(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') return i;
    const bool takes_value = a.find('=') == std::string::npos &&
                             std::none_of(std::begin(kFlags), std::end(kFlags), [&](const char* f) { return a == f; });
    if (takes_value) ++i;
  }
  return args.size();
}

// The long words people type for the options named otherwise (the short options that
// have no long name; aio's own names), with the sub-command the meaning holds for (""
// every one that has the option).
struct OptionWord {
  const char* word;
  const char* option;
  const char* only_in;
};
const OptionWord kOptionWords[] = {
    {"--size", "-s", ""},           {"--block-size", "-s", ""},     {"--blocksize", "-s", ""},
    {"--iterations", "-i", ""},     {"--iteration", "-i", ""},      {"--iters", "-i", ""},
    {"--devices", "-d", ""},        {"--device", "-d", ""},         {"--cards", "-d", ""},
    {"--gpus", "-d", ""},           {"--npus", "-d", ""},           {"--blocks", "-n", ""},
    {"--count", "-n", ""},          {"--num-blocks", "-n", ""},     {"--case", "-t", "copy"},
    {"--cases", "-t", "copy"},      {"--direction", "-t", "trans"}, {"--size", "--io-size", "aio"},
    {"--block-size", "--io-size", "aio"}, {"--iterations", "--epoch-number", "aio"},
    {"--epochs", "--epoch-number", "aio"}, {"--count", "--io-number", "aio"},
};

// The option of `app` whose long word `name` is, or is a typo of (within closest()'s
// reach), when no option in `known` is closer; "" otherwise.
std::string option_for_word(const std::string& name, const CLI::App& app, const std::vector<std::string>& known) {
  const std::string real = closest(name, known);
  size_t best = real.empty() ? std::string::npos : edit_distance(name, real);
  std::string out;
  for (const OptionWord& w : kOptionWords) {
    const std::string only = w.only_in;
    if (!only.empty() && only != app.get_name()) continue;
    if (std::find(known.begin(), known.end(), w.option) == known.end()) continue;
    if (name != w.word && closest(name, {w.word}).empty()) continue;
    const size_t d = edit_distance(name, w.word);
    if (d <= best) {
      best = d;
      out = w.option;
    }
  }
  return out;
}

// The program's command line: the root app with every sub-command, and the words
// to parse (quick mode gets its sub-command word here).
class Cli {
 public:
  Cli(std::vector<std::string> words, std::vector<std::string> command_line) : args(std::move(words)) {
    global.command_line = std::move(command_line);
    root.name("dev-sandbox");
    root.add_option("--backend", global.backend, "auto|sim|cuda|ascend (or DEV_SANDBOX_BACKEND)")
        ->type_name("B");
    root.require_subcommand(0, 1);
    root.set_version_flag("--version", std::string("dev-sandbox ") + DS_VERSION);
    commands = {add_copy_command(root, global), add_doctor_command(root, global),
                add_trans_command(root, global), add_aio_command(root, global),
                add_load_command(root, global), add_offload_command(root, global),
                add_tune_command(root, global), add_run_command(root, global)};
    root.footer(std::string(kQuickHelp) + "\n" + examples_text(top_level_examples()));
    for (auto& c : commands) {
      c.app->fallthrough();
      // --backend belongs to the whole program but is accepted after the sub-command too.
      const std::string backend_line =
          "\nAlso: --backend auto|sim|cuda|ascend (or DEV_SANDBOX_BACKEND), before or after the sub-command.";
      c.app->footer((c.app->get_name() == "copy" ? backend_line + "\n" + kQuickHelp : backend_line) + "\n" +
                    examples_text(c.examples));
    }

    help_word();
    // Quick mode is copy with the three selectors: insert the sub-command word
    // unless one was given (the first word that is neither an option nor the
    // value of one).
    const size_t w = first_word(args);
    if (!(w < args.size() && is_sub_command(args[w])) && std::any_of(args.begin(), args.end(), is_selector))
      args.insert(args.begin(), "copy");
  }

  bool is_sub_command(const std::string& word) const {
    return std::any_of(commands.begin(), commands.end(), [&](const Command& c) { return c.app->get_name() == word; });
  }

  // `help` is --help: `help` alone the program's, `help SUB` that sub-command's; `help
  // WORD` for no sub-command leaves WORD, refused as one with the closest named.
  void help_word() {
    const size_t w = first_word(args);
    if (w >= args.size() || args[w] != "help") return;
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(w));
    if (w < args.size() && is_sub_command(args[w]))
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(w) + 1, "--help");
    else if (w >= args.size() || args[w][0] == '-')
      args.push_back("--help");
  }

  // Nothing to parse: run_cli prints the usage (of copy, for `copy` alone).
  bool bare() const { return args.empty() || (args.size() == 1 && args[0] == "copy"); }
  std::string usage() { return args.empty() ? root.help() : root.get_subcommand("copy")->help(); }

  // The parsed sub-command, nullptr when none was named; throws CLI::ParseError.
  Command* parse() {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
    root.parse(reversed);
    for (auto& c : commands)
      if (c.app->parsed()) return &c;
    return nullptr;
  }

  // A parse error in our own words: an unknown option or sub-command with the
  // closest one, an option given more than once. Others as CLI11 says them.
  std::string reworded(const CLI::ParseError& e) {
    const CLI::App* app = &root;
    for (auto& c : commands)
      if (c.app->parsed()) app = c.app;
    const std::string what = e.what();
    const std::string many = ": At Most 1 required but received ";
    const size_t at = what.find(many);
    if (at != std::string::npos)
      return "option " + what.substr(0, at) + " was given " + what.substr(at + many.size()) +
             " times; it takes one value, give it once";
    const size_t colon = what.find(": ");
    const bool extra = what.rfind("The following argument", 0) == 0 && colon != std::string::npos;
    if (!extra) return what;
    std::vector<std::string> words;  // as typed (CLI11 lists them last first)
    std::istringstream in(what.substr(colon + 2));
    for (std::string w; in >> w;) words.insert(words.begin(), w);
    if (app == &root && !words.empty() && words.front()[0] != '-') {
      std::vector<std::string> subs;
      for (auto& c : commands) subs.push_back(c.app->get_name());
      return "unknown sub-command '" + words.front() + "'" + did_you_mean(words.front(), subs) +
             "; the sub-commands are copy, trans, aio, load, offload, tune, run and doctor";
    }
    for (const std::string& w : words) {
      if (w.size() < 2 || w[0] != '-') continue;
      const std::string name = w.substr(0, w.find('='));
      std::vector<std::string> known = {"--backend", "--help"};
      for (const CLI::Option* o : app->get_options()) {
        for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
        for (const std::string& sn : o->get_snames()) known.push_back("-" + sn);
      }
      const std::string meant = option_for_word(name, *app, known);
      const std::string hint = meant.empty() ? did_you_mean(name, known) : " (did you mean " + meant + "?)";
      return "unknown option " + name + (app == &root ? "" : " for " + app->get_name()) + hint +
             "; `dev-sandbox " + (app == &root ? std::string() : app->get_name() + " ") + "--help` lists them";
    }
    std::string typed;
    for (const std::string& w : words) typed += (typed.empty() ? "" : " ") + w;
    return "unexpected " + std::string(words.size() == 1 ? "argument '" : "arguments '") + typed + "' for " +
           app->get_name() + ": every option takes at most one value";
  }

  GlobalOptions global;
  CLI::App root{"dev-sandbox: how fast KV-cache data moves host -> device and disk <-> host"};
  std::vector<Command> commands;
  std::vector<std::string> args;
};

}  // namespace

std::string one_line(const std::string& message) {
  std::string out;
  for (char ch : message) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

void print_error(const std::string& message) {
  std::cerr << "dev-sandbox: error: " << one_line(message) << std::endl;
}

std::vector<std::string> top_level_examples() {
  return {"dev-sandbox doctor",
          "dev-sandbox copy --list",
          "dev-sandbox copy -t all_host_to_all_device_ce_multi_stream -s 64M -n 8 -d 8 -i 32",
          "dev-sandbox load --workspace /data/kv --model Qwen3-32B --tp 8 --input-len 32K"};
}

std::string help_text(const std::string& sub) {
  Cli cli({}, {"dev-sandbox"});
  if (sub.empty()) return cli.root.help();
  for (auto& c : cli.commands)
    if (c.app->get_name() == sub) return c.app->help("dev-sandbox");
  return "";
}

std::string parse_cli(const std::vector<std::string>& args) {
  std::vector<std::string> command_line = {"dev-sandbox"};
  command_line.insert(command_line.end(), args.begin(), args.end());
  Cli cli(args, command_line);
  if (cli.bare()) return "";
  Command* c = cli.parse();
  if (!c) return "";
  if (c->check) c->check();
  return c->app->get_name();
}

std::string check_cli(const std::vector<std::string>& args) {
  std::vector<std::string> command_line = {"dev-sandbox"};
  command_line.insert(command_line.end(), args.begin(), args.end());
  Cli cli(args, command_line);
  try {
    Command* c = cli.parse();
    if (c && c->check) c->check();
  } catch (const CLI::CallForHelp&) {
    return "asks for --help";
  } catch (const CLI::ParseError& e) {
    return cli.reworded(e);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

namespace {

// Why a job may not give option `o` (""; it may): what takes the point's JSON
// document away from the child's stdout, or prints something else there.
std::string refused_in_job(const CLI::Option& o) {
  std::vector<std::string> names = o.get_lnames();
  for (const std::string& sn : o.get_snames()) names.push_back(sn);
  const auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  if (has("format") || has("output"))
    return "run gives every point --format json and keeps its document in the results file";
  const std::string instead = " instead of the point's JSON document, which run keeps";
  if (has("dry-run")) return "--dry-run prints the sizing" + instead;
  if (has("help") || has("h")) return "--help prints the usage" + instead;
  if (has("list")) return "--list prints the cases" + instead;
  if (has("version")) return "--version prints the version" + instead;
  return "";
}

JobOption job_option_for(const CLI::Option& o, const std::string& flag) {
  JobOption out;
  out.flag = flag;
  out.takes_value = o.get_expected_max() > 0;  // a flag takes none
  out.value_optional = out.takes_value && o.get_expected_min() == 0;
  return out;
}

// The sub-commands a job runs and their options, from the same CLI11 apps the
// command line parses with.
class CliJobCommands : public JobCommands {
 public:
  CliJobCommands() : cli_({}, {"dev-sandbox"}) {}

  std::string check_command(const std::string& command) const override {
    static const std::vector<std::string> runnable = {"copy", "trans", "aio", "load", "offload"};
    if (std::find(runnable.begin(), runnable.end(), command) != runnable.end()) return "";
    if (command == "run" || command == "doctor")
      return "'" + command + "' is no sub-command a job runs: copy, trans, aio, load or offload";
    return "unknown sub-command '" + command + "'" + did_you_mean(command, runnable) +
           "; a job runs copy, trans, aio, load or offload";
  }

  // `key` names option `o` (as `flag`): refused where it would take the point's
  // document away from stdout, by whichever of its names the key spells.
  static JobOption resolved(const CLI::Option& o, const std::string& key, const std::string& flag) {
    const std::string why = refused_in_job(o);
    if (why.empty()) return job_option_for(o, flag);
    JobOption out;
    const std::string named = o.get_lnames().empty() ? flag : "--" + o.get_lnames().front();
    out.error = (named == "--" + key ? "" : "'" + key + "' is " + named + ": ") + why + ": leave " + key + " out";
    return out;
  }

  JobOption option(const std::string& command, const std::string& key) const override {
    JobOption out;
    if (key == "backend") {
      out.flag = "--backend";
      return out;
    }
    const CLI::App* app = nullptr;
    for (const Command& c : cli_.commands)
      if (c.app->get_name() == command) app = c.app;
    std::vector<std::string> known = {"backend"}, dashed = {"--backend"};
    for (const CLI::Option* o : app->get_options()) {
      std::vector<std::string> names = o->get_lnames();
      for (const std::string& sn : o->get_snames()) names.push_back(sn);
      for (const std::string& n : names) {
        const std::string flag = (n.size() == 1 ? "-" : "--") + n;
        if (n == key) return resolved(*o, key, flag);
        if (n == "help" || n == "h") continue;
        known.push_back(n);
        dashed.push_back(flag);
      }
    }
    for (const OptionWord& w : kOptionWords) {
      // A word people type for an option named otherwise (size for -s): that option.
      const std::string only = w.only_in;
      if (w.word != "--" + key || (!only.empty() && only != command)) continue;
      if (const CLI::Option* o = app->get_option_no_throw(w.option)) return resolved(*o, key, w.option);
    }
    const std::string meant = option_for_word("--" + key, *app, dashed);
    const std::string hint = meant.empty() ? did_you_mean(key, known)
                                           : " (did you mean " + meant.substr(meant.find_first_not_of('-')) + "?)";
    out.error = "unknown option for " + command + hint + "; `dev-sandbox " + command + " --help` lists them";
    return out;
  }

 private:
  Cli cli_;
};

}  // namespace

std::unique_ptr<JobCommands> cli_job_commands() { return std::make_unique<CliJobCommands>(); }

int run_cli(int argc, char** argv) {
  // How each measurement's result parts are read back when they travel between
  // ranks (output/result_extra.h): registered before anything is measured.
  register_aio_result();
  register_staged_results();
  register_duplex_result();
  register_gather_result();
  register_table_result();
  Cli cli(std::vector<std::string>(argv + 1, argv + argc), std::vector<std::string>(argv, argv + argc));
  if (cli.bare()) {
    std::cerr << cli.usage();
    return 2;
  }
  Command* command = nullptr;
  try {
    command = cli.parse();
  } catch (const CLI::CallForHelp& e) {
    return cli.root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.root.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.root.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(cli.reworded(e));
    return 2;
  }
  try {
    if (command) return command->run();
    std::cerr << cli.root.help();
    return 2;
  } catch (const UsageError& e) {
    print_error(e.what());
    return 2;
  } catch (const Interrupted&) {
    print_error("interrupted; everything it made was removed");
    return 130;
  } catch (const OutputClosed&) {
    return 141;  // the reader went away (`| head`): quietly, as SIGPIPE would, after the cleanup
  } catch (const std::exception& e) {
    print_error(e.what());
    return 1;
  }
}

}  // namespace ds
