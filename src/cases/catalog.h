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

// The gather methods a paged layout is compared over (copy --model with a block
// table and no case named), host to device, each method's case (one copy per
// chunk, multi-stream, the batched call, cuda's gather kernel, the direct path): on
// one card the single-card cases (the direct path's all-card case on one), on
// several their all-card cases. A backend runs those it offers.
std::vector<std::string> gather_method_cases(int devices);

}  // namespace ds
