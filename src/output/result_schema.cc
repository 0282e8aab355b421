#include "output/result_schema.h"

#include <algorithm>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/verdict.h"

namespace ds {

namespace {

using Show = ShowContext;

template <class T>
struct Member;
template <class T>
struct Member<T CaseResult::*> {
  using type = T;
};
template <auto M>
using member_t = typename Member<decltype(M)>::type;

// A field as it is, and back.
template <auto M>
Json as_is(const CaseResult& r, const Show&) {
  return Json(r.*M);
}
template <auto M>
void read_as_is(const Json& j, CaseResult& r) {
  r.*M = j.get<member_t<M>>();
}
template <auto M>
Column field(const char* key, unsigned outputs) {
  Column c;
  c.key = key;
  c.outputs = outputs;
  c.value = &as_is<M>;
  c.read_back = &read_as_is<M>;
  return c;
}

// A text that may be unset: null when empty (and back).
template <std::string CaseResult::*M>
Json text_or_null(const CaseResult& r, const Show&) {
  return (r.*M).empty() ? Json(nullptr) : Json(r.*M);
}
template <std::string CaseResult::*M>
void read_text_or_null(const Json& j, CaseResult& r) {
  r.*M = j.is_null() ? std::string() : j.get<std::string>();
}
template <std::string CaseResult::*M>
Column optional_text(const char* key, unsigned outputs) {
  Column c;
  c.key = key;
  c.outputs = outputs;
  c.value = &text_or_null<M>;
  c.read_back = &read_text_or_null<M>;
  return c;
}

// Computed from the other columns; never carried.
Column derived(const char* key, unsigned outputs, Json (*value)(const CaseResult&, const Show&)) {
  Column c;
  c.key = key;
  c.outputs = outputs;
  c.value = value;
  return c;
}
Column stats(const char* key, unsigned outputs, Json (*value)(const CaseResult&, const Show&)) {
  Column c = derived(key, outputs, value);
  c.stats = true;
  return c;
}

Column extras_place(JsonPlace place) {
  Column c;
  c.extras_here = true;
  c.place = place;
  return c;
}

// ---- How parts combine (src/cluster): as copy combines its cards ----

template <auto M>
void sum(CaseResult& into, const ResultParts& parts) {
  member_t<M> total{};
  for (const CaseResult* p : parts) total += p->*M;
  into.*M = total;
}

template <auto M>
void longest(CaseResult& into, const ResultParts& parts) {
  member_t<M> most{};
  for (const CaseResult* p : parts) most = std::max(most, p->*M);
  into.*M = most;
}

// Each stage per iteration the slowest part's (the iterations started together).
void slowest_stages(CaseResult& into, const ResultParts& parts) {
  for (size_t s = 0; s < into.stages.size(); ++s) {
    std::vector<const Stage*> same;
    for (const CaseResult* p : parts) same.push_back(&p->stages.at(s));
    into.stages[s] = slowest_per_iteration(same, into.name);
  }
}

// Every part's notes once, in the order first said.
void every_note(CaseResult& into, const ResultParts& parts) {
  for (const CaseResult* p : parts)
    for (const std::string& n : p->notes)
      if (std::find(into.notes.begin(), into.notes.end(), n) == into.notes.end()) into.notes.push_back(n);
}

// Validated only when every part was; unknown when any part did not validate.
void all_validated(CaseResult& into, const ResultParts& parts) {
  for (const CaseResult* p : parts) {
    if (p->validated && into.validated) into.validated = *into.validated && *p->validated;
    if (!p->validated) into.validated.reset();
  }
}

// Every part's workers and shared parts, in part order.
void every_placement(CaseResult& into, const ResultParts& parts) {
  for (const CaseResult* p : parts) {
    if (p == parts.front()) continue;
    into.numa.workers.insert(into.numa.workers.end(), p->numa.workers.begin(), p->numa.workers.end());
    into.numa.shared.insert(into.numa.shared.end(), p->numa.shared.begin(), p->numa.shared.end());
    if (into.numa.mode.empty()) into.numa.mode = p->numa.mode;
  }
}

std::string kib_cell(const Json& v) { return format_kib(v.get<uint64_t>()); }

// The columns whose value, codec form or rule is their own.
Column validated_column() {
  Column c;
  c.key = "validated";
  c.outputs = kInJson | kInCsv | kInCodec;
  c.value = [](const CaseResult& r, const Show&) { return r.validated ? Json(*r.validated) : Json(nullptr); };
  c.read_back = [](const Json& j, CaseResult& r) {
    if (j.is_null())
      r.validated.reset();
    else
      r.validated = j.get<bool>();
  };
  c.combine = &all_validated;
  return c;
}

// Every stage with its samples: only the codec carries them (JSON and CSV show
// the statistics of the ones they name).
Column stages_column() {
  Column c;
  c.key = "stages";
  c.outputs = kInCodec;
  c.wire = [](const CaseResult& r) {
    Json a = Json::array();
    for (const Stage& s : r.stages) a.push_back(stage_wire(s));
    return a;
  };
  c.read_back = [](const Json& j, CaseResult& r) {
    r.stages.clear();
    for (const Json& s : j) r.stages.push_back(stage_from_wire(s));
  };
  c.combine = &slowest_stages;
  return c;
}

// JSON shows the record as a reader wants it (only when recorded); the codec
// carries every member.
Column numa_column() {
  Column c;
  c.key = "numa";
  c.outputs = kInJson | kInCodec;
  c.value = [](const CaseResult& r, const Show&) {
    return r.numa.mode.empty() ? Json(Json::value_t::discarded) : numa_shown(r.numa);
  };
  c.wire = [](const CaseResult& r) { return numa_wire(r.numa); };
  c.read_back = [](const Json& j, CaseResult& r) { r.numa = numa_from_wire(j); };
  c.combine = &every_placement;
  return c;
}

// With --model: one iteration moves one request's KV on every card.
Column per_request_column() {
  return derived("kv_load_ms", kInJson, [](const CaseResult& r, const Show& show) {
    if (!show.workload) return Json(Json::value_t::discarded);
    return Json{{"per_card", r.stage(r.measured).avg / 1e6},
                {"cards", r.devices},
                {"end_to_end", r.stage("Wall").avg / 1e6}};
  });
}

// What the result answers and what to know first (output/verdict.h): derived from the
// figures on whichever side shows them, never carried.
Column verdict_column() {
  return derived("verdict", kInJson, [](const CaseResult& r, const Show&) {
    const Verdict v = verdict_of(r);
    Json notes = Json::array();
    for (const VerdictNote& n : v.notes) notes.push_back(Json{{"kind", n.kind}, {"text", n.text}});
    return Json{{"text", v.text}, {"notes", notes}};
  });
}

Column measured_stats_column() {
  Column c = stats("copy_us", kInJson | kInCsv,
                   [](const CaseResult& r, const Show&) { return stats_us(r.stage(r.measured)); })
                 .in_text("(us)-(Min/Max/Avg/P50/P90)", 44);
  c.header_names_measured = true;
  return c;
}

// The table: one row per column, in the order JSON and CSV write them.
std::vector<Column> make_columns() {
  const unsigned all = kInJson | kInCsv | kInCodec;
  return {
      field<&CaseResult::name>("name", all),
      field<&CaseResult::brief>("brief", all),
      field<&CaseResult::from>("from", all).in_text("From", 18),
      field<&CaseResult::to>("to", all).in_text("To", 18),
      field<&CaseResult::method>("method", all).in_text("Method", 10),
      field<&CaseResult::block_bytes>("block_bytes", all).in_text("Size(KB)", 10, &kib_cell),
      field<&CaseResult::count>("count", all).in_text("Count", 8).combined_by(&sum<&CaseResult::count>),
      field<&CaseResult::bytes>("bytes", kInCodec).combined_by(&sum<&CaseResult::bytes>),
      field<&CaseResult::devices>("devices", all).combined_by(&sum<&CaseResult::devices>),
      field<&CaseResult::streams>("streams", all),
      field<&CaseResult::frags>("frags", all),
      optional_text<&CaseResult::layout>("layout", all),
      field<&CaseResult::copies>("copies_per_iteration", all).combined_by(&sum<&CaseResult::copies>),
      // The mean size of one copy; null where nothing is copied (aio).
      derived("mean_chunk_bytes", kInJson | kInCsv,
              [](const CaseResult& r, const Show&) { return r.copies ? Json(r.mean_chunk_bytes()) : Json(nullptr); }),
      field<&CaseResult::iterations>("iterations", all),
      field<&CaseResult::warmup>("warmup", all),
      optional_text<&CaseResult::submit_mode>("submit_mode", all),
      field<&CaseResult::stream_start_gate>("stream_start_gate", all),
      field<&CaseResult::measured>("time_label", all),
      stages_column(),
      stats("submit_us", kInJson | kInCsv,
            [](const CaseResult& r, const Show&) { return stats_us(r.stage("Submit")); })
          .in_text("Submit(us)-(Min/Max/Avg/P50/P90)", 40),
      measured_stats_column(),
      stats("wall_us", kInJson | kInCsv, [](const CaseResult& r, const Show&) { return stats_us(r.stage("Wall")); }),
      stats("start_skew_us", kInJson | kInCsv,
            [](const CaseResult& r, const Show&) { return stats_us(r.stage("StartSkew")); }),
      derived("bandwidth_gib_s", kInJson | kInCsv,
              [](const CaseResult& r, const Show&) { return Json(r.bandwidth_gib_s()); })
          .in_text("BW(GB/s)", 0),
      derived("bandwidth_gb_s", kInJson | kInCsv, [](const CaseResult& r, const Show&) { return Json(r.bandwidth_gb_s()); }),
      derived("wall_bandwidth_gib_s", kInJson | kInCsv,
              [](const CaseResult& r, const Show&) { return Json(r.wall_bandwidth_gib_s()); }),
      validated_column(),
      optional_text<&CaseResult::validate>("validate", kInJson | kInCodec),
      field<&CaseResult::setup_s>("setup_s", all).combined_by(&longest<&CaseResult::setup_s>),
      field<&CaseResult::retries>("retries", all).combined_by(&sum<&CaseResult::retries>),
      field<&CaseResult::notes>("notes", kInJson | kInCodec).combined_by(&every_note),
      extras_place(JsonPlace::kAfterNotes),
      numa_column(),
      extras_place(JsonPlace::kAfterNuma),
      field<&CaseResult::kv_request>("kv_request", kInCodec),
      field<&CaseResult::kv_on_cards>("kv_on_cards", kInCodec),
      field<&CaseResult::path>("path", kInCodec),
      per_request_column(),
      field<&CaseResult::timer>("timer", kInCodec),
      field<&CaseResult::timer_resolution_ns>("timer_resolution_ns", kInCodec),
      verdict_column(),
  };
}

}  // namespace

Column Column::in_text(const char* header, size_t width, std::string (*cell)(const Json&)) const {
  Column c = *this;
  c.outputs |= kInText;
  c.text_header = header;
  c.text_width = width;
  c.text_cell = cell;
  return c;
}

Column Column::combined_by(void (*rule)(CaseResult&, const ResultParts&)) const {
  Column c = *this;
  c.combine = rule;
  return c;
}

const std::vector<Column>& result_columns() {
  static const std::vector<Column> columns = make_columns();
  return columns;
}

Json csv_stage_row(const CaseResult& r, const std::string& suffix, const Stage& stage, uint64_t bytes) {
  Json row = Json::object();
  for (const Column& c : result_columns())
    if (c.in(kInCsv)) row[c.key] = c.value(r, ShowContext{});
  for (const char* k : {"copies_per_iteration", "mean_chunk_bytes", "submit_us", "wall_us", "start_skew_us", "wall_bandwidth_gib_s",
                        "setup_s", "retries"})
    row.erase(k);
  row["name"] = r.name + ":" + suffix;
  row["copy_us"] = stats_us(stage.ns);
  row["bandwidth_gib_s"] = ds::bandwidth_gib_s(bytes, 1, stage.ns.avg * 1e-9);
  row["bandwidth_gb_s"] = ds::bandwidth_gb_s(bytes, 1, stage.ns.avg * 1e-9);
  return row;
}

}  // namespace ds
