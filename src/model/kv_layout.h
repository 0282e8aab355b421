// Inside ds_model: the engines' block layouts (--kv-layout) that size_workload
// applies. Public names are in model/model.h.
#pragma once

#include <string>

#include "model/model.h"

namespace ds {

// The layout --kv-layout names for this model (empty: ucm). An engine's GQA name on
// an MLA/DSA model is that engine's MLA cache (vllm-flash -> vllm-mla, sglang ->
// sglang-mla); `from` says which. UsageError: an unknown name (did you mean), an MLA
// layout for a GQA model, a block size the engine refuses.
KvLayout resolve_kv_layout(const ModelShape& m, const std::string& asked, uint64_t block_tokens, std::string* from);

// Whether the layout keeps the latent whole (vLLM's and SGLang's MLA caches): where
// fp8 on a DSA model is stored as the 656-byte fp8_ds_mla record.
bool engine_mla_layout(KvLayout l);

// One layer's chunks of one block for the engine layouts (not ucm), with w.model,
// w.req, w.dtype and w.elem_bytes set: fragments, their names and formulas, the
// engine's tensor shape.
void engine_layer_chunks(Workload& w);

// IO tasks per block and one task's chunks, from w.fragments and the layout.
void layout_tasks(Workload& w);

}  // namespace ds
