#include "measurement/measurement.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"
#include "runner/numa_plan.h"

namespace ds {

double setup_seconds(double prepared_s, int64_t loop_start_ns, const LoopResult& loop) {
  return prepared_s + static_cast<double>(std::max(loop.setup_end, loop_start_ns) - loop_start_ns) * 1e-9;
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
  return loop.retries;
}

}  // namespace

void run_measurement(Measurement& m, const HarnessContext& ctx) {
  m.check();
  if (const NumaRequest* request = m.numa_request()) {
    if (!ctx.selected) throw RunError("internal: a measurement to place without a backend");
    m.placed(numa_plan_for(*request, *ctx.selected, m.placed_devices(), ctx.notes));
  }
  check_host_needs(m.needs(), m.needs_text());
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
