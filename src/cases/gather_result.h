// What a gather case's result carries beyond the common columns (an extra,
// output/result_extra.h): how its chunks went, one launch of the SM gather kernel
// moving every one of an iteration's copies from a descriptor table uploaded at
// setup. The chunk count and their mean size come from the result's own copies
// per iteration and bytes; the extra adds the launches and the table (the
// "Gather:" line, JSON "gather").
#pragma once

#include <cstdint>
#include <string>

#include "output/result.h"

namespace ds {

// Bytes of one descriptor of the gather kernel's table: five 64-bit words
// (src/backends/cuda/copy_kernel.cu's GatherDesc, copy_kernel_plan.h's
// GatherDescriptor, which asserts the same size).
constexpr uint64_t kGatherDescriptorBytes = 40;

class GatherShape : public ResultExtra {
 public:
  static constexpr const char* kKey = "gather";
  uint64_t launches = 0;     // kernel launches per iteration, every card's
  uint64_t table_bytes = 0;  // the descriptor tables' bytes in device memory, every card's

  const char* key() const override { return kKey; }
  JsonPlace json_place() const override { return JsonPlace::kAfterNuma; }
  void add_json(Json& result, const CaseResult& r) const override;
  std::string block_lines(const CaseResult& r) const override;  // the Gather line
  Json encode() const override;
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// "  Gather: <n> chunks of <mean> B (mean) per iteration in <l> launch(es) of
// ds_gather_kernel, from a <t> B descriptor table built at setup".
std::string format_gather_line(const GatherShape& g, const CaseResult& r);

// Registers GatherShape's decoder; called at the start of the program and by tests.
void register_gather_result();

}  // namespace ds
