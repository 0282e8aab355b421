// trans's matrix: direction x host buffer x device buffer x method.
// Every combination is an ordinary CaseSpec run by the same case runner as copy.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "cases/case_spec.h"

namespace ds {

struct TransFilters {
  std::vector<std::string> directions;    // H2D, D2H; empty: both
  std::vector<std::string> host_types;    // normal, anonymous, registered, pinned; empty: all
  std::vector<std::string> device_types;  // normal; empty: all
  std::vector<std::string> methods;       // ce, batch_ce, ms_<S>, sm, memcpy; empty: all
};

struct TransCombo {
  CaseSpec spec;  // name <dir>_<host>_<device>_<method>, fork topology
  int streams;    // for ms_<S>; 1 otherwise
};

// Every combination the backend supports, filters applied. UsageError for an
// unknown direction, type or method (naming it and what is accepted) and for a
// bad ms_<S>.
std::vector<TransCombo> trans_matrix(const TransFilters& filters, const Backend& backend);

// The names of every combination this backend offers with no filter.
std::vector<std::string> trans_offered(const Backend& backend);
// The -M methods this backend offers a combination with (ms_<S> as the default ms_4).
std::vector<std::string> trans_offered_methods(const Backend& backend);

}  // namespace ds
