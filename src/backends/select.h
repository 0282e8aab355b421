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
};

// `requested` is auto|sim|cuda|ascend, or empty for DEV_SANDBOX_BACKEND / auto.
// auto takes the first runtime that loads and has a device. An explicitly named
// backend that cannot load is a RunError carrying its probe's reason.
SelectedBackend select_backend(const std::string& requested);

}  // namespace ds
