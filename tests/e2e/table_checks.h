// Where a block table's copies went, from a test double's call log: each copy's
// source and destination block slots, counted from the lowest address each side's
// copies touched (a table that names slot 0 on both sides: the pools' starts).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace dstest {
namespace table {

// The first `n` lines of `call` in `log` ("<pid> <call> ... dst=0x.. src=0x.. ..."),
// of copies of `block_bytes` (bytes=, len= or count=):
// source slot -> destination slot, with `block_bytes` a slot. Empty when a line
// lacks an address or two copies read one source slot.
inline std::map<uint64_t, uint64_t> slot_pairs(const std::string& log, const std::string& call, uint64_t block_bytes,
                                               size_t n) {
  std::vector<uint64_t> src, dst;
  std::istringstream in(log);
  std::string line;
  auto address = [](const std::string& l, const std::string& key, uint64_t* out) {
    const size_t at = l.find(" " + key + "=");
    if (at == std::string::npos) return false;
    *out = std::stoull(l.substr(at + key.size() + 2), nullptr, 16);
    return true;
  };
  while (src.size() < n && std::getline(in, line)) {
    if (line.find(" " + call + " ") == std::string::npos) continue;
    // A copy of one block (not a setup probe's): its size as bytes=, len= or count=.
    bool sized = false;
    for (const char* key : {" bytes=", " len=", " count="}) {
      const std::string want = key + std::to_string(block_bytes);
      const size_t at = (line + " ").find(want + " ");
      sized = sized || at != std::string::npos;
    }
    if (!sized) continue;
    uint64_t s = 0, d = 0;
    if (!address(line, "src", &s) || !address(line, "dst", &d)) continue;
    src.push_back(s);
    dst.push_back(d);
  }
  std::map<uint64_t, uint64_t> pairs;
  if (src.empty()) return pairs;
  const uint64_t s0 = *std::min_element(src.begin(), src.end()), d0 = *std::min_element(dst.begin(), dst.end());
  for (size_t i = 0; i < src.size(); ++i)
    if (!pairs.emplace((src[i] - s0) / block_bytes, (dst[i] - d0) / block_bytes).second) return {};
  return pairs;
}

}  // namespace table
}  // namespace dstest
