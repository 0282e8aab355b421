// The duplex copy cases (CaseSpec::duplex): H2D and D2H on every card at once,
// each direction on its own streams, and in the same run each direction alone
// (docs/copy.md "Duplex").
#pragma once

#include <string>

#include "cases/case_runner.h"

namespace ds {

// The largest --duplex-ratio (D2H bytes per H2D byte).
constexpr double kMaxDuplexRatio = 64.0;

// The D2H direction's layout: -n tasks of -f fragments of floor(-s x ratio) bytes.
// UsageError for --block-layout or a D2H block under a byte.
Layout duplex_d2h_layout(const CopyParams& p);
std::string format_ratio(double r);  // "%g"

// What a duplex case needs of the host and of each card, as its measurement declares
// it (each direction's regions, or a block table's pools, the staging, the records).
MemoryNeeds duplex_memory_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend);
// As check_host_memory, for a duplex case (--sweep checks every size before the first).
void check_duplex_host_memory(const CaseSpec& spec, const CopyParams& p, const Backend& backend);

// As run_case, for a duplex case.
void run_duplex_case(const CaseSpec& spec, const CopyParams& p, const SelectedBackend& selected, ResultWriter& writer,
                     Notes& notes, std::string* previous_plan);

}  // namespace ds
