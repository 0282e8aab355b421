#include "output/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "core/size_label.h"

namespace ds {

namespace {

constexpr int64_t kIntervalNs = 100 * 1000000LL;
constexpr size_t kCounterBytes = 96;  // the counter after the label

// Plain data, set before fork: each process has its own copy afterwards, which
// is fine as only worker 0 writes.
struct State {
  bool active = false;
  char label[200] = {};
  int warmup = 0, total = 0;
  size_t columns = 80;  // a longer line would wrap, and \r would no longer rewrite it
  int64_t start_ns = 0, last_ns = 0, setup_ns = 0;
} g;

void put(const char* text, size_t len) {
  // One write() per update: nothing buffered that a fork could duplicate.
  const ssize_t ignored = ::write(2, text, len);
  (void)ignored;
}

}  // namespace

ProgressScope::ProgressScope(const std::string& case_name, uint64_t block_bytes, int warmup,
                             int iterations) {
  g.active = ::isatty(2) == 1;
  if (!g.active) return;
  std::snprintf(g.label, sizeof g.label, "%s (%s blocks)", case_name.c_str(),
                size_label(block_bytes).c_str());
  winsize ws{};
  g.columns = ::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  g.warmup = warmup;
  g.total = warmup + iterations;
  g.start_ns = now_ns();
  g.last_ns = 0;
  g.setup_ns = 0;
}

ProgressScope::~ProgressScope() {
  if (!g.active) return;
  g.active = false;
  put("\r\033[K", 4);  // worker 0 may have been a child: clear unconditionally
}

namespace {
// The label, then `counter`, as one rewritten line within the terminal's width.
void put_line(const char* counter);
}  // namespace

bool progress_on_terminal() { return ::isatty(2) == 1; }

void progress_setup(int ready, int workers, const std::string& unit) {
  if (!g.active || ready >= workers) return;
  const int64_t now = now_ns();
  if (g.setup_ns != 0 && now - g.setup_ns < kIntervalNs) return;
  g.setup_ns = now;
  char counter[kCounterBytes];
  std::snprintf(counter, sizeof counter, ": setting up: %d/%d %s%s, %.1f s", ready, workers, unit.c_str(),
                workers == 1 ? "" : "s", static_cast<double>(now - g.start_ns) * 1e-9);
  put_line(counter);
}

void progress_iteration(int done) {
  if (!g.active) return;
  const int64_t now = now_ns();
  if (g.last_ns != 0 && now - g.last_ns < kIntervalNs) return;
  g.last_ns = now;
  const double elapsed = static_cast<double>(now - g.start_ns) * 1e-9;
  char counter[kCounterBytes];
  if (done <= g.warmup)
    std::snprintf(counter, sizeof counter, ": warm-up %d/%d, %.1f s", done, g.warmup, elapsed);
  else
    std::snprintf(counter, sizeof counter, ": iteration %d/%d, %.1f s", done - g.warmup,
                  g.total - g.warmup, elapsed);
  put_line(counter);
}

namespace {

void put_line(const char* counter) {
  // Within the terminal's width, shortening the label rather than the counter.
  const size_t counter_len = strnlen(counter, kCounterBytes);
  const size_t room = g.columns > counter_len + 1 ? g.columns - counter_len - 1 : 0;
  const size_t label_len = std::min(std::strlen(g.label), room);
  char line[4 + sizeof g.label + kCounterBytes];
  std::memcpy(line, "\r\033[K", 4);
  std::memcpy(line + 4, g.label, label_len);
  std::memcpy(line + 4 + label_len, counter, counter_len);
  put(line, 4 + label_len + counter_len);
}

}  // namespace

}  // namespace ds
