// sim: a real measurement of CPU memory copies standing in for an accelerator.
// Device memory is host memory owned by a simulated card; every stream is its
// own copy thread (a simulated copy engine); the direct path is a copy thread that takes one
// descriptor list per IO task.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace ds {

// Simulated cards: DEV_SANDBOX_SIM_DEVICES, default 8 (the user guide's 8-card server).
int sim_device_count();

std::unique_ptr<Backend> make_sim_backend();

}  // namespace ds
