#include "backends/registry.h"

#include "backends/ascend/ascend_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/sim/sim_backend.h"

namespace ds {

const std::vector<BackendFactory>& backend_factories() {
  // auto tries them in this order: ascend, then cuda, then sim.
  static const std::vector<BackendFactory> factories = {
      {"ascend", make_ascend_backend},
      {"cuda", make_cuda_backend},
      {"sim", make_sim_backend},
  };
  return factories;
}

}  // namespace ds
