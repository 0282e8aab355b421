// Sizes, counts and the bandwidth definition (docs/measurement.md, "Count and
// bandwidth"), written once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

// "16K", "1m", "2G" (binary multiples) or plain bytes. Throws UsageError naming
// `option` on an empty value, unknown suffix, zero, or overflow.
uint64_t parse_size(const std::string& option, const std::string& text);

// The pieces of a comma list, empty ones kept ("a,,b" -> a, "", b; "" -> one "").
std::vector<std::string> split_commas(const std::string& text);

// A non-negative integer at least `min`. Throws UsageError naming `option`.
uint64_t parse_count(const std::string& option, const std::string& text, uint64_t min);
// The same, also at most `max`, as an int (iterations, devices, streams ...).
int parse_int(const std::string& option, const std::string& text, int min, int max);

// a * b, or UsageError naming `what` when it does not fit 64 bits.
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what);

// v rounded up to a multiple of `align` (> 0).
constexpr uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }

// BW = block_bytes * count / copy_avg, in GiB/s (the user guide's "GB/s" column).
double bandwidth_gib_s(uint64_t block_bytes, uint64_t count, double copy_avg_s);
// The same in decimal GB/s (10^9 bytes per second).
double bandwidth_gb_s(uint64_t block_bytes, uint64_t count, double copy_avg_s);

// Size(KB) cell: block_bytes / 1024, whole when exact, else 3 decimals.
std::string format_kib(uint64_t block_bytes);

// Human size for messages: "4.00 GiB".
std::string format_bytes(uint64_t bytes);

}  // namespace ds
