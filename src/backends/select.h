// Choosing a backend at run time: --backend, DEV_SANDBOX_BACKEND, or auto (ascend,
// then cuda, then sim: the first runtime that loads and sees a device).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ds {

// Every backend name --backend accepts besides "auto", in auto's order.
const std::vector<std::string>& backend_names();

// A backend object for `name` (not yet initialised). UsageError for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name);

// Initialises the runtime in a short-lived child process and reports what it
// found, so this process stays free of runtime state and can fork workers.
BackendProbe probe_in_child(Backend& backend);

struct SelectedBackend {
  std::unique_ptr<Backend> backend;
  BackendProbe probe;
  // How it was chosen, for the run's backend line: "--backend cuda",
  // "DEV_SANDBOX_BACKEND=sim", or auto's reason ("auto: no ascend or cuda runtime
  // found; see `dev-sandbox doctor`").
  std::string how;
};

// `requested` is auto|sim|cuda|ascend, or empty for DEV_SANDBOX_BACKEND / auto.
// auto takes the first runtime that loads and has a device. An explicitly named
// backend that cannot load is a RunError carrying its probe's reason.
SelectedBackend select_backend(const std::string& requested);

// Why auto passed over the backends before `chosen` (in auto's order), from their
// probes: "no ascend or cuda runtime found", "the cuda runtime loaded but sees no
// device"; "" when `chosen` is the first.
std::string auto_passed_over(const std::vector<std::pair<std::string, BackendProbe>>& before);

// The run's one line about its backend (without the "dev-sandbox: " prefix):
// "backend sim (auto: no ascend or cuda runtime found; see `dev-sandbox doctor`)"
// then, where the backend's device memory is host memory (sim), `sim_tail`
// after " -- " ("CPU memcpy numbers, not an accelerator's").
std::string backend_line(const SelectedBackend& s, const std::string& sim_tail);

}  // namespace ds
