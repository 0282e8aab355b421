// The one lossless CaseResult <-> JSON codec: every field of a result (each
// stage's samples and statistics, every device_io entry with its direction, the
// NUMA placement record, ...) as compact JSON text, and back. What travels
// between processes (src/cluster: a rank's results to rank 0) goes through it, so
// a field the codec does not carry fails its round-trip test
// (tests/unit/test_result_codec.cc), not a cluster run. The JSON writer's
// document is a presentation (microseconds, derived bandwidths, nulls for unset
// fields); this is the wire form.
#pragma once

#include <string>

#include "output/result.h"

namespace ds {

// One JSON object's text (compact, no newline).
std::string encode_result(const CaseResult& r);
// RunError ("a result could not be read: ...") when `text` is not what
// encode_result wrote.
CaseResult decode_result(const std::string& text);

std::string encode_run_info(const RunInfo& info);
RunInfo decode_run_info(const std::string& text);

}  // namespace ds
