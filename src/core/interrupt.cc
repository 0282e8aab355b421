#include "core/interrupt.h"

#include <csignal>
#include <cstring>

namespace ds {

namespace {
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) { g_signal = sig; }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits return EINTR and look at the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

bool interrupted() { return g_signal != 0; }

void check_interrupted() {
  if (interrupted()) throw Interrupted();
}

}  // namespace ds
