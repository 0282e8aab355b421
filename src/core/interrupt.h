// Ctrl-C / SIGTERM: a flag the long-running loops poll, so cleanup runs through
// the normal unwinding path (destructors remove shared memory and files).
#pragma once

#include <atomic>

#include "core/error.h"

namespace ds {

class Interrupted : public RunError {
 public:
  Interrupted() : RunError("interrupted") {}
};

void install_interrupt_handlers();
bool interrupted();
// Throws Interrupted when a signal arrived.
void check_interrupted();

}  // namespace ds
