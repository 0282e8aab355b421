// The list of backends compiled into this binary, in auto's order of preference.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ds {

struct BackendFactory {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};

const std::vector<BackendFactory>& backend_factories();

}  // namespace ds
