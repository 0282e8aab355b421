// `tune`: the machine's crossover table (docs/tune.md): every copy method the
// backend offers over block sizes within a time budget, optionally the aio store's
// engines, the staged load's knobs and the --model's own blocks; parsed here,
// measured in src/tune/.
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <iostream>
#include <memory>

#include "app/command.h"
#include "app/copy_params.h"
#include "app/disk_options.h"
#include "app/model_options.h"
#include "app/output_options.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/size_label.h"
#include "core/units.h"
#include "output/atomic_file.h"
#include "output/html_report.h"
#include "output/svg_plot.h"
#include "tune/tune_report.h"

namespace ds {

namespace {

struct TuneArgs {
  std::string budget = "10m", sizes = "4K:64M", what, devices, streams = "2,4,8";
  std::string direction = "both", cards = "both", iterations = "8", warmup = "1";
  std::vector<std::string> workspaces;
  bool validate = false, validate_each = false;
  std::string plot, report;
  OutputOptions out;
  ModelOptionText model;
};

struct TunePlan {
  double budget_s = 600;
  std::vector<uint64_t> sizes;
  bool copy = true, aio = false, load = false;
  int devices = 0;  // 0: every card the backend sees, at most 8
  TuneCopyRequest req;
  std::vector<std::string> workspaces;
  std::optional<Workload> workload;
};

// "30s", "5m", "1h", "90" (seconds), "1.5m": seconds; UsageError naming --budget.
double parse_budget(const std::string& text) {
  const std::string bad = "option --budget got '" + text + "': expects a duration above 0 such as 30s, 5m or 1h (at most 24h)";
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) throw UsageError(bad);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  const double s = v * scale;
  if (errno != 0 || scale == 0 || !std::isfinite(s) || !(s > 0) || s > 86400) throw UsageError(bad);
  return s;
}

std::vector<uint64_t> parse_sizes(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw UsageError("option --sizes got '" + text + "': expects FROM:TO (e.g. 4K:64M)");
  const uint64_t from = parse_size("--sizes", text.substr(0, colon)), to = parse_size("--sizes", text.substr(colon + 1));
  const auto pow2 = [](uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
  if (!pow2(from) || !pow2(to) || to > (1ULL << 30))
    throw UsageError("option --sizes got '" + text + "': FROM and TO are powers of two up to 1G (e.g. 4K:64M)");
  if (from > to) throw UsageError("option --sizes got '" + text + "': FROM is larger than TO");
  return size_steps(from, to);
}

std::vector<int> parse_stream_list(const std::string& text) {
  std::vector<int> out;
  for (const std::string& one : split_commas(text)) out.push_back(parse_int("--streams", one, 1, 64));
  if (out.empty()) throw UsageError("option --streams got '" + text + "': expects S[,S...] (e.g. 2,4,8)");
  return out;
}

void parse_what(const TuneArgs& a, TunePlan& p) {
  p.copy = a.what.empty();
  p.aio = a.what.empty() && !a.workspaces.empty();
  for (const std::string& w : a.what.empty() ? std::vector<std::string>{} : split_commas(a.what)) {
    if (w == "copy") p.copy = true;
    else if (w == "aio") p.aio = true;
    else if (w == "load") p.load = true;
    else
      throw UsageError("option --what got '" + w + "': accepts copy, aio, load (comma-separated)");
  }
  if (p.aio && a.workspaces.empty()) throw UsageError("option --what aio needs --workspace DIR");
  if (p.load && a.workspaces.empty()) throw UsageError("option --what load needs --workspace DIR");
  if (!p.aio && !p.load && !a.workspaces.empty())
    throw UsageError("option --workspace is for --what aio and load; add aio or load to --what");
}

// --what load's block shapes (tune_load_shapes): the --model's options quoted as
// model_option_words gives them, with its block size as it resolved, and without
// --input-len (each point says its own).
std::vector<TuneLoadShape> load_shapes(const TunePlan& p, const ModelOptionText& m) {
  if (!p.workload) return tune_load_shapes(p.sizes, nullptr, "");
  ModelOptionText words = m;
  words.input_len.clear();
  words.block_size = std::to_string(p.workload->req.block_tokens);
  return tune_load_shapes(p.sizes, &*p.workload, model_option_words(words));
}

TunePlan parse_tune(const TuneArgs& a) {
  TunePlan p;
  p.budget_s = parse_budget(a.budget);
  p.sizes = parse_sizes(a.sizes);
  parse_what(a, p);
  p.workspaces = a.workspaces.empty() ? a.workspaces : parse_workspaces(a.workspaces);
  p.devices = a.devices.empty() ? 0 : parse_int("-d", a.devices, 1, kMaxDevices);
  TuneCopyRequest& r = p.req;
  r.sizes = p.sizes;
  r.iterations = parse_int("-i", a.iterations, 1, 100000);
  r.warmup = parse_int("--warmup", a.warmup, 0, 100000);
  r.validate = a.validate;
  r.validate_each = a.validate_each;
  r.choice.streams = parse_stream_list(a.streams);
  if (a.direction != "h2d" && a.direction != "d2h" && a.direction != "both")
    throw UsageError("option --direction got '" + a.direction + "': accepts h2d, d2h, both");
  if (a.cards != "one" && a.cards != "all" && a.cards != "both")
    throw UsageError("option --cards got '" + a.cards + "': accepts one, all, both");
  r.choice.h2d = a.direction != "d2h";
  r.choice.d2h = a.direction != "h2d";
  r.choice.one_card = a.cards != "all";
  r.choice.all_cards = a.cards != "one";
  if (a.model.dry_run) throw UsageError("option --dry-run: tune has none; `dev-sandbox copy --model ... --dry-run` sizes a model");
  p.workload = parse_workload(a.model);
  if (p.workload && !p.copy && !p.load)
    throw UsageError("option --model measures copies and the load; add copy or load to --what");
  check_format(a.out.format);
  if (a.out.format == "csv") throw UsageError("option --format: tune writes text or json");
  return p;
}

void write_out(const OutputOptions& o, const std::string& text) {
  if (o.output.empty()) {
    std::cout << text << std::flush;
    if (!std::cout) throw OutputClosed();
    return;
  }
  AtomicFile f(o.output, "-o");
  f.stream() << text;
  f.commit();
}

// The progress line on a terminal: what is measured and the time left.
TuneProgress progress_line(double budget_s, int64_t t0) {
  if (::isatty(2) != 1) return {};
  return [budget_s, t0](const std::string& what, double) {
    const double left = std::max(0.0, budget_s - static_cast<double>(now_ns() - t0) * 1e-9);
    char b[48];
    std::snprintf(b, sizeof b, "%.0f s left", left);
    std::cerr << "\r\x1b[Ktune: " << what << " (" << b << ")" << std::flush;
  };
}

int run_tune(const TuneArgs& a, const GlobalOptions& g) {
  TunePlan p = parse_tune(a);
  if (!a.plot.empty()) check_plot_path(a.plot);
  if (!a.report.empty()) check_report_path(a.report);
  SelectedBackend selected = select_and_say(g.backend, kSimCopies);
  const int seen = selected.probe.device_count;
  if (p.devices > seen)
    throw UsageError("option -d " + std::to_string(p.devices) + ": the " + selected.backend->name() +
                     " backend sees " + std::to_string(seen) + " devices");
  p.req.choice.devices = p.devices > 0 ? p.devices : std::min(seen, 8);
  TuneContext ctx;
  ctx.info = run_info(selected, g.command_line);
  ctx.backend_facts = selected.probe.facts;
  ctx.budget_s = p.budget_s;
  if (p.copy) ctx.what.push_back("copy");
  if (p.aio) ctx.what.push_back("aio");
  if (p.load) ctx.what.push_back("load");
  const int64_t t0 = now_ns();
  const TuneProgress progress = progress_line(p.budget_s, t0);
  std::optional<TuneCopyRun> copy;
  std::optional<TuneAioRun> aio;
  std::optional<TuneLoadRun> load;
  // The budget's shares: copy 3, aio 2, load 2 (copy and aio alone: 60% / 40%).
  const double w_copy = p.copy ? 3 : 0, w_aio = p.aio ? 2 : 0, w_load = p.load ? 2 : 0;
  const auto since = [&] { return static_cast<double>(now_ns() - t0) * 1e-9; };
  if (p.copy) {
    p.req.seconds = p.budget_s * w_copy / (w_copy + w_aio + w_load);
    if (p.workload) {
      p.req.model_layout = Layout::block(p.workload->task_fragments, p.workload->tasks_per_card);
      p.req.model_tasks_per_block = p.workload->tasks_per_block;
      p.req.model_options = model_option_words(a.model);
      p.req.model_label = p.workload->model.name + ", TP " + std::to_string(p.workload->req.tp) + ": " +
                          std::to_string(p.workload->tasks_per_card) + " blocks of " + task_label(*p.workload) +
                          " per card";
    }
    copy = run_copy_tune(selected, p.req, progress);
  }
  if (p.aio) {
    TuneAioRequest ar;
    ar.workspaces = p.workspaces;
    ar.validate = p.req.validate;
    ar.seconds = (p.budget_s - since()) * w_aio / (w_aio + w_load);
    aio = run_aio_tune(selected, ar, progress);
  }
  if (p.load) {
    TuneLoadRequest lr;
    lr.workspaces = p.workspaces;
    lr.shapes = load_shapes(p, a.model);
    lr.iterations = p.req.iterations;
    lr.warmup = p.req.warmup;
    lr.validate = p.req.validate;
    lr.seconds = p.budget_s - since();
    load = run_load_tune(selected, lr, progress);
  }
  if (progress) std::cerr << "\r\x1b[K" << std::flush;
  ctx.elapsed_s = static_cast<double>(now_ns() - t0) * 1e-9;
  std::optional<TuneFindings> findings;
  if (copy) findings = tune_findings(*copy);
  for (const std::string& n : copy ? copy->notes : std::vector<std::string>{}) stderr_notes().note(n);
  for (const std::string& n : aio ? aio->notes : std::vector<std::string>{}) stderr_notes().note(n);
  for (const std::string& n : load ? load->notes : std::vector<std::string>{}) stderr_notes().note(n);
  const TuneCopyRun* c = copy ? &*copy : nullptr;
  const TuneFindings* f = findings ? &*findings : nullptr;
  const TuneAioRun* io = aio ? &*aio : nullptr;
  const TuneLoadRun* ld = load ? &*load : nullptr;
  write_out(a.out, a.out.format == "json" ? tune_json(ctx, c, f, io, ld) : tune_text(ctx, c, f, io, ld));
  if (!a.plot.empty() && c) write_plot_file(a.plot, tune_plot_svg(ctx, *c, *f), stderr_notes());
  if (!a.report.empty()) write_report_file(a.report, tune_report(ctx, c, f, io, ld), stderr_notes());
  const TuneFailures failed = tune_failures(c, io, ld);
  if (!failed.note.empty()) stderr_notes().note(failed.note);
  if (!failed.error.empty()) throw RunError(failed.error);
  return 0;
}

}  // namespace

Command add_tune_command(CLI::App& root, GlobalOptions& global) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* c = root.add_subcommand("tune", "measure every copy method over block sizes within a time budget: "
                                            "the crossover table (and the aio store's best settings)");
  c->add_option("--budget", a->budget, "how long it may take: 30s, 5m, 1h (default 10m)")->type_name("DURATION");
  c->add_option("--sizes", a->sizes, "block sizes FROM:TO, powers of two (default 4K:64M)")->type_name("FROM:TO");
  c->add_option("--what", a->what, "copy, aio, load, comma-separated (default copy; with --workspace also aio)")
      ->type_name("copy,aio,load");
  c->add_option("-d", a->devices, "cards of the all-card methods (default every card seen, at most 8)")->type_name("N");
  c->add_option("-S,--streams", a->streams, "stream counts of the multi-stream methods (default 2,4,8)")->type_name("S,...");
  c->add_option("--direction", a->direction, "h2d, d2h or both (default both)")->type_name("h2d|d2h|both");
  c->add_option("--cards", a->cards, "one card, all cards or both (default both)")->type_name("one|all|both");
  c->add_option("-i", a->iterations, "measured iterations per point (default 8)")->type_name("N");
  c->add_option("--warmup", a->warmup, "warm-up iterations per point (default 1)")->type_name("W");
  c->add_option("--workspace", a->workspaces, "--what aio, load: a directory to measure; repeat for several")->type_name("DIR");
  add_validate_option(c, a->validate, a->validate_each, global.command_line,
                      "check every destination byte after each point, as copy --validate and aio --validate do");
  c->add_option("--plot", a->plot, "also write an SVG: BW against block size per method, crossovers marked")
      ->type_name("FILE.svg");
  c->add_option("--report", a->report,
                "also write one self-contained HTML page: the tables, the plot, the machine facts, what they mean")
      ->type_name("FILE.html");
  add_model_options(c, a->model, ModelOptionsFor::kCopy);
  add_output_options(c, a->out);
  return {c, [a, &global] { return run_tune(*a, global); }, [a] { parse_tune(*a); },
          {"dev-sandbox tune --budget 5m",
           "dev-sandbox tune --budget 30s --sizes 4K:4M --format json -o tune.json --plot tune.svg",
           "dev-sandbox tune --budget 2m --model Qwen3-32B --tp 8",
           "dev-sandbox tune --budget 1m --what aio --workspace /data/kv",
           "dev-sandbox tune --budget 1m --what load --workspace /data/kv --model Qwen3-32B --tp 8"}};
}

}  // namespace ds
