#include "model/kv_layout.h"

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"

namespace ds {

namespace {

uint64_t mul(uint64_t a, uint64_t b) { return checked_mul(a, b, "the KV sizing"); }
std::string num(uint64_t v) { return std::to_string(v); }

// vLLM's DeepSeek-V3.2 indexer keeps its keys as fp8 with one fp32 scale per
// quant_block_size (128) elements (model_executor/models/deepseek_v2.py, Indexer);
// SGLang's DSA pool the same (mem_cache/memory_pool.py, index_k_with_scale_buffer).
constexpr uint64_t kIndexerQuantBlock = 128;
// vLLM's fp8_ds_mla record per token: 512 fp8 latent, 4 fp32 scales, 64 bf16 rope
// (v1/attention/backends/mla/flashmla_sparse.py, get_kv_cache_shape).
constexpr uint64_t kFp8DsMlaBytes = 512 + 4 * 4 + 64 * 2;

std::string article(KvArch a) { return a == KvArch::kMla ? "an MLA" : "a DSA"; }

}  // namespace

const char* kv_layout_name(KvLayout l) {
  switch (l) {
    case KvLayout::kUcm: return "ucm";
    case KvLayout::kVllmFlash: return "vllm-flash";
    case KvLayout::kVllmFlashInfer: return "vllm-flashinfer";
    case KvLayout::kVllmMla: return "vllm-mla";
    case KvLayout::kSglang: return "sglang";
    case KvLayout::kSglangMla: return "sglang-mla";
  }
  return "?";
}

const std::vector<std::string>& kv_layout_names() {
  static const std::vector<std::string> names = {"ucm", "vllm-flash", "vllm-flashinfer", "vllm-mla", "sglang",
                                                 "sglang-mla"};
  return names;
}

bool engine_mla_layout(KvLayout l) { return l == KvLayout::kVllmMla || l == KvLayout::kSglangMla; }

KvLayout resolve_kv_layout(const ModelShape& m, const std::string& asked, uint64_t block_tokens, std::string* from) {
  *from = asked.empty() ? "default" : "--kv-layout";
  if (asked.empty()) return KvLayout::kUcm;
  const std::vector<std::string>& names = kv_layout_names();
  size_t i = 0;
  while (i < names.size() && names[i] != asked) ++i;
  if (i == names.size())
    throw UsageError("option --kv-layout got '" + asked + "': accepts ucm, vllm-flash, vllm-flashinfer, vllm-mla, "
                     "sglang or sglang-mla" + did_you_mean(asked, names));
  KvLayout l = static_cast<KvLayout>(i);
  const bool mla = m.arch != KvArch::kGqa;
  if (!mla && engine_mla_layout(l))
    throw UsageError("option --kv-layout " + asked + " is the MLA cache; " + m.name +
                     " is GQA: use " + (l == KvLayout::kVllmMla ? "vllm-flash or vllm-flashinfer" : "sglang"));
  if (mla && (l == KvLayout::kVllmFlash || l == KvLayout::kVllmFlashInfer)) {
    l = KvLayout::kVllmMla;
    *from = "--kv-layout " + asked + " on " + article(m.arch) + " model: vLLM's MLA cache";
  } else if (mla && l == KvLayout::kSglang) {
    l = KvLayout::kSglangMla;
    *from = "--kv-layout sglang on " + article(m.arch) + " model: SGLang's MLA pool";
  }
  if (l == KvLayout::kVllmFlash && block_tokens % 16 != 0)
    throw UsageError("option --kv-layout vllm-flash: --block-size " + num(block_tokens) +
                     " is not a multiple of 16 (vLLM's FlashAttention backend refuses it)");
  return l;
}

void engine_layer_chunks(Workload& w) {
  const ModelShape& m = w.model;
  const uint64_t B = w.req.block_tokens, e = w.elem_bytes;
  const std::string tail = " x " + num(B) + " tokens x " + num(e) + " B";
  const std::string B_s = num(B);
  w.fragment_names.clear();
  w.fragments.clear();
  w.fragment_formulas.clear();
  auto add = [&](const std::string& name, uint64_t bytes, const std::string& formula) {
    w.fragment_names.push_back(name);
    w.fragments.push_back(bytes);
    w.fragment_formulas.push_back(formula);
  };
  if (m.arch == KvArch::kGqa) {
    w.kv_heads_per_card = std::max<uint64_t>(1, m.kv_heads / w.req.tp);
    const uint64_t one = mul(mul(mul(w.kv_heads_per_card, m.head_dim), B), e);
    const std::string heads = num(w.kv_heads_per_card) + " kv heads x head_dim " + num(m.head_dim) + tail;
    const std::string dims = B_s + ", " + num(w.kv_heads_per_card) + ", " + num(m.head_dim) + "] " + w.dtype;
    if (w.layout == KvLayout::kVllmFlashInfer) {
      add("KV", mul(2, one), "2 (K and V adjacent) x " + heads);
      w.layout_shape = "one cache per layer [num_blocks, 2, " + dims;
    } else {
      add("K", one, heads);
      add("V", one, heads);
      w.layout_shape = w.layout == KvLayout::kVllmFlash
                           ? "one cache per layer [2, num_blocks, " + dims
                           : "k_buffer and v_buffer per layer [pool tokens, " + num(w.kv_heads_per_card) + ", " +
                                 num(m.head_dim) + "] " + w.dtype + ", a page = " + B_s + " tokens";
    }
    return;
  }
  const uint64_t width = m.kv_lora_rank + m.qk_rope_head_dim;
  if (w.dtype == "fp8_ds_mla")
    add("latent", mul(kFp8DsMlaBytes, B),
        "656 B per token (fp8_ds_mla: 512 fp8 latent + 4 fp32 scales + 64 bf16 rope) x " + B_s + " tokens");
  else
    add("latent", mul(mul(width, B), e),
        "(kv_lora_rank " + num(m.kv_lora_rank) + " + qk_rope_head_dim " + num(m.qk_rope_head_dim) + ")" + tail);
  const std::string row = w.dtype == "fp8_ds_mla" ? "656 uint8" : num(width) + " " + w.dtype;
  w.layout_shape = w.layout == KvLayout::kVllmMla ? "one cache per layer [num_blocks, " + B_s + ", " + row + "]"
                                                  : "kv_buffer per layer [pool tokens, 1, " + row + "], a page = " +
                                                        B_s + " tokens";
  if (m.arch == KvArch::kDsa) {
    const uint64_t per_token = m.index_head_dim + m.index_head_dim / kIndexerQuantBlock * 4;
    add("indexer", mul(per_token, B),
        "(index_head_dim " + num(m.index_head_dim) + " fp8 + " + num(m.index_head_dim / kIndexerQuantBlock) +
            " fp32 scale) = " + num(per_token) + " B per token x " + B_s + " tokens");
    w.layout_shape += w.layout == KvLayout::kVllmMla
                          ? "; indexer cache per layer [num_blocks, " + B_s + ", " + num(per_token) + "] uint8"
                          : "; index_k_with_scale_buffer per layer [pages, " + B_s + " x " + num(per_token) + "] uint8";
  }
}

void layout_tasks(Workload& w) {
  const uint64_t layers = w.model.layers;
  w.task_fragments.clear();
  if (w.layout == KvLayout::kUcm) {
    w.tasks_per_block = layers;
    w.task_fragments = w.fragments;
  } else {
    // Every layer's chunks of one block, layer by layer: one IO task.
    w.tasks_per_block = 1;
    for (uint64_t l = 0; l < layers; ++l) w.task_fragments.insert(w.task_fragments.end(), w.fragments.begin(), w.fragments.end());
  }
  w.tasks_per_card = mul(w.blocks, w.tasks_per_block);
  w.copies_per_card = mul(w.tasks_per_card, w.task_fragments.size());
}

// Each engine's block (page) size where the user gives none, from their source (docs/model.md
// cites it): vLLM 16 for FlashAttention, 64 for FlashMLA and FlashMLASparse; SGLang page 1
// (fa3, its Hopper default) and 64 for DSA; vLLM-Ascend and SGLang's ascend backend 128.
std::string engine_defaults_text(const Workload& w) {
  const ModelShape& m = w.model;
  const bool chosen = w.dtype_from.rfind("--kv-dtype", 0) == 0;
  const std::string auto_dtype = chosen ? "the config's dtype" : w.dtype;
  const std::string dtype = "; both at kv-cache-dtype auto = " + auto_dtype;
  const std::string ascend = "; on Ascend both 128 (vLLM-Ascend, SGLang's ascend backend)";
  if (m.arch == KvArch::kGqa)
    return "vLLM: vllm-flash (FlashAttention), block 16; SGLang: sglang (fa3 on Hopper), page 1" + ascend + dtype;
  if (m.arch == KvArch::kMla)
    return "vLLM: vllm-mla (FlashMLA), block 64; SGLang: sglang-mla (fa3 on Hopper), page 1" + ascend + dtype;
  return "vLLM: vllm-mla (FlashMLASparse), block 64; SGLang: sglang-mla (dsa), page 64" + dtype +
         ", the indexer keys fp8 with their scale; fp8 is stored as fp8_ds_mla (656 B per token), not by default";
}

std::string layout_resolution_note(const Workload& w) {
  if (w.layout_from.rfind("--kv-layout ", 0) != 0 || w.layout_from.find(" model: ") == std::string::npos) return "";
  std::string s = w.layout_from + " (" + kv_layout_name(w.layout) + "), " + w.dtype;
  if (w.dtype_from.rfind("--kv-dtype", 0) != 0 && w.model.arch == KvArch::kDsa)
    s += " as the engine's default (fp8_ds_mla only with --kv-dtype fp8)";
  return s;
}

}  // namespace ds
