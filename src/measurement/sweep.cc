#include "measurement/sweep.h"

#include <algorithm>

#include "core/error.h"
#include "core/size_label.h"
#include "core/units.h"

namespace ds {

namespace {

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::vector<SweepStep> sweep_steps(const std::string& range, uint64_t blocks) {
  const std::string accepts = ": accepts FROM:TO, powers of two with FROM <= TO (e.g. 4K:64M)";
  const size_t colon = range.find(':');
  if (colon == std::string::npos || range.find(':', colon + 1) != std::string::npos)
    throw UsageError("option --sweep got '" + range + "'" + accepts);
  const uint64_t from = parse_size("--sweep", range.substr(0, colon));
  const uint64_t to = parse_size("--sweep", range.substr(colon + 1));
  if (!power_of_two(from) || !power_of_two(to) || from > to)
    throw UsageError("option --sweep got '" + range + "'" + accepts);
  const uint64_t budget = checked_mul(from, blocks, "--sweep FROM x -n");
  std::vector<SweepStep> steps;
  for (uint64_t s = from;; s *= 2) {
    steps.push_back({s, std::max<uint64_t>(1, std::min(blocks, budget / s))});
    if (s == to) break;
  }
  return steps;
}

std::string lowered_count_note(const std::vector<SweepStep>& steps, uint64_t blocks, const SweepCount& count) {
  if (steps.empty()) return "";
  const uint64_t budget = steps.front().block_bytes * steps.front().blocks;  // in swept bytes
  std::string changes, over;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;  // steps[i..j]: one count
    while (j + 1 < steps.size() && steps[j + 1].blocks == steps[i].blocks) ++j;
    if (steps[i].blocks != blocks)
      changes += (changes.empty() ? "" : ", ") + std::to_string(steps[i].blocks) + " at " +
                 size_label(steps[i].block_bytes) +
                 (j > i ? " to " + size_label(steps[j].block_bytes) : std::string());
    i = j + 1;
  }
  if (changes.empty()) return "";
  for (const SweepStep& s : steps)
    if (over.empty() && s.blocks * s.block_bytes > budget) over = size_label(s.block_bytes);
  return "--sweep keeps the first size's " + format_bytes(budget * count.bytes_per_block_byte) + " " + count.per +
         ": " + count.option + " " + std::to_string(blocks) + " becomes " + changes +
         (over.empty() ? "" : " (from " + over + ", " + count.option + " 1 is more than that)");
}

std::vector<CaseResult> run_in_turn(size_t runs, ResultWriter& out,
                                    const std::function<void(size_t, ResultWriter&)>& run) {
  SweepWriter each(out);
  for (size_t i = 0; i < runs; ++i) run(i, each);
  out.finish();
  return each.results();
}

}  // namespace ds
