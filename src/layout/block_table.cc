#include "layout/block_table.h"

#include <fstream>
#include <random>
#include <unordered_map>

#include "core/error.h"

namespace ds {

namespace {

// A draw in [0, n) without modulo bias, from the generator's raw 64-bit output.
uint64_t draw_below(std::mt19937_64& g, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    const uint64_t v = g();
    if (v < limit) return v % n;
  }
}

// The first `n` places of a Fisher-Yates shuffle of 0..pool-1 run from the front
// (place i swapped with a draw from [i, pool)), which are settled after n draws: only
// the places a swap touched are kept (a sparse map), so the table costs O(n) time and
// memory whatever the pool (a pool of 1e9 slots for a 16-block request: 16 draws).
std::vector<uint64_t> random_slots(uint64_t seed, uint64_t n, uint64_t pool) {
  std::mt19937_64 g(seed);
  std::unordered_map<uint64_t, uint64_t> moved;  // place -> the slot there, where not its own
  moved.reserve(static_cast<size_t>(2 * n));
  auto at = [&moved](uint64_t place) {
    const auto it = moved.find(place);
    return it == moved.end() ? place : it->second;
  };
  std::vector<uint64_t> slots;
  slots.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = i + draw_below(g, pool - i);
    const uint64_t here = at(i), there = at(j);
    moved[j] = here;
    slots.push_back(there);  // place i is final now (later draws start past it)
  }
  return slots;
}

bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

BlockTable from_file(const std::string& path, uint64_t blocks, uint64_t pool, const std::string& option,
                      const std::string& pool_option) {
  std::ifstream in(path);
  if (!in) throw UsageError("option " + option + " got '" + path + "': not sequential, random[:SEED] or a readable file");
  BlockTable t{{}, pool, path, TableKind::kFile, 0};
  std::unordered_map<uint64_t, uint64_t> line_of;  // slot -> the line that named it
  std::string line;
  uint64_t n = 0;
  while (t.slots.size() < blocks && std::getline(in, line)) {
    ++n;
    const std::string s = trimmed(line);
    if (s.empty() || s[0] == '#') continue;
    const std::string at = option + " " + path + " line " + std::to_string(n) + ": ";
    uint64_t slot = 0;
    if (!parse_u64(s, &slot)) throw UsageError(at + "'" + s + "' is not a slot id (one per line, from 0)");
    if (slot >= pool)
      throw UsageError(at + "slot " + s + " is outside the pool of " + std::to_string(pool) +
                       " slots (raise " + pool_option + ")");
    const auto seen = line_of.emplace(slot, n);
    if (!seen.second)
      throw UsageError(at + "slot " + s + " is named twice (first on line " + std::to_string(seen.first->second) +
                       "): two blocks cannot share a slot");
    t.slots.push_back(slot);
  }
  if (t.slots.size() < blocks)
    throw UsageError(option + " " + path + ": " + std::to_string(t.slots.size()) + " slots for " +
                     std::to_string(blocks) + " blocks (one line per block of the request)");
  return t;
}

}  // namespace

BlockTable make_block_table(const std::string& spec, uint64_t blocks, uint64_t pool_in, const std::string& option,
                            const std::string& pool_option) {
  const uint64_t pool = pool_in ? pool_in : blocks * kPoolPerRequest;
  if (pool < blocks)
    throw UsageError("option " + pool_option + " " + std::to_string(pool) + ": the pool holds fewer slots than the " +
                     std::to_string(blocks) + " blocks of the request");
  if (spec == "sequential") {
    BlockTable t{{}, pool, spec, TableKind::kSequential, 0};
    for (uint64_t b = 0; b < blocks; ++b) t.slots.push_back(b);
    return t;
  }
  if (spec == "random" || spec.rfind("random:", 0) == 0) {
    uint64_t seed = 1;
    if (spec != "random" && !parse_u64(spec.substr(7), &seed))
      throw UsageError("option " + option + " got '" + spec + "': random's seed is a number (random:7)");
    return {random_slots(seed, blocks, pool), pool, "random:" + std::to_string(seed), TableKind::kRandom, seed};
  }
  return from_file(spec, blocks, pool, option, pool_option);
}

BlockTable sibling_table(const BlockTable& table, uint64_t blocks, uint64_t pool) {
  switch (table.kind) {
    case TableKind::kSequential:
      return make_block_table("sequential", blocks, pool);
    case TableKind::kRandom: {
      BlockTable t = make_block_table("sequential", blocks, pool);  // the pool checked as the first table's
      t.seed = table.seed + 1;
      t.slots = random_slots(t.seed, blocks, t.pool);
      t.label = "random:" + std::to_string(t.seed);
      t.kind = TableKind::kRandom;
      return t;
    }
    case TableKind::kFile:
      break;
  }
  return {};
}

Layout placed_by(const Layout& layout, const BlockTable& table, uint64_t group) {
  return table.slots.empty() ? layout : layout.paged(table.slots, table.pool, group);
}

BlockTable sequential_in_pool(const BlockTable& table) {
  BlockTable t;
  if (table.slots.empty()) return t;
  t.pool = table.pool;
  t.label = "sequential";
  t.slots.resize(table.slots.size());
  for (size_t b = 0; b < t.slots.size(); ++b) t.slots[b] = b;
  return t;
}

std::string table_text(const BlockTable& table) {
  if (table.slots.empty()) return {};
  return table.label + " in a pool of " + std::to_string(table.pool) + " slots";
}

}  // namespace ds
