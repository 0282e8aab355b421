// The JSON forms of a result's parts, shared by the schema's columns and by the
// measurements' extras: what JSON and CSV show (microseconds, the NUMA record as
// a reader wants it) and the codec's lossless forms, and back.
#pragma once

#include <nlohmann/json.hpp>

#include "output/result.h"

namespace ds {

// Microseconds with nanosecond resolution: {"min", "max", "avg", "p50", "p90",
// "p99", "p999"} (the text table rounds them, JSON and CSV do not).
Json stats_us(const Stats& s);
// The order of those keys: CSV's key_min ... key_p999.
const std::vector<const char*>& stats_us_keys();

// --numa's record as JSON "numa" shows it (what was placed where, what the
// environment refused).
Json numa_shown(const NumaReport& n);

// The codec's forms: every member, nanoseconds as they are. The readers throw
// nlohmann's exceptions (or RunError for a value out of range); the codec turns
// them into one RunError.
Json stats_wire(const Stats& s);
Stats stats_from_wire(const Json& j);
Json stage_wire(const Stage& s);
Stage stage_from_wire(const Json& j);
Json numa_wire(const NumaReport& n);
NumaReport numa_from_wire(const Json& j);

}  // namespace ds
