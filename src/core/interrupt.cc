#include "core/interrupt.h"

#include <csignal>
#include <cstring>

namespace ds {

namespace {
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) { g_signal = sig; }
void on_child(int) {}
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
  // A child's end interrupts the parent's naps (runner/fanout.cc); it is no stop.
  struct sigaction chld;
  std::memset(&chld, 0, sizeof chld);
  chld.sa_handler = on_child;
  sigemptyset(&chld.sa_mask);
  chld.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &chld, nullptr);
  // A closed stdout is an EPIPE on the write, handled like a stop (OutputClosed),
  // not a signal that kills us before we remove what we made.
  signal(SIGPIPE, SIG_IGN);
}

bool interrupted() { return g_signal != 0; }

void check_interrupted() {
  if (interrupted()) throw Interrupted();
}

}  // namespace ds
