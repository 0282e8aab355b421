// `copy` and quick mode (SPEC §2.2, §2.3).
#include <iostream>
#include <memory>

#include "app/command.h"
#include "app/run_cases.h"
#include "cases/catalog.h"
#include "core/error.h"
#include "core/units.h"
#include "output/text_writer.h"

namespace ds {

namespace {

struct CopyArgs {
  std::vector<std::string> cases;
  std::string size = "512M", blocks = "8", iterations = "128", devices = "8", frags = "0",
              streams = "4", warmup = "2";
  bool validate = false;
  std::string model_type, iodirect, sdma;
};

std::string offered_cases(const Backend& b) {
  std::string list;
  for (const auto& c : copy_cases())
    if (unsupported_reason(c, b).empty()) list += "\n  " + c.name;
  return list;
}

int run_copy(const CopyArgs& a, const GlobalOptions& g) {
  CopyParams p;
  p.block_bytes = parse_size("-s", a.size);
  p.blocks = parse_count("-n", a.blocks, 1);
  p.iterations = static_cast<int>(parse_count("-i", a.iterations, 1));
  p.devices = static_cast<int>(parse_count("-d", a.devices, 1));
  p.frags = static_cast<int>(parse_count("-f", a.frags, 0));
  p.streams = static_cast<int>(parse_count("--streams", a.streams, 1));
  p.warmup = static_cast<int>(parse_count("--warmup", a.warmup, 0));
  p.validate = a.validate;

  std::vector<std::string> names = a.cases;
  const bool quick = !a.model_type.empty() || !a.iodirect.empty() || !a.sdma.empty();
  if (quick) {
    if (!names.empty()) throw UsageError("quick-mode selectors cannot be combined with -t");
    if (a.model_type.empty() || a.iodirect.empty() || a.sdma.empty())
      throw UsageError(std::string("quick mode needs all of --model-type, --iodirect and --sdma; missing ") +
                       (a.model_type.empty() ? "--model-type" : a.iodirect.empty() ? "--iodirect" : "--sdma"));
    names.push_back(quick_mode_case(a.model_type, a.iodirect, a.sdma));
  }
  if (names.empty()) throw UsageError("copy needs a case: -t NAME (or the quick-mode selectors)");

  SelectedBackend selected = select_backend(g.backend);
  std::vector<CaseSpec> cases;
  for (const auto& n : names) {
    const CaseSpec* c = find_case(n);
    if (!c || !unsupported_reason(*c, *selected.backend).empty())
      throw UsageError((c ? "case " + n + " cannot run on " + selected.backend->name() + ": " +
                                unsupported_reason(*c, *selected.backend)
                          : "unknown case '" + n + "'") +
                       "; the " + selected.backend->name() + " backend offers:" +
                       offered_cases(*selected.backend));
    cases.push_back(*c);
  }
  check_against_backend(cases, p, selected);
  TextWriter writer(std::cout);
  writer.begin(run_info(selected, g.command_line));
  run_cases(cases, p, selected, writer);
  return 0;
}

}  // namespace

Command add_copy_command(CLI::App& root, GlobalOptions& global) {
  auto args = std::make_shared<CopyArgs>();
  CLI::App* c = root.add_subcommand("copy", "measure one or more named copy cases (SPEC §3)");
  c->add_option("-t", args->cases, "case name; repeat to run several, in order");
  c->add_option("-s", args->size, "one block's size: bytes, or with K/M/G suffix (default 512M)");
  c->add_option("-n", args->blocks, "blocks per device; with -f, IO tasks per device (default 8)");
  c->add_option("-i", args->iterations, "measured iterations (default 128)");
  c->add_option("-d", args->devices, "devices (cards) (default 8)");
  c->add_option("-f,--frags", args->frags,
                "fragments per IO task on the direct path; 0: every block is a task (default 0)");
  c->add_option("--streams", args->streams, "streams per device for multi-stream cases (default 4)");
  c->add_option("--warmup", args->warmup, "iterations run first and not counted (default 2)");
  c->add_flag("--validate", args->validate, "check every destination byte after the run");
  c->add_option("--model-type", args->model_type, "quick mode: gqa|mla");
  c->add_option("--iodirect", args->iodirect, "quick mode: true|false");
  c->add_option("--sdma", args->sdma, "quick mode: true|false");
  return {c, [args, &global] { return run_copy(*args, global); }};
}

}  // namespace ds
