// What the duplex tests through the cuda and ascend doubles check alike, from the
// double's trace (tests/doubles/double_timing.h: every copy task's start and end
// per stream) and the JSON result: that each direction's figures are its own
// streams' spans, that the two directions overlap in the together pass, and the
// Duplex line's arithmetic.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "json_checks.h"

namespace dstest {

// How far below a task's cost a measured Copy may read. A stream's own events never
// do (each is stamped by the stream's worker before and after its tasks), but the
// ascend backend times several streams by twins on one timing stream
// (AscendDevice::record), and the double's timing-stream thread stamps each twin
// when it wakes after the copy stream reached the event: every stamp is a wake-up
// late, the start's sometimes more than the end's (CI once read 299967 us for a
// 300 ms task on a loaded machine). Far below the gaps the checks tell apart.
constexpr double kTimingStreamSlackUs = 20e3;

// A stream of one process, as the trace and the call logs name it.
using StreamKey = std::pair<long, std::string>;  // pid, handle as %p prints it

struct TracedTask {
  int64_t start = 0, end = 0;
};

// Every stream's copy tasks, in the order its worker ran them.
inline std::map<StreamKey, std::vector<TracedTask>> traced_tasks(const std::string& path) {
  std::map<StreamKey, std::vector<TracedTask>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    long pid = 0;
    int device = 0;
    std::string stream, what;
    long long ns = 0;
    if (!(s >> pid >> device >> stream >> what >> ns)) continue;
    std::vector<TracedTask>& v = out[{pid, stream}];
    if (what == "copy-start") v.push_back({ns, 0});
    if (what == "copy-end" && !v.empty()) v.back().end = ns;
  }
  return out;
}

// One direction's span in each of its passes on one card: the k-th pass from the
// earliest start to the latest end of its streams' k-th tasks (each stream takes
// one task a pass: the tests run -n = --streams, -f 1).
struct Spans {
  std::vector<int64_t> start, end;
};

// The spans of every card (process) for one direction ("H2D"/"D2H"), from the trace
// and which direction each stream copies (from the double's call log).
inline std::map<long, Spans> direction_spans(const std::map<StreamKey, std::vector<TracedTask>>& tasks,
                                             const std::map<StreamKey, std::string>& dir_of, const std::string& dir) {
  std::map<long, Spans> out;
  for (const auto& kv : tasks) {
    const auto d = dir_of.find(kv.first);
    if (d == dir_of.end() || d->second != dir) continue;
    Spans& sp = out[kv.first.first];
    for (size_t k = 0; k < kv.second.size(); ++k) {
      if (sp.start.size() <= k) {
        sp.start.push_back(kv.second[k].start);
        sp.end.push_back(kv.second[k].end);
      }
      sp.start[k] = std::min(sp.start[k], kv.second[k].start);
      sp.end[k] = std::max(sp.end[k], kv.second[k].end);
    }
  }
  return out;
}

// A direction runs in two passes a round: together (even k) and alone (odd k).
// The average over the measured rounds of the slowest card's span in that pass, us.
inline double traced_avg_us(const std::map<long, Spans>& spans, bool alone, int warmup, int iterations) {
  double sum = 0;
  for (int round = warmup; round < warmup + iterations; ++round) {
    const size_t k = static_cast<size_t>(2 * round + (alone ? 1 : 0));
    int64_t slowest = 0;
    for (const auto& kv : spans) {
      EXPECT_LT(k, kv.second.start.size()) << "card (pid " << kv.first << ") ran fewer passes";
      if (k < kv.second.start.size()) slowest = std::max(slowest, kv.second.end[k] - kv.second.start[k]);
    }
    sum += static_cast<double>(slowest) / 1000.0;
  }
  return sum / iterations;
}

// The Duplex line's figures from the JSON result's own: each direction's bytes over
// its Copy (together and alone), e the result's BW (both directions' bytes over the
// together pass's Copy) and p = e / (a + b) x 100.
inline void expect_duplex_arithmetic(const json& res, double ratio) {
  const json& dx = res.at("duplex");
  const double h2d = dx.at("h2d").at("bytes").get<double>(), d2h = dx.at("d2h").at("bytes").get<double>();
  EXPECT_EQ(dx.at("ratio").get<double>(), ratio);
  EXPECT_NEAR(d2h, h2d * ratio, h2d * ratio * 1e-3);
  auto gib_s = [](double bytes, const json& us) { return bytes / (us.at("avg").get<double>() * 1e-6) / (1 << 30); };
  for (const char* k : {"h2d", "d2h"}) {
    SCOPED_TRACE(k);
    const json& d = dx.at(k);
    const double bytes = d.at("bytes").get<double>();
    EXPECT_NEAR(d.at("gib_s").get<double>(), gib_s(bytes, d.at("copy_us")), 1e-9 * gib_s(bytes, d.at("copy_us")));
    EXPECT_NEAR(d.at("alone_gib_s").get<double>(), gib_s(bytes, d.at("alone_copy_us")),
                1e-9 * gib_s(bytes, d.at("alone_copy_us")));
  }
  const double e = gib_s(h2d + d2h, res.at("copy_us"));
  EXPECT_NEAR(dx.at("together_gib_s").get<double>(), e, e * 1e-9);
  EXPECT_DOUBLE_EQ(dx.at("together_gib_s").get<double>(), res.at("bandwidth_gib_s").get<double>());
  const double alone = dx.at("h2d").at("alone_gib_s").get<double>() + dx.at("d2h").at("alone_gib_s").get<double>();
  EXPECT_NEAR(dx.at("percent_of_alone").get<double>(), 100.0 * e / alone, 1e-6);
  // The perfect overlap: both directions' bytes over the longer alone Copy.
  const double longer_us = std::max(dx.at("h2d").at("alone_copy_us").at("avg").get<double>(),
                                    dx.at("d2h").at("alone_copy_us").at("avg").get<double>());
  const double perfect = (h2d + d2h) / (longer_us * 1e-6) / (1 << 30);
  EXPECT_NEAR(dx.at("perfect_overlap_gib_s").get<double>(), perfect, perfect * 1e-9);
  EXPECT_NEAR(dx.at("percent_of_perfect_overlap").get<double>(), 100.0 * e / perfect, 1e-6);
}

// A duplex run through a double whose copy tasks take 100 ms per 64 KiB, at
// --duplex-ratio 2 (D2H's tasks 200 ms): each direction's figures are its own
// streams' (the trace's spans, and not the other direction's latency), the
// directions overlap in every together pass (their spans intersect on every card,
// and the pass is shorter than the alone passes summed), and the Duplex line's
// arithmetic. `dir_of`: each traced stream's direction, from the double's call log.
inline void expect_own_streams_and_overlap(const json& res, const std::string& trace_path,
                                           const std::map<StreamKey, std::string>& dir_of, int warmup,
                                           int iterations) {
  const auto tasks = traced_tasks(trace_path);
  const auto h2d = direction_spans(tasks, dir_of, "H2D"), d2h = direction_spans(tasks, dir_of, "D2H");
  ASSERT_EQ(h2d.size(), 2u) << "cards with H2D streams in the trace";
  ASSERT_EQ(d2h.size(), 2u) << "cards with D2H streams in the trace";
  const json& dx = res.at("duplex");
  struct Row {
    const char* what;
    const json& us;
    const std::map<long, Spans>& spans;
    bool alone;
    double injected_us;
  };
  const Row rows[] = {{"H2D together", dx.at("h2d").at("copy_us"), h2d, false, 100e3},
                      {"H2D alone", dx.at("h2d").at("alone_copy_us"), h2d, true, 100e3},
                      {"D2H together", dx.at("d2h").at("copy_us"), d2h, false, 200e3},
                      {"D2H alone", dx.at("d2h").at("alone_copy_us"), d2h, true, 200e3}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const double avg = r.us.at("avg").get<double>();
    // A task never takes less than its cost; the other direction's (twice or half
    // this one's) is 100 ms away.
    EXPECT_GE(avg, r.injected_us - kTimingStreamSlackUs);
    EXPECT_LT(avg, r.injected_us + 90e3);
    // The figure is its own streams' events: the trace's span of them, within what
    // recording an event around the copies adds.
    EXPECT_NEAR(avg, traced_avg_us(r.spans, r.alone, warmup, iterations), 20e3);
  }
  // Overlap: in every together pass on every card, the H2D span and the D2H span
  // intersect (run one after the other, they would not).
  for (const auto& kv : h2d) {
    const Spans& up = kv.second;
    const Spans& down = d2h.at(kv.first);
    for (size_t k = 0; k < std::min(up.start.size(), down.start.size()); k += 2) {
      SCOPED_TRACE("card pid " + std::to_string(kv.first) + " round " + std::to_string(k / 2));
      EXPECT_LT(std::max(up.start[k], down.start[k]), std::min(up.end[k], down.end[k]));
    }
  }
  const double together = res.at("copy_us").at("avg").get<double>();
  EXPECT_LT(together, dx.at("h2d").at("alone_copy_us").at("avg").get<double>() +
                          dx.at("d2h").at("alone_copy_us").at("avg").get<double>());
  EXPECT_GE(together, 200e3 - kTimingStreamSlackUs);
  expect_duplex_arithmetic(res, 2.0);
}

// A duplex run in which every stream's first three tasks take 300 ms more (COLD=3:
// the warm-up round's two passes and the measured together pass; -i 1), the rest
// next to nothing: each direction's together figure is the together pass's and its
// alone figure the alone pass's, so an alone figure taken from the together pass
// (or the other way round) is 300 ms off.
inline void expect_alone_is_the_alone_pass(const json& res) {
  const json& dx = res.at("duplex");
  for (const char* k : {"h2d", "d2h"}) {
    SCOPED_TRACE(k);
    EXPECT_GE(dx.at(k).at("copy_us").at("avg").get<double>(), 300e3 - kTimingStreamSlackUs);
    EXPECT_LT(dx.at(k).at("alone_copy_us").at("avg").get<double>(), 150e3);
  }
  EXPECT_GE(res.at("copy_us").at("avg").get<double>(), 300e3 - kTimingStreamSlackUs);
}

}  // namespace dstest
