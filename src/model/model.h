// Model-driven KV workloads: what one request's KV cache is, per card, for a model
// read from its config.json (or a built-in preset), a tensor-parallel size, a
// prompt length, a block size and a KV dtype. The sizing is the one UCM's users
// know: architecture from the config's fields (MLA: kv_lora_rank and
// qk_rope_head_dim; DSA: those and index_head_dim; else GQA from
// num_key_value_heads or num_attention_heads), per layer and block of B tokens
//   GQA  [K, V]              each max(1, kv_heads / tp) x head_dim x B x elem
//   MLA  [latent, rope]      kv_lora_rank x B x elem, qk_rope_head_dim x B x elem
//   DSA  [latent, rope, idx] MLA's and index_head_dim x B x elem
// and N = ceil(input_len / B) blocks per request. Every bad input is a UsageError
// (exit 2) naming what made it so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

enum class KvArch { kGqa, kMla, kDsa };
const char* arch_name(KvArch a);  // "GQA", "MLA", "DSA"

// What the sizing reads from a config.json.
struct ModelShape {
  std::string name;    // preset name, or the path it was read from
  std::string source;  // where the numbers come from
  KvArch arch = KvArch::kGqa;
  uint64_t layers = 0;           // num_hidden_layers
  uint64_t attention_heads = 0;  // num_attention_heads
  uint64_t kv_heads = 0;         // GQA: num_key_value_heads, else num_attention_heads
  bool kv_heads_from_attention = false;
  uint64_t head_dim = 0;         // GQA: head_dim, else hidden_size / num_attention_heads
  bool head_dim_derived = false;
  uint64_t hidden_size = 0;
  uint64_t kv_lora_rank = 0, qk_rope_head_dim = 0, index_head_dim = 0;  // MLA, DSA
  std::string config_dtype;      // torch_dtype or dtype as written; empty when absent
  bool used_text_config = false;
};

// Reads a config.json's text; `what` names it in errors (UsageError: malformed
// JSON, hybrid / sliding-window / linear-attention / Mamba / unknown models,
// naming the field).
ModelShape parse_model_config(const std::string& json_text, const std::string& what);

// A built-in preset (case-insensitive name), a directory holding config.json, or
// a JSON file. UsageError when it is none of them or cannot be read.
ModelShape load_model(const std::string& name_or_path);

struct Preset {
  const char* name;
  const char* source;  // the public config.json the numbers are from
  ModelShape shape;
};
const std::vector<Preset>& model_presets();
// `--model list`: one line per preset with its architecture, numbers and source.
std::string presets_text();

// --kv-layout: how a serving engine lays one block of KV out in device memory
// (docs/model.md cites each engine's source). ucm: UCM's layerwise blocks, an IO
// task per layer of a block; the others: an IO task per block made of every
// layer's chunks, each chunk kind its own region (the per-layer cache tensors
// with the request's blocks in slots 0..N-1; a block table permutes the slots).
enum class KvLayout { kUcm, kVllmFlash, kVllmFlashInfer, kVllmMla, kSglang, kSglangMla };
const char* kv_layout_name(KvLayout l);
// Every name --kv-layout takes, in the order help and errors list them.
const std::vector<std::string>& kv_layout_names();

struct WorkloadRequest {
  uint64_t tp = 1;             // --tp
  uint64_t input_len = 4096;   // --input-len, tokens
  uint64_t block_tokens = 128; // --block-size, tokens per block (SGLang: the page size)
  std::string kv_dtype;        // --kv-dtype; empty or auto: the config's, else bf16
  std::string kv_layout;       // --kv-layout; empty: ucm
  bool layerwise = false;      // --layerwise: the store keeps one shard per layer
};

// "4096", "32K" (x 1024). UsageError naming `option`.
uint64_t parse_tokens(const std::string& option, const std::string& text);

struct Workload {
  ModelShape model;
  WorkloadRequest req;
  std::string dtype;        // bf16, fp16, fp32, fp8, int8, fp8_ds_mla
  std::string dtype_from;   // "--kv-dtype", "config torch_dtype", "default"
  uint64_t elem_bytes = 0;
  KvLayout layout = KvLayout::kUcm;
  std::string layout_from;  // "default", "--kv-layout", "--kv-layout vllm-flash on an MLA model"
  std::string layout_shape; // the engine's cache tensor per layer, with the numbers
  uint64_t kv_heads_per_card = 0;                // GQA
  // One layer's chunks of one block in the layout (ucm: K, V / latent, rope, indexer;
  // vllm-flashinfer: KV; vllm-mla, sglang-mla: latent(, indexer)).
  std::vector<std::string> fragment_names;
  std::vector<std::string> fragment_formulas;    // how each was computed, with numbers
  std::vector<uint64_t> fragments;               // bytes per layer per block, per card
  uint64_t layer_block_bytes = 0;                // their sum
  uint64_t blocks = 0;                           // N = ceil(input_len / B)
  uint64_t tasks_per_block = 0;                  // IO tasks per block: ucm layers, else 1
  uint64_t tasks_per_card = 0;                   // N x tasks_per_block
  std::vector<uint64_t> task_fragments;          // one IO task's chunks, in order
  uint64_t copies_per_card = 0;                  // tasks x chunks per task: one copy each
  uint64_t bytes_per_card = 0;                   // N x layers x layer_block_bytes
  // The store (UCM's): one file per block, `shards_per_file` shards of `shard_bytes`.
  uint64_t shards_per_file = 0, shard_bytes = 0;
};

Workload size_workload(const ModelShape& model, const WorkloadRequest& req);

// "128K,16K,32K": one layer's fragments of one block.
std::string fragments_label(const Workload& w);
// One IO task's chunks as --block-layout takes them (ucm: fragments_label).
std::string task_label(const Workload& w);
// What the engines do with this model when the user chose neither --kv-layout nor
// --kv-dtype (the dry run's row), e.g. "vLLM: vllm-flash at bf16; SGLang: sglang at bf16".
std::string engine_defaults_text(const Workload& w);
// A note when --kv-layout named an engine's GQA layout for an MLA/DSA model and the
// engine's MLA cache was taken instead; "" otherwise.
std::string layout_resolution_note(const Workload& w);
// The line before the first table: "[[ workload ]] <model>: <ARCH>, ...".
std::string workload_line(const Workload& w);
// --dry-run: every field and formula (with `store`, also how the store's files
// hold it), then the equivalent explicit command line.
std::string dry_run_text(const Workload& w, const std::string& equivalent_command, bool store);
// The JSON "workload" object, serialised.
std::string workload_json(const Workload& w);

}  // namespace ds
