// The named cases of `copy` (docs/copy.md "Cases") and the quick-mode selectors that
// pick one of them (--model-type, --iodirect, --sdma).
#pragma once

#include <string>
#include <vector>

#include "cases/case_spec.h"

namespace ds {

const std::vector<CaseSpec>& copy_cases();
// nullptr when there is no such case.
const CaseSpec* find_case(const std::string& name);

// The case quick mode selects; UsageError naming the problem for bad values.
std::string quick_mode_case(const std::string& model_type, const std::string& iodirect,
                            const std::string& sdma);

}  // namespace ds
