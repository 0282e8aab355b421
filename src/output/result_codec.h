// The one lossless CaseResult <-> JSON codec: every column of the schema the
// codec carries (output/result_schema.h: each stage's samples and statistics, the
// NUMA placement record, ...) under the column's own key, and every extra as its
// measurement encodes it (output/result_extra.h), as compact JSON text, and back.
// What travels between processes (src/cluster: a rank's results to rank 0) goes
// through it, so a field the codec does not carry fails its round-trip test
// (tests/unit/test_result_codec.cc), not a cluster run. The JSON writer's
// document is a presentation (microseconds, derived bandwidths); this is the wire
// form. Derived columns are not carried: the far side computes them.
#pragma once

#include <string>

#include "output/result.h"

namespace ds {

// The codec's key for a result's extras: [{"key", "value"}, ...]; no column uses it.
constexpr const char* kExtrasKey = "extras";

// One JSON object's text (compact, no newline).
std::string encode_result(const CaseResult& r);
// RunError ("a result could not be read: ...") when `text` is not what
// encode_result wrote, or names an extra no measurement registered a decoder for.
CaseResult decode_result(const std::string& text);

std::string encode_run_info(const RunInfo& info);
RunInfo decode_run_info(const std::string& text);

}  // namespace ds
