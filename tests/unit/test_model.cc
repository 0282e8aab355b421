// Model-driven KV sizing: detection and the per-layer block against numbers worked
// out by hand, every preset against the config.json it was taken from, and every
// refusal (a UsageError: exit 2 naming what made it so).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model.h"

using namespace ds;

namespace {

WorkloadRequest req(uint64_t tp, uint64_t input_len = 4096, std::string dtype = "", std::string layout = "") {
  WorkloadRequest r;
  r.tp = tp;
  r.input_len = input_len;
  r.kv_dtype = dtype;
  r.kv_layout = layout;
  return r;
}

std::string data(const std::string& name) { return std::string(DS_MODEL_DATA) + "/" + name; }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

// Hand-computed, B = 128 tokens, bf16 (2 bytes).
struct Expect {
  const char* name;
  uint64_t tp;
  const char* arch;
  uint64_t layers;
  std::vector<uint64_t> fragments;
};

const Expect kPresets[] = {
    // 8 kv heads / TP 8 = 1 x 128 x 128 x 2
    {"Qwen3-32B", 8, "GQA", 64, {32768, 32768}},
    {"Qwen3-32B", 1, "GQA", 64, {262144, 262144}},  // 8 x 128 x 128 x 2
    {"Qwen3-235B-A22B", 8, "GQA", 94, {32768, 32768}},  // max(1, 4 / 8) = 1
    {"Qwen3-235B-A22B", 2, "GQA", 94, {65536, 65536}},  // 2 heads
    {"Llama-3.1-70B", 4, "GQA", 80, {65536, 65536}},  // head_dim 8192 / 64 = 128, 2 heads
    {"DeepSeek-V3", 8, "MLA", 61, {131072, 16384}},  // 512 x 128 x 2, 64 x 128 x 2
    {"DeepSeek-V3.2", 8, "DSA", 61, {131072, 16384, 32768}},  // + 128 x 128 x 2
    {"GLM-5", 4, "DSA", 78, {131072, 16384, 32768}},
};

TEST(Model, PresetsAgainstHandComputedNumbers) {
  for (const Expect& e : kPresets) {
    const Workload w = size_workload(load_model(e.name), req(e.tp, 32768));
    EXPECT_STREQ(arch_name(w.model.arch), e.arch) << e.name;
    EXPECT_EQ(w.model.layers, e.layers) << e.name;
    EXPECT_EQ(w.fragments, e.fragments) << e.name << " TP " << e.tp;
    EXPECT_EQ(w.dtype, "bf16") << e.name;
    EXPECT_EQ(w.blocks, 256u) << e.name;  // ceil(32768 / 128)
    EXPECT_EQ(w.tasks_per_card, 256u * e.layers) << e.name;
    uint64_t layer = 0;
    for (uint64_t f : e.fragments) layer += f;
    EXPECT_EQ(w.bytes_per_card, 256u * e.layers * layer) << e.name;
  }
  // The issue's question: Qwen3-32B at TP 8, 32K tokens: 256 x 64 tasks of 64 KiB = 1 GiB per card.
  EXPECT_EQ(size_workload(load_model("qwen3-32b"), req(8, 32768)).bytes_per_card, 1ULL << 30);
}

// Each preset equals the sizing of the config.json it names (tests/data/models).
TEST(Model, EveryPresetEqualsItsConfigFile) {
  ASSERT_EQ(model_presets().size(), 6u);
  for (const Preset& p : model_presets()) {
    const ModelShape f = load_model(data(p.name));  // a directory holding config.json
    const ModelShape& m = p.shape;
    EXPECT_EQ(f.arch, m.arch) << p.name;
    EXPECT_EQ(f.layers, m.layers) << p.name;
    EXPECT_EQ(f.kv_heads, m.kv_heads) << p.name;
    EXPECT_EQ(f.head_dim, m.head_dim) << p.name;
    EXPECT_EQ(f.head_dim_derived, m.head_dim_derived) << p.name;
    EXPECT_EQ(f.kv_lora_rank, m.kv_lora_rank) << p.name;
    EXPECT_EQ(f.qk_rope_head_dim, m.qk_rope_head_dim) << p.name;
    EXPECT_EQ(f.index_head_dim, m.index_head_dim) << p.name;
    EXPECT_EQ(f.config_dtype, m.config_dtype) << p.name;
    for (uint64_t tp : {1, 2, 8, 16})
      EXPECT_EQ(size_workload(f, req(tp)).fragments, size_workload(m, req(tp)).fragments) << p.name << " TP " << tp;
  }
}

TEST(Model, TextConfigMissingHeadDimAndTpAboveKvHeads) {
  const ModelShape m = parse_model_config(
      R"({"architectures":["X"],"torch_dtype":"float16","text_config":{"num_hidden_layers":10,
          "num_attention_heads":32,"num_key_value_heads":2,"hidden_size":2048}})",
      "made-up");
  EXPECT_TRUE(m.used_text_config);
  EXPECT_EQ(m.layers, 10u);
  EXPECT_EQ(m.head_dim, 64u);  // 2048 / 32
  EXPECT_TRUE(m.head_dim_derived);
  const Workload w = size_workload(m, req(8, 1000));
  EXPECT_EQ(w.kv_heads_per_card, 1u);            // max(1, 2 / 8)
  EXPECT_EQ(w.fragments, (std::vector<uint64_t>{16384, 16384}));  // 1 x 64 x 128 x 2 (fp16 from the top level)
  EXPECT_EQ(w.dtype, "fp16");
  EXPECT_EQ(w.blocks, 8u);  // ceil(1000 / 128)
  // No num_key_value_heads: every attention head is a kv head.
  const ModelShape mha = parse_model_config(R"({"num_hidden_layers":2,"num_attention_heads":4,"head_dim":32})", "mha");
  EXPECT_EQ(mha.kv_heads, 4u);
  EXPECT_EQ(size_workload(mha, req(2)).fragments, (std::vector<uint64_t>{16384, 16384}));  // 2 x 32 x 128 x 2
}

TEST(Model, KvDtypeAndBlockSize) {
  WorkloadRequest r = req(8, 4096, "fp8");
  r.block_tokens = 64;
  const Workload w = size_workload(load_model("DeepSeek-V3.2"), r);
  EXPECT_EQ(w.elem_bytes, 1u);
  EXPECT_EQ(w.fragments, (std::vector<uint64_t>{32768, 4096, 8192}));  // 512/64/128 x 64 x 1
  EXPECT_EQ(w.blocks, 64u);
  EXPECT_EQ(size_workload(load_model("Qwen3-32B"), req(8, 128, "fp32")).fragments[0], 65536u);
  EXPECT_EQ(fragments_label(w), "32K,4K,8K");
  // No dtype in the config: bf16.
  EXPECT_EQ(size_workload(parse_model_config(R"({"num_hidden_layers":1,"num_attention_heads":1,"head_dim":8})", "x"),
                          req(1)).dtype, "bf16");
  EXPECT_NE(message_of([] { size_workload(load_model("Qwen3-32B"), req(1, 4096, "fp4")); }).find("--kv-dtype"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              size_workload(parse_model_config(R"({"num_hidden_layers":1,"num_attention_heads":1,"head_dim":8,
                                                   "torch_dtype":"float4"})", "cfg.json"), req(1));
            }).find("float4"),
            std::string::npos);
  EXPECT_EQ(parse_tokens("--input-len", "32K"), 32768u);
  EXPECT_THROW(parse_tokens("--input-len", "0"), UsageError);
  EXPECT_THROW(parse_tokens("--input-len", "1.5K"), UsageError);
}

TEST(Model, RefusalsNameTheField) {
  struct Bad {
    const char* json;
    const char* names;
  } bad[] = {
      {R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,"layer_types":["full_attention","sliding_attention"]})",
       "layer_types"},
      {R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,"use_sliding_window":true,"sliding_window":4096})",
       "use_sliding_window"},
      {R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,"sliding_window":4096})", "sliding_window"},
      {R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,"layers_block_type":["attention","mamba"]})",
       "layers_block_type"},
      {R"({"model_type":"mamba2","num_hidden_layers":4})", "model_type"},
      {R"({"num_hidden_layers":4,"hidden_size":64,"ssm_state_size":16})", "ssm_state_size"},
      {R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,"linear_attn_config":{}})", "linear_attn_config"},
      {R"({"num_attention_heads":8,"head_dim":64})", "num_hidden_layers"},
      {R"({"num_hidden_layers":4,"hidden_size":64})", "num_key_value_heads"},
      {R"({"num_hidden_layers":4,"num_attention_heads":8})", "head_dim"},
      {R"({"num_hidden_layers":-4,"num_attention_heads":8})", "num_hidden_layers"},
  };
  for (const Bad& b : bad)
    EXPECT_NE(message_of([&] { parse_model_config(b.json, "cfg.json"); }).find(b.names), std::string::npos) << b.json;
  // Sliding window switched off (Qwen's configs) is a plain GQA model.
  EXPECT_NO_THROW(parse_model_config(
      R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,"sliding_window":4096,"use_sliding_window":false})",
      "cfg.json"));
}

TEST(Model, FilesMissingOrMalformed) {
  EXPECT_NE(message_of([] { load_model("/nonexistent/model"); }).find("/nonexistent/model"), std::string::npos);
  EXPECT_NE(message_of([] { load_model("/tmp"); }).find("/tmp/config.json"), std::string::npos);
  const std::string path = testing::TempDir() + "/ds_bad_config.json";
  std::ofstream(path) << "{ \"num_hidden_layers\": 4, ";
  const std::string msg = message_of([&] { load_model(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  std::remove(path.c_str());
}

TEST(Model, AioStoreLayout) {
  WorkloadRequest r = req(8, 1024);
  r.layerwise = true;
  const Workload lw = size_workload(load_model("DeepSeek-V3.2"), r);
  EXPECT_EQ(lw.shards_per_file, 61u);
  EXPECT_EQ(lw.shard_bytes, 180224u);  // align4096(176 KiB)
  r.layerwise = false;
  const Workload one = size_workload(load_model("DeepSeek-V3.2"), r);
  EXPECT_EQ(one.shards_per_file, 1u);
  EXPECT_EQ(one.shard_bytes, 61u * 180224u);
  WorkloadRequest odd = req(1, 128);
  odd.block_tokens = 3;  // 3 x (8 x 128) x 2 x 2 = 12288 per layer; 5 layers = 61440 = 15 pages
  odd.layerwise = true;
  const ModelShape m = parse_model_config(R"({"num_hidden_layers":5,"num_key_value_heads":1,"num_attention_heads":1,"head_dim":100})", "x");
  const Workload o = size_workload(m, odd);  // K = V = 100 x 3 x 2 = 600; 1200 per layer
  EXPECT_EQ(o.layer_block_bytes, 1200u);
  EXPECT_EQ(o.shard_bytes, 4096u);
  EXPECT_EQ(o.blocks, 43u);  // ceil(128 / 3)
}

// --kv-layout at TP 8, 32K tokens, B = 128, bf16 unless named: one layer's chunks of
// one block, worked out by hand from the config numbers, and what a card copies.
struct LayoutExpect {
  const char* model;
  const char* layout;
  const char* dtype;
  const char* resolved;
  std::vector<std::string> names;
  std::vector<uint64_t> chunks;  // one layer's, in order
  uint64_t layers;
  bool task_per_layer;           // ucm: an IO task per layer of a block
};

const LayoutExpect kLayouts[] = {
    // Qwen3-32B: 8 kv heads / TP 8 = 1 head x head_dim 128 x 128 tokens x 2 B = 32768 per K and V.
    {"Qwen3-32B", "ucm", "", "ucm", {"K", "V"}, {1 * 128 * 128 * 2, 1 * 128 * 128 * 2}, 64, true},
    {"Qwen3-32B", "vllm-flash", "", "vllm-flash", {"K", "V"}, {1 * 128 * 128 * 2, 1 * 128 * 128 * 2}, 64, false},
    // FlashInfer: K and V of a block adjacent, [num_blocks, 2, ...]: one chunk of 2 x 32768.
    {"Qwen3-32B", "vllm-flashinfer", "", "vllm-flashinfer", {"KV"}, {2 * 1 * 128 * 128 * 2}, 64, false},
    {"Qwen3-32B", "sglang", "", "sglang", {"K", "V"}, {1 * 128 * 128 * 2, 1 * 128 * 128 * 2}, 64, false},
    // fp8: 1 B per element, every chunk halves.
    {"Qwen3-32B", "vllm-flash", "fp8", "vllm-flash", {"K", "V"}, {1 * 128 * 128 * 1, 1 * 128 * 128 * 1}, 64, false},
    // Llama-3.1-70B: 8 kv heads / 8 = 1, head_dim 8192 / 64 = 128: the same per layer, 80 layers.
    {"Llama-3.1-70B", "ucm", "", "ucm", {"K", "V"}, {1 * 128 * 128 * 2, 1 * 128 * 128 * 2}, 80, true},
    {"Llama-3.1-70B", "vllm-flash", "", "vllm-flash", {"K", "V"}, {1 * 128 * 128 * 2, 1 * 128 * 128 * 2}, 80, false},
    {"Llama-3.1-70B", "vllm-flashinfer", "fp16", "vllm-flashinfer", {"KV"}, {2 * 1 * 128 * 128 * 2}, 80, false},
    {"Llama-3.1-70B", "sglang", "", "sglang", {"K", "V"}, {1 * 128 * 128 * 2, 1 * 128 * 128 * 2}, 80, false},
    // DeepSeek-V3 (MLA): ucm keeps latent 512 x 128 x 2 and rope 64 x 128 x 2 apart; the
    // engines one latent chunk (512 + 64) x 128 x 2; vllm-flash on MLA is vLLM's MLA cache.
    {"DeepSeek-V3", "ucm", "", "ucm", {"latent", "rope"}, {512 * 128 * 2, 64 * 128 * 2}, 61, true},
    {"DeepSeek-V3", "vllm-flash", "", "vllm-mla", {"latent"}, {(512 + 64) * 128 * 2}, 61, false},
    {"DeepSeek-V3", "vllm-flashinfer", "", "vllm-mla", {"latent"}, {(512 + 64) * 128 * 2}, 61, false},
    {"DeepSeek-V3", "sglang", "", "sglang-mla", {"latent"}, {(512 + 64) * 128 * 2}, 61, false},
    {"DeepSeek-V3", "vllm-mla", "fp8", "vllm-mla", {"latent"}, {(512 + 64) * 128 * 1}, 61, false},  // plain fp8
    // DeepSeek-V3.2 (DSA): the indexer's keys beside the latent, always fp8 with one fp32
    // scale per 128: (128 + 4) x 128 = 16896.
    {"DeepSeek-V3.2", "ucm", "", "ucm", {"latent", "rope", "indexer"}, {512 * 128 * 2, 64 * 128 * 2, 128 * 128 * 2}, 61,
     true},
    {"DeepSeek-V3.2", "vllm-flash", "", "vllm-mla", {"latent", "indexer"}, {(512 + 64) * 128 * 2, (128 + 4) * 128}, 61,
     false},
    {"DeepSeek-V3.2", "sglang-mla", "", "sglang-mla", {"latent", "indexer"}, {(512 + 64) * 128 * 2, (128 + 4) * 128},
     61, false},
    // fp8 on V3.2 in vLLM's cache is fp8_ds_mla: (512 fp8 + 4 x 4 fp32 scales + 64 x 2 bf16 rope) = 656 per token.
    {"DeepSeek-V3.2", "vllm-flash", "fp8", "vllm-mla", {"latent", "indexer"}, {(512 + 4 * 4 + 64 * 2) * 128, (128 + 4) * 128},
     61, false},
    {"DeepSeek-V3.2", "vllm-mla", "fp8_ds_mla", "vllm-mla", {"latent", "indexer"}, {656 * 128, 132 * 128}, 61, false},
    {"DeepSeek-V3.2", "sglang", "fp8", "sglang-mla", {"latent", "indexer"}, {656 * 128, 132 * 128}, 61, false},
};

TEST(Model, EachLayoutsChunksAgainstHandComputedNumbers) {
  for (const LayoutExpect& e : kLayouts) {
    SCOPED_TRACE(std::string(e.model) + " " + e.layout + " " + e.dtype);
    const Workload w = size_workload(load_model(e.model), req(8, 32768, e.dtype, e.layout));
    EXPECT_STREQ(kv_layout_name(w.layout), e.resolved);
    EXPECT_EQ(w.fragment_names, e.names);
    EXPECT_EQ(w.fragments, e.chunks);
    EXPECT_EQ(w.model.layers, e.layers);
    uint64_t layer = 0;
    for (uint64_t c : e.chunks) layer += c;
    EXPECT_EQ(w.blocks, 256u);  // 32768 / 128
    EXPECT_EQ(w.bytes_per_card, 256u * e.layers * layer);
    // ucm: an IO task per layer of a block holding that layer's chunks; the engines: an IO
    // task per block holding every layer's chunks, layer 0's first.
    const uint64_t tasks = e.task_per_layer ? 256u * e.layers : 256u;
    const uint64_t per_task = e.task_per_layer ? e.chunks.size() : e.layers * e.chunks.size();
    EXPECT_EQ(w.tasks_per_card, tasks);
    ASSERT_EQ(w.task_fragments.size(), per_task);
    for (size_t i = 0; i < per_task; ++i) EXPECT_EQ(w.task_fragments[i], e.chunks[i % e.chunks.size()]) << i;
    EXPECT_EQ(w.copies_per_card, 256u * e.layers * e.chunks.size());  // a copy per chunk of every block
  }
  // The numbers a user reads: Qwen3-32B vllm-flash moves 256 blocks x 128 chunks of 32 KiB
  // per card (32768 copies), flashinfer half as many copies of twice the size.
  const Workload flash = size_workload(load_model("Qwen3-32B"), req(8, 32768, "", "vllm-flash"));
  EXPECT_EQ(flash.copies_per_card, 256u * 64 * 2);
  EXPECT_EQ(task_label(flash).substr(0, 12), "32K,32K,32K,");
  EXPECT_EQ(size_workload(load_model("Qwen3-32B"), req(8, 32768, "", "vllm-flashinfer")).copies_per_card, 256u * 64);
}

TEST(Model, Fp8DsMlaIs656BytesPerTokenPerLayer) {
  for (uint64_t B : {1u, 64u, 128u}) {
    WorkloadRequest r = req(8, 4096, "fp8_ds_mla", "vllm-mla");
    r.block_tokens = B;
    const Workload w = size_workload(load_model("DeepSeek-V3.2"), r);
    EXPECT_EQ(w.dtype, "fp8_ds_mla");
    EXPECT_EQ(w.fragments[0], 656u * B) << B;  // 512 x 1 (fp8) + 4 x 4 (fp32 scales) + 64 x 2 (bf16 rope)
    EXPECT_EQ(w.fragments[1], 132u * B) << B;  // the indexer: 128 x 1 (fp8) + 1 x 4 (fp32 scale)
  }
  // Without --kv-dtype vLLM keeps V3.2 at auto = the config's bf16: 576 x 2 per token.
  const Workload def = size_workload(load_model("DeepSeek-V3.2"), req(8, 4096, "", "vllm-flash"));
  EXPECT_EQ(def.dtype, "bf16");
  EXPECT_EQ(def.fragments[0], 576u * 2 * 128);
  EXPECT_NE(layout_resolution_note(def).find("fp8_ds_mla only with --kv-dtype fp8"), std::string::npos)
      << layout_resolution_note(def);
  EXPECT_EQ(size_workload(load_model("DeepSeek-V3.2"), req(8, 4096, "auto", "vllm-flash")).dtype, "bf16");
}

TEST(Model, LayoutAndDtypeRefusals) {
  const ModelShape qwen = load_model("Qwen3-32B");
  EXPECT_EQ(message_of([&] { size_workload(qwen, req(8, 4096, "", "vllm-flsh")); }),
            "option --kv-layout got 'vllm-flsh': accepts ucm, vllm-flash, vllm-flashinfer, vllm-mla, sglang or "
            "sglang-mla (did you mean vllm-flash?)");
  EXPECT_EQ(message_of([&] { size_workload(qwen, req(8, 4096, "", "vllm-mla")); }),
            "option --kv-layout vllm-mla is the MLA cache; Qwen3-32B is GQA: use vllm-flash or vllm-flashinfer");
  EXPECT_EQ(message_of([&] { size_workload(qwen, req(8, 4096, "fp8_ds_mla", "vllm-flash")); }),
            "option --kv-dtype fp8_ds_mla is vLLM's DeepSeek-V3.2 cache format: it needs a DSA model and --kv-layout "
            "vllm-flash, vllm-flashinfer or vllm-mla (Qwen3-32B is GQA, --kv-layout vllm-flash)");
  EXPECT_EQ(message_of([&] { size_workload(load_model("DeepSeek-V3"), req(8, 4096, "fp8_ds_mla", "vllm-mla")); }),
            "option --kv-dtype fp8_ds_mla is vLLM's DeepSeek-V3.2 cache format: it needs a DSA model and --kv-layout "
            "vllm-flash, vllm-flashinfer or vllm-mla (DeepSeek-V3 is MLA, --kv-layout vllm-mla)");
  EXPECT_EQ(message_of([&] { size_workload(qwen, req(8, 4096, "bf61")); }),
            "option --kv-dtype got 'bf61': accepts auto, bf16, fp16, fp32, fp8, int8 or fp8_ds_mla (did you mean bf16?)");
  WorkloadRequest odd = req(8, 4096, "", "vllm-flash");
  odd.block_tokens = 100;
  EXPECT_EQ(message_of([&] { size_workload(qwen, odd); }),
            "option --kv-layout vllm-flash: --block-size 100 is not a multiple of 16 (vLLM's FlashAttention backend "
            "refuses it)");
  odd.kv_layout = "vllm-flashinfer";  // FlashInfer's shape has no such rule
  EXPECT_NO_THROW(size_workload(qwen, odd));
}

}  // namespace
