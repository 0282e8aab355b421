#include "backend/registry.h"

#include "backends/sim/sim_backend.h"

namespace ds {

const std::vector<BackendFactory>& backend_factories() {
  // auto tries them in this order: ascend, then cuda, then sim.
  static const std::vector<BackendFactory> factories = {
      {"sim", make_sim_backend},
  };
  return factories;
}

}  // namespace ds
