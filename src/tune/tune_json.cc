// tune/v1: what `tune --format json` writes (docs/tune.md, docs/schemas/tune-v1.schema.json).
#include <nlohmann/json.hpp>

#include "core/sysinfo.h"
#include "tune/tune_report.h"

namespace ds {

namespace {

using nlohmann::json;

json stats_json(const Stats& s) {
  return {{"min_ns", s.min}, {"p50_ns", s.p50}, {"p90_ns", s.p90}, {"p99_ns", s.p99},
          {"max_ns", s.max}, {"avg_ns", s.avg}, {"samples", s.samples}};
}

json machine_json(const TuneContext& ctx) {
  json facts = json::object();
  for (const auto& f : ctx.backend_facts) facts[f.first] = f.second;
  return {{"tool_version", ctx.info.tool_version},
          {"host",
           {{"cpus_online", online_cpus()},
            {"numa_nodes", numa_nodes()},
            {"memory_available_bytes", mem_available_bytes()},
            {"kernel", kernel_release()},
            {"container", container_evidence()}}},
          {"backend",
           {{"name", ctx.info.backend},
            {"library", ctx.info.backend_library},
            {"runtime_version", ctx.info.runtime_version},
            {"devices", ctx.info.devices},
            {"facts", facts}}}};
}

json arm_json(const TuneCopyRun& run, size_t a) {
  const TuneArm& arm = run.arms.arms[a];
  return {{"id", run.arms.groups[arm.group].key + "." + arm.method},
          {"group", run.arms.groups[arm.group].key},
          {"method", arm.method},
          {"case", arm.spec.name},
          {"streams", arm.streams},
          {"submit_mode", arm.submit_mode == SubmitMode::kRoundRobin ? "round-robin" : "stream-major"},
          {"dropped", run.dropped[a].empty() ? json(nullptr) : json(run.dropped[a])}};
}

// The copy command that measures the point the same way: a sweep point's blocks by
// -s/-n; a model point's by the model's options (its block layout) and, paged, the
// table the point used with the contiguous pass it timed beside it.
std::string point_command(const TuneCopyRun& run, const TunePoint& p, uint64_t block_bytes, int devices) {
  const TuneArm& arm = run.arms.arms[p.arm];
  if (p.phase != "model") return arm_command(arm, block_bytes, p.blocks, devices, run.iterations, run.warmup, "");
  const std::string table =
      p.paged ? " --block-table " + p.table + " --pool-blocks " + std::to_string(p.pool_blocks) + " --compare-contiguous"
              : "";
  return model_arm_command(arm, run.model_options, table, devices, run.iterations, run.warmup, "");
}

json point_json(const TuneCopyRun& run, const TunePoint& p, uint64_t block_bytes) {
  const TuneArm& arm = run.arms.arms[p.arm];
  const int devices = arm.spec.topology == Topology::kSingle ? 1 : run.devices;
  json j = {{"arm", run.arms.groups[arm.group].key + "." + arm.method},
            {"block_bytes", block_bytes},
            {"blocks", p.blocks},
            {"devices", devices},
            {"phase", p.phase},
            {"seconds", p.seconds},
            {"command", point_command(run, p, block_bytes, devices)}};
  if (p.phase == "model") j["layout"] = p.paged ? "paged" : "contiguous";
  if (p.paged) j["block_table"] = {{"table", p.table}, {"pool_blocks", p.pool_blocks}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  j["bytes_per_iteration"] = p.result.bytes;
  j["gib_s"] = p.gib_s();
  j["gb_s"] = p.result.bandwidth_gb_s();
  j["stage"] = p.result.measured;
  j["stats"] = stats_json(p.result.stage(p.result.measured));
  j["spread_p90_p50"] = p.spread();
  j["noisy"] = p.noisy();
  j["validated"] = p.result.validated ? json(*p.result.validated) : json(nullptr);
  j["notes"] = p.result.notes;
  return j;
}

json group_json(const TuneCopyRun& run, const TuneGroupFindings& f, size_t g) {
  const auto arm_id = [&](int a) {
    return a < 0 ? json(nullptr) : json(run.arms.groups[g].key + "." + run.arms.arms[static_cast<size_t>(a)].method);
  };
  json rows = json::array(), cross = json::array(), use = json::array();
  for (const TuneRow& r : f.rows)
    rows.push_back({{"block_bytes", run.sizes[r.size]}, {"best", arm_id(r.best)}, {"best_gib_s", r.best_gib_s},
                    {"runner_up", arm_id(r.runner_up)}, {"runner_up_gib_s", r.runner_up < 0 ? json(nullptr) : json(r.runner_up_gib_s)},
                    {"noisy", r.noisy}});
  for (const TuneCrossover& c : f.crossovers)
    cross.push_back({{"winner", arm_id(c.winner)}, {"loser", arm_id(c.loser)}, {"from_bytes", run.sizes[c.size]},
                     {"above_bytes", c.previous == c.size ? json(nullptr) : json(run.sizes[c.previous])},
                     {"lead", c.lead}, {"noisy", c.noisy}, {"text", crossover_text(run, c)}});
  for (const TuneChoice& c : f.choices) {
    const TuneArm& arm = run.arms.arms[static_cast<size_t>(c.arm)];
    use.push_back({{"arm", arm_id(c.arm)}, {"case", arm.spec.name}, {"method", arm.method}, {"streams", arm.streams},
                   {"from_bytes", run.sizes[c.from]}, {"to_bytes", run.sizes[c.to]}, {"noisy", c.noisy}});
  }
  const TuneGroup& gr = run.arms.groups[g];
  return {{"key", gr.key}, {"title", gr.title}, {"direction", gr.dir == CopyDir::kH2D ? "H2D" : "D2H"},
          {"cards", gr.all_cards ? run.devices : 1}, {"sizes", rows}, {"crossovers", cross}, {"recommendations", use}};
}

json copy_json(const TuneCopyRun& run, const TuneFindings& f) {
  json arms = json::array(), points = json::array(), groups = json::array(), model = nullptr;
  for (size_t a = 0; a < run.arms.arms.size(); ++a) arms.push_back(arm_json(run, a));
  for (const TunePoint& p : run.points) points.push_back(point_json(run, p, run.sizes[p.size]));
  for (size_t g = 0; g < run.arms.groups.size(); ++g) groups.push_back(group_json(run, f.groups[g], g));
  if (!run.model_label.empty()) {
    json mp = json::array(), best = json::object(), paged = json::object();
    for (const TunePoint& p : run.model_points) mp.push_back(point_json(run, p, p.result.block_bytes));
    for (size_t g = 0; g < run.arms.groups.size(); ++g) {
      const std::string& key = run.arms.groups[g].key;
      const int b = f.model_best_per_group[g];
      const TuneArm* arm = b < 0 ? nullptr : &run.arms.arms[run.model_points[static_cast<size_t>(b)].arm];
      best[key] = arm ? json(key + "." + arm->method) : json(nullptr);
      const int pb = f.model_paged_best_per_group[g];
      if (pb < 0) {
        paged[key] = nullptr;
        continue;
      }
      const TunePoint& pp = run.model_points[static_cast<size_t>(pb)];
      const double of = model_of_contiguous(pp);
      paged[key] = {{"arm", key + "." + run.arms.arms[pp.arm].method}, {"gib_s", pp.gib_s()},
                    {"of_contiguous", of > 0 ? json(of) : json(nullptr)}};
    }
    model = {{"label", run.model_label}, {"block_table", true}, {"points", mp}, {"best", best},
             {"paged_best", paged}};
  }
  json sizes = json::array();
  for (uint64_t s : run.sizes) sizes.push_back(s);
  return {{"sizes", sizes}, {"iterations", run.iterations}, {"warmup", run.warmup}, {"devices", run.devices},
          {"coarse_planned", run.coarse_planned}, {"coarse_skipped", run.coarse_skipped}, {"seconds", run.seconds},
          {"arms", arms}, {"points", points}, {"groups", groups}, {"model", model}, {"notes", run.notes}};
}

json aio_json(const TuneAioRun& aio) {
  json points = json::array(), recs = json::array();
  const auto cfg = [](const TuneAioConfig& c) {
    return json{{"engine", engine_option_name(c.engine)}, {"iodepth", c.iodepth}, {"workers", c.workers},
                {"shards_per_file", c.shards_per_file}};
  };
  for (const TuneAioPoint& p : aio.points) {
    json j = {{"workspace", p.workspace}, {"config", cfg(p.config)}, {"phase", p.phase}, {"seconds", p.seconds}};
    if (!p.error.empty()) {
      j["error"] = p.error;
    } else {
      j["load_gib_s"] = p.load_gib_s();
      j["dump_gib_s"] = p.dump_gib_s();
      j["load_stats"] = stats_json(p.load.stage(p.load.measured));
      j["dump_stats"] = stats_json(p.dump.stage(p.dump.measured));
      j["noisy"] = p.noisy();
    }
    points.push_back(j);
  }
  for (const TuneAioRun::Pick& k : aio.picks()) {
    const auto pick = [&](const RankedPick& r, double (TuneAioPoint::*bw)() const) -> json {
      if (r.best < 0) return nullptr;
      const TuneAioPoint& b = aio.points[static_cast<size_t>(r.best)];
      json j = {{"config", cfg(b.config)}, {"gib_s", (b.*bw)()}, {"noisy", b.noisy()}, {"tie", r.tie},
                {"next", nullptr}, {"noisy_faster", nullptr}};
      if (r.next >= 0)
        j["next"] = {{"config", cfg(aio.points[static_cast<size_t>(r.next)].config)},
                     {"gib_s", (aio.points[static_cast<size_t>(r.next)].*bw)()}};
      if (r.noisy_faster >= 0)
        j["noisy_faster"] = {{"config", cfg(aio.points[static_cast<size_t>(r.noisy_faster)].config)},
                             {"gib_s", (aio.points[static_cast<size_t>(r.noisy_faster)].*bw)()}};
      return j;
    };
    recs.push_back({{"workspace", k.workspace},
                    {"load", pick(k.load, &TuneAioPoint::load_gib_s)},
                    {"dump", pick(k.dump, &TuneAioPoint::dump_gib_s)}});
  }
  json searches = json::array();
  for (const TuneAioSearch& s : aio.searches) {
    json dropped = json::array();
    for (const auto& d : s.dropped) dropped.push_back({{"engine", d.first}, {"reason", d.second}});
    searches.push_back({{"workspace", s.workspace}, {"coarse_planned", s.coarse_planned},
                        {"coarse_measured", s.coarse_measured}, {"coarse_skipped", s.coarse_skipped},
                        {"dropped", dropped}});
  }
  return {{"io_size", aio.io_size}, {"bytes_per_epoch", aio.bytes}, {"epochs", aio.epochs},
          {"seconds", aio.seconds}, {"engines_unavailable", aio.engines_unavailable},
          {"points", points}, {"searches", searches}, {"recommendations", recs}, {"notes", aio.notes}};
}

json load_config_json(const TuneLoadConfig& c) {
  return {{"engine", engine_option_name(c.engine)}, {"copy", c.sdma ? "direct" : "ce"}, {"staging", c.staging},
          {"iodepth", c.iodepth}};
}

json load_point_json(const TuneLoadRun& run, const TuneLoadPoint& p) {
  json j = {{"workspace", p.workspace}, {"shape", run.shapes[p.shape].label},
            {"block_bytes", run.shapes[p.shape].payload()}, {"blocks", p.blocks}, {"config", load_config_json(p.config)},
            {"phase", p.phase}, {"seconds", p.seconds}, {"command", p.command}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  const StagedStages* st = p.stages();
  j["gib_s"] = p.gib_s();
  j["stats"] = stats_json(p.result.stage(p.result.measured));
  j["spread_p90_p50"] = p.spread();
  j["noisy"] = p.noisy();
  j["validated"] = p.result.validated ? json(*p.result.validated) : json(nullptr);
  j["disk_alone_gib_s"] = st ? json(st->disk_gib_s) : json(nullptr);
  j["copy_alone_gib_s"] = st ? json(st->copy_gib_s) : json(nullptr);
  j["percent_of_slower"] = st ? json(st->percent_of_slower) : json(nullptr);
  j["bottleneck"] = st ? json(st->bottleneck) : json(nullptr);
  j["notes"] = p.result.notes;
  return j;
}

json load_json(const TuneLoadRun& run) {
  json points = json::array(), searches = json::array(), recs = json::array(), shapes = json::array();
  for (const TuneLoadShape& s : run.shapes)
    shapes.push_back({{"label", s.label}, {"block_bytes", s.payload()}, {"fragments", s.fragments},
                      {"tasks_per_file", s.tasks_per_file}, {"blocks", tune_load_blocks(s)}});
  for (const TuneLoadPoint& p : run.points) points.push_back(load_point_json(run, p));
  for (const TuneLoadSearch& s : run.searches) {
    json dropped = json::array();
    for (const auto& d : s.dropped) dropped.push_back({{"arm", d.first}, {"reason", d.second}});
    searches.push_back({{"workspace", s.workspace}, {"shape", run.shapes[s.shape].label},
                        {"coarse_planned", s.coarse_planned}, {"coarse_measured", s.coarse_measured},
                        {"coarse_skipped", s.coarse_skipped}, {"dropped", dropped},
                        {"unfit", s.unfit.empty() ? json(nullptr) : json(s.unfit)}});
  }
  for (const TuneLoadRun::Pick& k : run.picks()) {
    json best = nullptr;
    if (k.r.best >= 0) {
      const TuneLoadPoint& b = run.points[static_cast<size_t>(k.r.best)];
      best = {{"config", load_config_json(b.config)}, {"gib_s", b.gib_s()}, {"noisy", b.noisy()},
              {"tie", k.r.tie}, {"bottleneck", b.bottleneck()}, {"bound", load_bound_words(b.bottleneck())},
              {"command", b.command}, {"next", nullptr}, {"noisy_faster", nullptr}};
      if (k.r.next >= 0) {
        const TuneLoadPoint& n = run.points[static_cast<size_t>(k.r.next)];
        best["next"] = {{"config", load_config_json(n.config)}, {"gib_s", n.gib_s()}};
      }
      if (k.r.noisy_faster >= 0) {
        const TuneLoadPoint& n = run.points[static_cast<size_t>(k.r.noisy_faster)];
        best["noisy_faster"] = {{"config", load_config_json(n.config)}, {"gib_s", n.gib_s()}};
      }
    }
    recs.push_back({{"workspace", k.workspace}, {"shape", run.shapes[k.shape].label}, {"best", best}});
  }
  return {{"iterations", run.iterations}, {"warmup", run.warmup}, {"devices", 1}, {"seconds", run.seconds},
          {"unavailable", run.unavailable}, {"shapes", shapes}, {"points", points}, {"searches", searches},
          {"recommendations", recs}, {"notes", run.notes}};
}

}  // namespace

namespace {

void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  if (j.is_array()) {
    for (size_t k = 0; k < j.size(); ++k) flatten(j[k], prefix + "[" + std::to_string(k) + "]", out);
    if (j.empty()) out.push_back({prefix, "(none)"});
    return;
  }
  out.push_back({prefix, j.is_string() ? j.get<std::string>() : j.is_null() ? std::string("-") : j.dump()});
}

}  // namespace

std::vector<std::pair<std::string, std::string>> tune_machine_facts(const TuneContext& ctx) {
  std::vector<std::pair<std::string, std::string>> out;
  flatten(machine_json(ctx), "", out);
  return out;
}

std::string tune_json(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                      const TuneAioRun* aio, const TuneLoadRun* load) {
  json j = {{"schema", "tune/v1"},
            {"command_line", ctx.info.command_line},
            {"machine", machine_json(ctx)},
            {"budget_s", ctx.budget_s},
            {"elapsed_s", ctx.elapsed_s},
            {"what", ctx.what},
            {"noisy_spread", kNoisySpread},
            {"tie_margin", kTieMargin},
            {"dominated_below", kDominated},
            {"copy", copy && findings ? copy_json(*copy, *findings) : json(nullptr)},
            {"aio", aio ? aio_json(*aio) : json(nullptr)},
            {"load", load ? load_json(*load) : json(nullptr)}};
  return j.dump(2) + "\n";
}

}  // namespace ds
