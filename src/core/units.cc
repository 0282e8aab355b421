#include "core/units.h"

#include <cctype>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace ds {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> pieces;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    pieces.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return pieces;
    at = comma + 1;
  }
}

namespace {

bool parse_digits(const std::string& digits, uint64_t* out) {
  if (digits.empty()) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

}  // namespace

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    throw UsageError(what + " overflows 64 bits");
  return a * b;
}

uint64_t parse_size(const std::string& option, const std::string& text) {
  const std::string accepts = " accepts a size in bytes with an optional K, M or G suffix (e.g. 16K, 512M)";
  if (text.empty()) throw UsageError("option " + option + " is empty:" + accepts);
  std::string digits = text;
  uint64_t mult = 1;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (!std::isdigit(static_cast<unsigned char>(text.back()))) {
    digits.pop_back();
    switch (last) {
      case 'K': mult = 1ULL << 10; break;
      case 'M': mult = 1ULL << 20; break;
      case 'G': mult = 1ULL << 30; break;
      default:
        throw UsageError("option " + option + " got '" + text + "': unknown suffix '" + text.back() +
                         "';" + accepts);
    }
  }
  uint64_t v = 0;
  if (!parse_digits(digits, &v))
    throw UsageError("option " + option + " got '" + text + "':" + accepts);
  if (v == 0) throw UsageError("option " + option + " got '" + text + "': must be at least 1 byte");
  return checked_mul(v, mult, "option " + option + " '" + text + "'");
}

uint64_t parse_count(const std::string& option, const std::string& text, uint64_t min) {
  uint64_t v = 0;
  if (!parse_digits(text, &v) || v > (1ULL << 40))
    throw UsageError("option " + option + " got '" + text + "': expects a whole number >= " +
                     std::to_string(min));
  if (v < min)
    throw UsageError("option " + option + " got '" + text + "': must be >= " + std::to_string(min));
  return v;
}

int parse_int(const std::string& option, const std::string& text, int min, int max) {
  const uint64_t v = parse_count(option, text, static_cast<uint64_t>(min));
  if (v > static_cast<uint64_t>(max))
    throw UsageError("option " + option + " got '" + text + "': must be <= " + std::to_string(max));
  return static_cast<int>(v);
}

double bandwidth_gib_s(uint64_t block_bytes, uint64_t count, double copy_avg_s) {
  if (copy_avg_s <= 0) return 0;
  return static_cast<double>(block_bytes) * static_cast<double>(count) / copy_avg_s /
         static_cast<double>(1ULL << 30);
}

double bandwidth_gb_s(uint64_t block_bytes, uint64_t count, double copy_avg_s) {
  if (copy_avg_s <= 0) return 0;
  return static_cast<double>(block_bytes) * static_cast<double>(count) / copy_avg_s / 1e9;
}

std::string format_kib(uint64_t block_bytes) {
  if (block_bytes % 1024 == 0) return std::to_string(block_bytes / 1024);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(block_bytes) / 1024.0);
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

}  // namespace ds
