#include "measurement/measurement.h"

#include <algorithm>
#include <cstdio>

#include "cluster/cluster.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "output/progress.h"
#include "runner/numa_plan.h"

namespace ds {

double setup_seconds(double prepared_s, int64_t loop_start_ns, const LoopResult& loop) {
  return prepared_s + static_cast<double>(std::max(loop.setup_end, loop_start_ns) - loop_start_ns) * 1e-9;
}

namespace {

// "about 40 s", "about 3 min", "about 2.5 h".
std::string about(double s) {
  char t[48];
  if (s < 1)
    std::snprintf(t, sizeof t, "under a second");
  else if (s < 120)
    std::snprintf(t, sizeof t, "about %.0f s", s);
  else if (s < 7200)
    std::snprintf(t, sizeof t, "about %.0f min", s / 60);
  else
    std::snprintf(t, sizeof t, "about %.1f h", s / 3600);
  return t;
}

std::string gib_s(double r) {
  char t[32];
  std::snprintf(t, sizeof t, "%g GiB/s", r);
  return t;
}

std::string seconds(double s) {
  char t[32];
  std::snprintf(t, sizeof t, "%.1f s", s);
  return t;
}

// Only rank 0 says what the run is about to do and has done (every rank runs the same).
bool speaks(const HarnessContext& ctx) { return !ctx.cluster || ctx.cluster->rank() == 0; }

}  // namespace

uint64_t allocated_bytes(const MemoryNeeds& n) {
  return n.host + (n.device_in_host ? 0 : n.device_per_device * static_cast<uint64_t>(std::max(n.devices, 0)));
}

std::string plan_line(const std::string& what, const MemoryNeeds& n, const TimeEstimate& t) {
  std::string line = what + " will allocate host " + format_bytes(n.host) + " (/dev/shm: " +
                     (n.shm ? format_bytes(n.shm) + " of it" : std::string("none")) + "), device ";
  if (n.device_per_device == 0 || n.devices <= 0)
    line += "none";
  else
    line += std::to_string(n.devices) + " x " + format_bytes(n.device_per_device) +
            (n.device_in_host ? " (host memory here, counted in host)" : "");
  line += ", disk " + (n.disk ? format_bytes(n.disk) : std::string("none"));
  // Filled once at setup (/dev/shm is part of the host figure), then moved; the
  // per-iteration records are written as the iterations run, not filled.
  const double gib = 1073741824.0;
  const uint64_t unfilled = t.unfilled + n.records;
  const uint64_t allocated = allocated_bytes(n);
  const double filled = static_cast<double>(allocated - std::min(unfilled, allocated));
  const double s = filled / gib / kNominalFillGibS + static_cast<double>(t.moved) / gib / t.nominal_gib_s;
  line += "; " + about(s) + " (filling " + format_bytes(static_cast<uint64_t>(filled)) + " at a nominal " +
          gib_s(kNominalFillGibS) + ", then " + std::to_string(t.rounds) + " " + t.unit + (t.rounds == 1 ? "" : "s") +
          " moving " + format_bytes(t.moved) + " at a nominal " + gib_s(t.nominal_gib_s) + ")";
  return line;
}

namespace {

// One phase: its loop, then its result, checked and written.
uint64_t run_phase(Measurement& m, size_t phase, double prepared_s, const HarnessContext& ctx) {
  LoopShape shape = m.shape(phase);
  shape.timeout_ns = static_cast<int64_t>(ctx.timeout_s) * 1000000000LL;
  shape.cluster = ctx.cluster;
  const std::string& name = shape.progress_name;
  if (ctx.current) *ctx.current = name;
  LoopHooks hooks;
  hooks.host = [&m, phase](const std::function<void()>& run_workers) { m.host(phase, run_workers); };
  hooks.make_worker = [&m, phase](int w) { return m.make_worker(phase, w); };
  m.before_loop(phase);
  const int64_t t0 = now_ns();
  const LoopResult loop = run_timed_loop(shape, hooks);
  m.after_loop(phase);

  CaseResult r;
  r.name = name;
  r.setup_s = setup_seconds(prepared_s, t0, loop);
  r.retries = loop.retries;
  m.describe(phase, loop, r, ctx.notes);
  m.check_result(phase);
  // Validated: every check the result names (r.validate) passed, or the phase threw.
  if (!r.validate.empty()) r.validated = true;
  ctx.writer.add(r);
  if (r.validated) ctx.writer.validation(r.name, *r.validated);
  // Piped (no progress line to watch): a line per finished phase.
  if (!progress_on_terminal() && speaks(ctx))
    ctx.notes.tell("finished " + name + " in " + seconds(prepared_s + static_cast<double>(now_ns() - t0) * 1e-9) +
                   " (setup " + seconds(r.setup_s) + ")");
  return loop.retries;
}

}  // namespace

namespace {

// The plan line, once per distinct plan in a run of several cases.
void announce_plan(const Measurement& m, const HarnessContext& ctx) {
  const std::string what = m.needs_text().what;
  const std::string line = plan_line(what, m.needs(), m.estimate());
  const std::string plan = line.substr(what.size());
  if (!ctx.previous_plan || *ctx.previous_plan != plan) ctx.notes.tell(line);
  if (ctx.previous_plan) *ctx.previous_plan = plan;
}

}  // namespace

void run_measurement(Measurement& m, const HarnessContext& ctx) {
  m.check();
  if (const NumaRequest* request = m.numa_request()) {
    if (!ctx.selected) throw RunError("internal: a measurement to place without a backend");
    m.placed(numa_plan_for(*request, *ctx.selected, m.placed_devices(), ctx.notes));
  }
  check_host_needs(m.needs(), m.needs_text());
  if (speaks(ctx)) announce_plan(m, ctx);
  const int64_t start = now_ns();
  m.prepare();
  const double prepared_s = static_cast<double>(now_ns() - start) * 1e-9;
  if (ctx.begin) ctx.begin();
  uint64_t retries = 0;
  for (size_t phase = 0; phase < m.phases(); ++phase)
    retries += run_phase(m, phase, phase == 0 ? prepared_s : 0.0, ctx);
  m.finish();
  if (ctx.finish_writer) ctx.writer.finish();
  if (retries > 0 && !m.retried().empty())
    ctx.notes.note(std::to_string(retries) + " " + m.retried() + " were completed by resubmitting the remainder");
  m.done(ctx.notes);
}

std::string encode_worker_notes(const std::vector<WorkerNote>& notes) {
  std::string s;
  for (const WorkerNote& n : notes)
    if (!n.text.empty()) s += (s.empty() ? "" : "\n") + n.kind + "\t" + n.text;
  return s;
}

std::vector<WorkerNote> decode_worker_notes(const std::vector<std::string>& texts) {
  std::vector<WorkerNote> out;
  for (const std::string& text : texts) {
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      const size_t tab = line.find('\t');
      WorkerNote n;
      if (tab != std::string::npos) {
        n.kind = line.substr(0, tab);
        n.text = line.substr(tab + 1);
      } else {
        n.text = line;
      }
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const WorkerNote& o) { return o.kind == n.kind && o.text == n.text; });
      if (!n.text.empty() && !seen) out.push_back(n);
    }
  }
  return out;
}

void keep_worker_notes(const LoopResult& loop, CaseResult& r, Notes& notes) {
  for (const WorkerNote& n : decode_worker_notes(loop.notes)) {
    r.notes.push_back(n.text);
    notes.note(r.name + ": " + n.text);
  }
}

}  // namespace ds
