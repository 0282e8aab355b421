// As dev-sandbox does (core/interrupt.cc), a child's end interrupts the parent's
// naps while it waits for forked workers: without this handler SIGCHLD is ignored
// and every fork test would wait out the fan-out's 50 ms nap.
#include <signal.h>

#include <cstring>

namespace {

void on_child(int) {}

const bool kInstalled = [] {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_child;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NOCLDSTOP;
  return sigaction(SIGCHLD, &sa, nullptr) == 0;
}();

}  // namespace
