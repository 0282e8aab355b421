#include "output/verdict.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ds {

namespace {

std::string us_text(double ns) { return std::to_string(std::llround(ns / 1000.0)) + " us"; }

// A ratio with one decimal ("91.2x").
std::string times_text(double ratio) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1fx", ratio);
  return b;
}

// A resolution in microseconds, as short as it reads ("0.5 us", "1 us").
std::string resolution_text(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%g us", static_cast<double>(ns) / 1000.0);
  return b;
}

// What the table calls a stage: Wall is UCM's GroupWall.
std::string stage_label(const std::string& stage) { return stage == "Wall" ? "GroupWall" : stage; }

// The measured stage's typical iteration against what its clock times well.
bool short_note(const CaseResult& r, std::string& text) {
  const Stats& m = r.stage(r.measured);
  if (m.samples == 0 && m.p50 == 0 && m.avg == 0) return false;  // nothing measured
  const bool events = !r.timer.empty() && r.timer_resolution_ns > 0;
  const int64_t floor = events ? kEventResolutionsFloor * r.timer_resolution_ns : kHostClockFloorNs;
  if (m.p50 >= floor) return false;
  text = "too short to time well: an iteration's " + r.measured + " takes " + us_text(static_cast<double>(m.p50)) +
         " (P50), under " +
         (events ? us_text(static_cast<double>(floor)) + " = " + std::to_string(kEventResolutionsFloor) + " x the " +
                       resolution_text(r.timer_resolution_ns) + " resolution of " + r.timer
                 : us_text(static_cast<double>(floor)) +
                       " on the host clock (thread wake-ups and scheduling take tens of us)") +
         "; move more bytes per iteration (more or larger blocks)";
  return true;
}

// A stage whose slow iterations make its mean no typical iteration's.
bool spread_note(const CaseResult& r, const std::string& stage, std::string& text) {
  const Stats& s = r.stage(stage);
  if (s.p50 <= 0) return false;
  const double p50 = static_cast<double>(s.p50);
  const double p90_ratio = static_cast<double>(s.p90) / p50, max_ratio = static_cast<double>(s.max) / p50;
  const double shift = s.avg / p50;
  if (!(p90_ratio > kSpreadP90 || (max_ratio > kSpreadMax && shift > kSpreadMeanShift))) return false;
  const std::string figure = stage == "Wall" ? "WallBW" : "BW";
  text = stage_label(stage) + " spread: P90 is " + times_text(p90_ratio) + " and max " + times_text(max_ratio) +
         " its P50 of " + us_text(p50) + ", so its avg " + us_text(s.avg) + " is " +
         std::to_string(std::llround((shift - 1) * 100)) + "% above the P50 and " + figure +
         " is no typical iteration's: compare P50s, or run more iterations";
  return true;
}

// Why GroupWall's avg is so much longer than the measured stage's.
std::string wall_gap_reason(const CaseResult& r) {
  const Stats& m = r.stage(r.measured);
  const Stats& w = r.stage("Wall");
  const Stats& sub = r.stage("Submit");
  const Stats& skew = r.stage("StartSkew");
  const double gap = w.avg - m.avg;
  if (w.avg - static_cast<double>(w.p50) >= 0.5 * gap && w.p50 > 0) {
    const double at_p50 = r.bytes / (static_cast<double>(w.p50) * 1e-9) / 1073741824.0;
    return "the slowest GroupWall (" + us_text(static_cast<double>(w.max)) + ") against its " +
           us_text(static_cast<double>(w.p50)) + " median lifts its avg to " + us_text(w.avg) +
           "; at the P50, WallBW would be " + gib_text(at_p50) + " GiB/s";
  }
  if (sub.avg >= 0.5 * gap)
    return "submission-bound: queuing the work takes " + us_text(sub.avg) + " (Submit avg) of the " +
           us_text(w.avg) + " GroupWall, while it runs in " + us_text(m.avg) + " (" + r.measured + " avg)";
  if (skew.avg >= 0.5 * gap)
    return "the workers start " + us_text(skew.avg) + " apart (StartSkew avg) within the " + us_text(w.avg) +
           " GroupWall";
  return "of the " + us_text(w.avg) + " GroupWall avg, " + us_text(gap) + " lie outside the " + us_text(m.avg) +
         " of " + r.measured + " (its avg): issuing the work, confirming it done, synchronising";
}

bool bw_wall_note(const CaseResult& r, std::string& text) {
  const double m = r.stage(r.measured).avg, w = r.stage("Wall").avg;
  if (m <= 0 || w <= 0 || w <= kBwWallRatio * m) return false;
  text = "BW " + gib_text(r.bandwidth_gib_s()) + " GiB/s is " + times_text(w / m) + " WallBW " +
         gib_text(r.wall_bandwidth_gib_s()) + " GiB/s: " + wall_gap_reason(r);
  return true;
}

// "per card", "over 8 cards, 16.7 per card", or nothing (one store, not cards).
std::string scope_text(const CaseResult& r) {
  if (!r.kv_on_cards) return "";
  if (r.devices <= 1) return " per card";
  return " over " + std::to_string(r.devices) + " cards, " + gib_text(r.bandwidth_gib_s() / r.devices) +
         " per card";
}

}  // namespace

std::string gib_text(double v) {
  char b[32];
  const double a = std::fabs(v);
  std::snprintf(b, sizeof b, a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", v);
  return b;
}

Verdict verdict_of(const CaseResult& r) {
  Verdict v;
  v.text = gib_text(r.bandwidth_gib_s()) + " GiB/s" + scope_text(r) + " (" + r.measured + "); a request sees " +
           gib_text(r.wall_bandwidth_gib_s()) + " GiB/s end to end (WallBW)";
  std::string text;
  if (short_note(r, text)) v.notes.push_back({"short_iteration", text});
  for (const std::string& stage : {r.measured, std::string("Wall")})
    if (spread_note(r, stage, text)) v.notes.push_back({"spread", text});
  if (bw_wall_note(r, text)) v.notes.push_back({"bw_vs_wallbw", text});
  return v;
}

RankEntry rank_entry(const CaseResult& r) {
  RankEntry e;
  e.measured = r.measured;
  e.block_bytes = r.block_bytes;
  e.layout = r.layout;
  e.path = r.path;
  e.name = r.name;
  e.method = r.method;
  e.gib_s = r.bandwidth_gib_s();
  for (const VerdictNote& n : verdict_of(r).notes) e.noted = e.noted || n.kind != "bw_vs_wallbw";
  e.cards = r.kv_on_cards ? r.devices : 0;
  e.group = r.measured + "\n" + std::to_string(r.block_bytes) + "\n" + r.layout + "\n" + r.kv_request + "\n" + r.path +
            "\n" + std::to_string(e.cards) +
            (r.measured == "Copy" ? std::string() : "\n" + r.from + "\n" + r.to);
  if (const ResultExtra* table = r.extras.find("block_table")) {  // the same tables, seed and pool
    e.paged = true;
    e.group += "\n" + table->encode().dump();
  }
  return e;
}

std::vector<Ranking> rankings_of(const std::vector<RankEntry>& entries) {
  std::vector<Ranking> out;
  std::vector<std::string> groups;
  for (const RankEntry& e : entries) {
    const auto at = std::find(groups.begin(), groups.end(), e.group);
    if (at == groups.end()) {
      groups.push_back(e.group);
      out.push_back({e.measured, e.block_bytes, e.layout, e.path, {e}, e.paged, e.cards});
    } else {
      out[static_cast<size_t>(at - groups.begin())].entries.push_back(e);
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const Ranking& g) { return g.entries.size() < 2; }), out.end());
  for (Ranking& g : out)
    std::stable_sort(g.entries.begin(), g.entries.end(),
                     [](const RankEntry& a, const RankEntry& b) { return a.gib_s > b.gib_s; });
  return out;
}

std::string ranked_name(const Ranking& ranking, size_t i) {
  const RankEntry& e = ranking.entries.at(i);
  const bool shared = std::count_if(ranking.entries.begin(), ranking.entries.end(),
                                    [&](const RankEntry& o) { return o.name == e.name; }) > 1;
  return shared ? e.name + " (" + e.method + ")" : e.name;
}

double percent_of_best(const Ranking& ranking, size_t i) {
  const double best = ranking.entries.front().gib_s;
  return best > 0 ? (ranking.entries.at(i).gib_s / best - 1) * 100 : 0;
}

}  // namespace ds

namespace ds {

bool fastest_of(const Ranking& g, const std::string& backend, Fastest* out) {
  if (!g.paged || g.entries.size() < 2) return false;
  Fastest f;
  f.name = ranked_name(g, 0);
  f.method = g.entries[0].method;
  f.gib_s = g.entries[0].gib_s;
  f.next = ranked_name(g, 1);
  f.next_gib_s = g.entries[1].gib_s;
  f.times_next = f.next_gib_s > 0 ? f.gib_s / f.next_gib_s : 0;
  if (backend == "sim")
    f.note = "on sim every method is sim's memcpy on its copy threads, not a device's copy engines or SMs";
  *out = f;
  return true;
}

}  // namespace ds
