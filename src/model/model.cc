#include "model/model.h"
#include "model/kv_layout.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"

namespace ds {

namespace {

using json = nlohmann::json;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A positive integer field, or 0 when absent or null. UsageError when it is there
// but not a positive integer.
uint64_t field(const json& cfg, const char* key, const std::string& what) {
  if (!cfg.contains(key) || cfg[key].is_null()) return 0;
  const json& v = cfg[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    throw UsageError(what + ": field " + key + " is " + v.dump() + ", not a positive integer");
  return v.get<uint64_t>();
}

// Refuses what one uniform block per layer cannot describe, naming the field.
void refuse_unsupported(const json& cfg, const std::string& what) {
  auto refuse = [&](const std::string& field_text, const std::string& kind) {
    throw UsageError(what + ": " + kind + " (" + field_text +
                     "): not supported; the sizing knows full-attention GQA, MLA and DSA models only");
  };
  const std::string model_type =
      cfg.contains("model_type") && cfg["model_type"].is_string() ? cfg["model_type"].get<std::string>() : "";
  if (lower(model_type).find("mamba") != std::string::npos)
    refuse("model_type \"" + model_type + "\"", "a Mamba (state-space) model");
  for (const char* k : {"ssm_state_size", "mamba_d_state", "mamba_expand", "state_size", "ssm_cfg"})
    if (cfg.contains(k)) refuse(std::string("field ") + k, "a Mamba (state-space) model");
  for (const char* k : {"layers_block_type", "hybrid_override_pattern", "attn_layer_indices", "attn_layer_period"})
    if (cfg.contains(k)) refuse(std::string("field ") + k, "a hybrid attention/state-space model");
  for (const char* k : {"linear_attn_config", "full_attention_interval", "linear_conv_kernel_dim", "attn_type_list",
                        "full_attn_idxs"})
    if (cfg.contains(k)) refuse(std::string("field ") + k, "a linear-attention mix");
  if (cfg.contains("layer_types") && cfg["layer_types"].is_array())
    for (const json& t : cfg["layer_types"])
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        refuse("field layer_types holds " + t.dump(), "a mix of attention kinds across layers");
  for (const char* k : {"sliding_window_pattern", "interleaved_sliding_window"})
    if (cfg.contains(k) && !cfg[k].is_null()) refuse(std::string("field ") + k, "a sliding-window mix");
  const bool use_sw = cfg.contains("use_sliding_window") && cfg["use_sliding_window"].is_boolean();
  if (use_sw && cfg["use_sliding_window"].get<bool>()) refuse("field use_sliding_window true", "sliding-window attention");
  if (!use_sw && cfg.contains("sliding_window") && cfg["sliding_window"].is_number() &&
      cfg["sliding_window"].get<double>() > 0)
    refuse("field sliding_window " + cfg["sliding_window"].dump(), "sliding-window attention");
}

std::string read_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(option + ": cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct DtypeInfo {
  const char* name;
  uint64_t bytes;
};

// bf16|fp16|fp32|fp8|int8, or the names configs use (bfloat16, float16, ...).
bool dtype_of(const std::string& text, DtypeInfo* out) {
  static const struct {
    const char* alias;
    DtypeInfo info;
  } table[] = {{"bf16", {"bf16", 2}},    {"bfloat16", {"bf16", 2}},      {"fp16", {"fp16", 2}},
               {"float16", {"fp16", 2}}, {"half", {"fp16", 2}},          {"fp32", {"fp32", 4}},
               {"float32", {"fp32", 4}}, {"float", {"fp32", 4}},         {"fp8", {"fp8", 1}},
               {"float8_e4m3fn", {"fp8", 1}}, {"float8_e5m2", {"fp8", 1}}, {"int8", {"int8", 1}}};
  const std::string t = lower(text);
  for (const auto& e : table)
    if (t == e.alias) {
      *out = e.info;
      return true;
    }
  return false;
}

uint64_t mul(uint64_t a, uint64_t b) { return checked_mul(a, b, "the KV sizing"); }

std::string num(uint64_t v) { return std::to_string(v); }

uint64_t align4096(uint64_t v) { return round_up(v, 4096); }

}  // namespace

const char* arch_name(KvArch a) {
  switch (a) {
    case KvArch::kGqa: return "GQA";
    case KvArch::kMla: return "MLA";
    case KvArch::kDsa: return "DSA";
  }
  return "?";
}

ModelShape parse_model_config(const std::string& json_text, const std::string& what) {
  json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) throw UsageError(what + ": not valid JSON");
  if (!doc.is_object()) throw UsageError(what + ": not a JSON object");
  ModelShape m;
  m.name = what;
  m.source = what;
  // Multimodal configs keep the language model's fields in text_config.
  const json* cfg = &doc;
  if (doc.contains("text_config") && doc["text_config"].is_object()) {
    cfg = &doc["text_config"];
    m.used_text_config = true;
  }
  refuse_unsupported(*cfg, what + (m.used_text_config ? " (text_config)" : ""));
  for (const json* c : std::initializer_list<const json*>{cfg, &doc})
    for (const char* k : {"torch_dtype", "dtype"})
      if (m.config_dtype.empty() && c->contains(k) && (*c)[k].is_string()) m.config_dtype = (*c)[k].get<std::string>();
  m.layers = field(*cfg, "num_hidden_layers", what);
  if (!m.layers) throw UsageError(what + ": unknown architecture: no num_hidden_layers");
  m.attention_heads = field(*cfg, "num_attention_heads", what);
  m.hidden_size = field(*cfg, "hidden_size", what);
  m.kv_lora_rank = field(*cfg, "kv_lora_rank", what);
  m.qk_rope_head_dim = field(*cfg, "qk_rope_head_dim", what);
  m.index_head_dim = field(*cfg, "index_head_dim", what);
  if (m.kv_lora_rank && m.qk_rope_head_dim) {
    m.arch = m.index_head_dim ? KvArch::kDsa : KvArch::kMla;
    return m;
  }
  m.index_head_dim = 0;
  m.arch = KvArch::kGqa;
  m.kv_heads = field(*cfg, "num_key_value_heads", what);
  if (!m.kv_heads) {
    m.kv_heads = m.attention_heads;
    m.kv_heads_from_attention = true;
  }
  if (!m.kv_heads)
    throw UsageError(what + ": unknown architecture: no kv_lora_rank/qk_rope_head_dim (MLA) and no "
                            "num_key_value_heads or num_attention_heads (GQA)");
  m.head_dim = field(*cfg, "head_dim", what);
  if (!m.head_dim) {
    if (!m.hidden_size || !m.attention_heads)
      throw UsageError(what + ": no head_dim, and no hidden_size and num_attention_heads to derive it from");
    if (m.hidden_size % m.attention_heads)
      throw UsageError(what + ": no head_dim, and hidden_size " + num(m.hidden_size) +
                       " is not a multiple of num_attention_heads " + num(m.attention_heads));
    m.head_dim = m.hidden_size / m.attention_heads;
    m.head_dim_derived = true;
  }
  return m;
}

const std::vector<Preset>& model_presets() {
  // Numbers from each model's public config.json on Hugging Face (the fields the
  // sizing reads; tests/data/models/ keeps those fields of each file, and
  // test_model checks every preset against its file).
  static const std::vector<Preset> presets = [] {
    auto gqa = [](uint64_t layers, uint64_t heads, uint64_t kv, uint64_t head_dim, bool derived, uint64_t hidden) {
      ModelShape m;
      m.arch = KvArch::kGqa;
      m.layers = layers;
      m.attention_heads = heads;
      m.kv_heads = kv;
      m.head_dim = head_dim;
      m.head_dim_derived = derived;
      m.hidden_size = hidden;
      m.config_dtype = "bfloat16";
      return m;
    };
    auto mla = [](uint64_t layers, uint64_t heads, uint64_t hidden, uint64_t index_head_dim) {
      ModelShape m;
      m.arch = index_head_dim ? KvArch::kDsa : KvArch::kMla;
      m.layers = layers;
      m.attention_heads = heads;
      m.hidden_size = hidden;
      m.kv_lora_rank = 512;
      m.qk_rope_head_dim = 64;
      m.index_head_dim = index_head_dim;
      m.config_dtype = "bfloat16";
      return m;
    };
    std::vector<Preset> p = {
        // huggingface.co/Qwen/Qwen3-32B config.json: num_hidden_layers 64, num_attention_heads 64,
        // num_key_value_heads 8, head_dim 128, hidden_size 5120, torch_dtype bfloat16
        {"Qwen3-32B", "huggingface.co/Qwen/Qwen3-32B config.json", gqa(64, 64, 8, 128, false, 5120)},
        // huggingface.co/Qwen/Qwen3-235B-A22B config.json: 94 layers, 64 heads, 4 kv heads,
        // head_dim 128, hidden_size 4096, torch_dtype bfloat16
        {"Qwen3-235B-A22B", "huggingface.co/Qwen/Qwen3-235B-A22B config.json", gqa(94, 64, 4, 128, false, 4096)},
        // huggingface.co/meta-llama/Llama-3.1-70B config.json: 80 layers, 64 heads, 8 kv heads,
        // hidden_size 8192, no head_dim (8192 / 64 = 128), torch_dtype bfloat16
        {"Llama-3.1-70B", "huggingface.co/meta-llama/Llama-3.1-70B config.json", gqa(80, 64, 8, 128, true, 8192)},
        // huggingface.co/deepseek-ai/DeepSeek-V3 config.json: 61 layers, 128 heads, hidden_size 7168,
        // kv_lora_rank 512, qk_rope_head_dim 64, torch_dtype bfloat16
        {"DeepSeek-V3", "huggingface.co/deepseek-ai/DeepSeek-V3 config.json", mla(61, 128, 7168, 0)},
        // huggingface.co/deepseek-ai/DeepSeek-V3.2-Exp config.json: as V3, plus index_head_dim 128
        // (index_n_heads 64, index_topk 2048)
        {"DeepSeek-V3.2", "huggingface.co/deepseek-ai/DeepSeek-V3.2-Exp config.json", mla(61, 128, 7168, 128)},
        // huggingface.co/zai-org/GLM-5 config.json (glm_moe_dsa): 78 layers, 64 heads, hidden_size 6144,
        // kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128, dtype bfloat16
        {"GLM-5", "huggingface.co/zai-org/GLM-5 config.json", mla(78, 64, 6144, 128)},
    };
    for (auto& e : p) {
      e.shape.name = e.name;
      e.shape.source = e.source;
    }
    return p;
  }();
  return presets;
}

std::string presets_text() {
  std::string s = "Built-in models (--model NAME; or a directory holding config.json, or a JSON file):\n";
  for (const Preset& p : model_presets()) {
    const ModelShape& m = p.shape;
    char line[512];
    if (m.arch == KvArch::kGqa)
      std::snprintf(line, sizeof line, "  %-16s GQA  %3llu layers, %llu kv heads, head_dim %llu, %s   (%s)\n", p.name,
                    static_cast<unsigned long long>(m.layers), static_cast<unsigned long long>(m.kv_heads),
                    static_cast<unsigned long long>(m.head_dim), m.config_dtype.c_str(), p.source);
    else
      std::snprintf(line, sizeof line,
                    "  %-16s %s  %3llu layers, kv_lora_rank %llu, qk_rope_head_dim %llu%s, %s   (%s)\n", p.name,
                    arch_name(m.arch), static_cast<unsigned long long>(m.layers),
                    static_cast<unsigned long long>(m.kv_lora_rank),
                    static_cast<unsigned long long>(m.qk_rope_head_dim),
                    m.index_head_dim ? (", index_head_dim " + num(m.index_head_dim)).c_str() : "",
                    m.config_dtype.c_str(), p.source);
    s += line;
  }
  return s;
}

ModelShape load_model(const std::string& name_or_path) {
  for (const Preset& p : model_presets())
    if (lower(p.name) == lower(name_or_path)) return p.shape;
  struct stat st;
  if (stat(name_or_path.c_str(), &st) != 0) {
    std::string names;
    for (const Preset& p : model_presets()) names += std::string(names.empty() ? "" : ", ") + p.name;
    throw UsageError("option --model got '" + name_or_path +
                     "': no such preset, directory or file (presets: " + names + "; --model list)");
  }
  std::string path = name_or_path;
  if (S_ISDIR(st.st_mode)) {
    path += "/config.json";
    if (stat(path.c_str(), &st) != 0) throw UsageError("option --model: " + path + " does not exist");
  }
  ModelShape m = parse_model_config(read_file(path, "option --model"), path);
  m.name = name_or_path;
  return m;
}

uint64_t parse_tokens(const std::string& option, const std::string& text) {
  std::string t = text;
  uint64_t mul_by = 1;
  if (!t.empty() && (t.back() == 'K' || t.back() == 'k')) {
    mul_by = 1024;
    t.pop_back();
  }
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) || t.size() > 15)
    throw UsageError("option " + option + " got '" + text + "': expects a number of tokens (a K suffix = x1024)");
  const uint64_t v = std::stoull(t) * mul_by;
  if (v == 0) throw UsageError("option " + option + " must be at least 1");
  return v;
}

namespace {

// --kv-dtype (auto or empty: the config's, else bf16) into w.dtype, elem_bytes and
// dtype_from. fp8_ds_mla, and fp8 on a DSA model in an engine's MLA cache, is vLLM's
// 656-byte record per token (SGLang's DSA pool stores fp8 the same way).
void resolve_dtype(Workload& w) {
  const ModelShape& m = w.model;
  const std::string asked = lower(w.req.kv_dtype);
  DtypeInfo dt{"bf16", 2};
  if (asked == "fp8_ds_mla") {
    if (m.arch != KvArch::kDsa || !engine_mla_layout(w.layout))
      throw UsageError("option --kv-dtype fp8_ds_mla is vLLM's DeepSeek-V3.2 cache format: it needs a DSA model and "
                       "--kv-layout vllm-flash, vllm-flashinfer or vllm-mla (" + m.name + " is " + arch_name(m.arch) +
                       ", --kv-layout " + kv_layout_name(w.layout) + ")");
    dt = {"fp8_ds_mla", 1};
    w.dtype_from = "--kv-dtype";
  } else if (!asked.empty() && asked != "auto") {
    if (!dtype_of(asked, &dt) || asked != dt.name)
      throw UsageError("option --kv-dtype got '" + w.req.kv_dtype + "': accepts auto, bf16, fp16, fp32, fp8, int8 or "
                       "fp8_ds_mla" + did_you_mean(asked, {"auto", "bf16", "fp16", "fp32", "fp8", "int8", "fp8_ds_mla"}));
    w.dtype_from = "--kv-dtype";
    if (dt.bytes == 1 && std::string(dt.name) == "fp8" && m.arch == KvArch::kDsa && engine_mla_layout(w.layout)) {
      dt = {"fp8_ds_mla", 1};
      w.dtype_from = w.layout == KvLayout::kVllmMla ? "--kv-dtype fp8: vLLM stores DeepSeek-V3.2's fp8 KV as fp8_ds_mla"
                                                    : "--kv-dtype fp8: SGLang's DSA pool stores fp8 as the same 656 B record";
    }
  } else if (!m.config_dtype.empty()) {
    if (!dtype_of(m.config_dtype, &dt))
      throw UsageError(m.name + ": unknown dtype '" + m.config_dtype + "' in the config; give --kv-dtype");
    w.dtype_from = "config " + m.config_dtype;
  } else {
    w.dtype_from = "default";
  }
  w.dtype = dt.name;
  w.elem_bytes = dt.bytes;
}

// UCM's layerwise block: one layer's fragments, each its own kind.
void ucm_layer_chunks(Workload& w) {
  const ModelShape& m = w.model;
  const WorkloadRequest& req = w.req;
  const uint64_t B = req.block_tokens, e = w.elem_bytes;
  const std::string tail = " x " + num(B) + " tokens x " + num(e) + " B";
  if (m.arch == KvArch::kGqa) {
    w.kv_heads_per_card = std::max<uint64_t>(1, m.kv_heads / req.tp);
    const uint64_t one = mul(mul(mul(w.kv_heads_per_card, m.head_dim), B), e);
    const std::string f = "max(1, " + num(m.kv_heads) + " kv heads / TP " + num(req.tp) + ") = " +
                          num(w.kv_heads_per_card) + " x head_dim " + num(m.head_dim) + tail;
    w.fragment_names = {"K", "V"};
    w.fragments = {one, one};
    w.fragment_formulas = {f, f};
  } else {
    w.fragment_names = {"latent", "rope"};
    w.fragments = {mul(mul(m.kv_lora_rank, B), e), mul(mul(m.qk_rope_head_dim, B), e)};
    w.fragment_formulas = {"kv_lora_rank " + num(m.kv_lora_rank) + tail, "qk_rope_head_dim " + num(m.qk_rope_head_dim) + tail};
    if (m.arch == KvArch::kDsa) {
      w.fragment_names.push_back("indexer");
      w.fragments.push_back(mul(mul(m.index_head_dim, B), e));
      w.fragment_formulas.push_back("index_head_dim " + num(m.index_head_dim) + tail);
    }
  }
  w.layout_shape = "UCM's layerwise blocks: an IO task per layer of a block, each fragment kind its own region";
}

}  // namespace

Workload size_workload(const ModelShape& m, const WorkloadRequest& req) {
  Workload w;
  w.model = m;
  w.req = req;
  w.layout = resolve_kv_layout(m, req.kv_layout, req.block_tokens, &w.layout_from);
  resolve_dtype(w);
  if (w.layout == KvLayout::kUcm)
    ucm_layer_chunks(w);
  else
    engine_layer_chunks(w);
  const uint64_t B = req.block_tokens;
  for (uint64_t f : w.fragments) w.layer_block_bytes += f;
  w.blocks = (req.input_len + B - 1) / B;
  layout_tasks(w);
  w.bytes_per_card = mul(mul(w.blocks, m.layers), w.layer_block_bytes);
  if (req.layerwise) {
    w.shards_per_file = m.layers;
    w.shard_bytes = align4096(w.layer_block_bytes);
  } else {
    w.shards_per_file = 1;
    w.shard_bytes = align4096(mul(m.layers, w.layer_block_bytes));
  }
  return w;
}

namespace {

std::string bytes_label(const std::vector<uint64_t>& sizes) {
  std::string s;
  for (uint64_t f : sizes) {
    std::string one = f % 1024 == 0 ? num(f / 1024) + "K" : num(f);
    if (f % (1024 * 1024) == 0) one = num(f / (1024 * 1024)) + "M";
    s += (s.empty() ? "" : ",") + one;
  }
  return s;
}

}  // namespace

std::string fragments_label(const Workload& w) { return bytes_label(w.fragments); }

std::string task_label(const Workload& w) { return bytes_label(w.task_fragments); }

std::string workload_line(const Workload& w) {
  std::string tasks = num(w.tasks_per_card) + " tasks of " + fragments_label(w);
  if (w.layout != KvLayout::kUcm)
    tasks = num(w.tasks_per_card) + " tasks (blocks) of " + num(w.model.layers) + "x[" + fragments_label(w) + "]";
  return "[[ workload ]] " + w.model.name + ": " + arch_name(w.model.arch) + ", " + num(w.model.layers) +
         " layers, " + w.dtype + ", TP " + num(w.req.tp) + ", " + num(w.req.input_len) + " tokens = " +
         num(w.blocks) + " blocks of " + num(w.req.block_tokens) + "; " +
         (w.layout == KvLayout::kUcm ? std::string() : std::string(kv_layout_name(w.layout)) + ": ") + "per card " +
         tasks + " = " + num(w.bytes_per_card) + " bytes (" + format_bytes(w.bytes_per_card) + ")";
}

namespace {

// The dry run's layout rows: the layout, one block's chunks (layer 0's, then the
// rest collapsed: every layer is the same), the copies per request.
void layout_rows(const Workload& w, const std::function<void(const std::string&, const std::string&)>& row) {
  const ModelShape& m = w.model;
  row("kv layout", std::string(kv_layout_name(w.layout)) + " (" + w.layout_from + "): " + w.layout_shape);
  const uint64_t per_block = m.layers * w.fragments.size();
  row("chunks per block", num(per_block) + " = " + num(m.layers) + " layers x " + num(w.fragments.size()) + ", " +
                              num(m.layers * w.layer_block_bytes) + " B, each its own copy:");
  for (size_t i = 0; i < w.fragments.size(); ++i)
    row("  layer 0 " + w.fragment_names[i], num(w.fragments[i]));
  if (m.layers > 2)
    row("  layers 1.." + num(m.layers - 1), "the same, " + num(per_block - w.fragments.size()) + " chunks");
  else if (m.layers == 2)
    for (size_t i = 0; i < w.fragments.size(); ++i) row("  layer 1 " + w.fragment_names[i], num(w.fragments[i]));
  row("tasks per card", w.layout == KvLayout::kUcm ? "an IO task per layer of a block: N x layers = " +
                                                         num(w.blocks) + " x " + num(m.layers) + " = " +
                                                         num(w.tasks_per_card)
                                                   : "an IO task per block: N = " + num(w.tasks_per_card));
  row("copies per request", "N x chunks per block = " + num(w.blocks) + " x " + num(per_block) + " = " +
                                num(w.copies_per_card) + " per card");
  if (w.layout_from == "default" && w.dtype_from.rfind("--kv-dtype", 0) != 0)
    row("engines' defaults", engine_defaults_text(w));
}

}  // namespace

std::string dry_run_text(const Workload& w, const std::string& equivalent_command, bool store) {
  const ModelShape& m = w.model;
  std::string s = workload_line(w) + "\n";
  auto row = [&](const std::string& k, const std::string& v) { s += "  " + k + std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') + v + "\n"; };
  row("model", m.name + " (" + m.source + (m.used_text_config ? ", text_config" : "") + ")");
  std::string why = m.arch == KvArch::kGqa ? "no kv_lora_rank/qk_rope_head_dim" : "kv_lora_rank and qk_rope_head_dim";
  if (m.arch == KvArch::kDsa) why += " and index_head_dim";
  row("architecture", std::string(arch_name(m.arch)) + " (" + why + ")");
  row("layers", num(m.layers) + " (num_hidden_layers)");
  if (m.arch == KvArch::kGqa) {
    row("kv heads", num(m.kv_heads) + (m.kv_heads_from_attention ? " (num_attention_heads)" : " (num_key_value_heads)"));
    row("head_dim", num(m.head_dim) + (m.head_dim_derived ? " (hidden_size " + num(m.hidden_size) + " / num_attention_heads " + num(m.attention_heads) + ")" : " (head_dim)"));
    row("kv heads per card", "max(1, " + num(m.kv_heads) + " / TP " + num(w.req.tp) + ") = " + num(w.kv_heads_per_card));
  } else {
    row("kv_lora_rank", num(m.kv_lora_rank));
    row("qk_rope_head_dim", num(m.qk_rope_head_dim));
    if (m.arch == KvArch::kDsa) row("index_head_dim", num(m.index_head_dim));
    row("TP " + num(w.req.tp), "the latent is replicated on every card: the same bytes per card");
  }
  row("kv dtype", (w.dtype == "fp8_ds_mla" ? std::string("fp8_ds_mla = 656 B per token for the latent")
                                           : w.dtype + " = " + num(w.elem_bytes) + " B") +
                      " (" + w.dtype_from + ")");
  row("block", num(w.req.block_tokens) + " tokens");
  for (size_t i = 0; i < w.fragments.size(); ++i)
    row(w.fragment_names[i] + " per layer/block", w.fragment_formulas[i] + " = " + num(w.fragments[i]) + " B");
  row("per layer/block", num(w.layer_block_bytes) + " B (" + fragments_label(w) + ")");
  row("blocks N", "ceil(" + num(w.req.input_len) + " / " + num(w.req.block_tokens) + ") = " + num(w.blocks));
  layout_rows(w, row);
  row("bytes per card", "N x layers x per layer/block = " + num(w.bytes_per_card) + " B (" + format_bytes(w.bytes_per_card) + ")");
  if (store) {
    row("store files", "one per block: N = " + num(w.blocks));
    if (w.req.layerwise)
      row("shards per file", num(w.shards_per_file) + " (--layerwise: one per layer) of align4096(" +
                                 num(w.layer_block_bytes) + ") = " + num(w.shard_bytes) + " B");
    else
      row("shards per file", "1 of align4096(layers x per layer/block = " + num(m.layers * w.layer_block_bytes) +
                                 ") = " + num(w.shard_bytes) + " B");
    row("bytes per epoch", num(w.blocks * w.shards_per_file * w.shard_bytes) + " B");
  }
  s += "equivalent: " + equivalent_command + "\n";
  return s;
}

std::string workload_json(const Workload& w) {
  const ModelShape& m = w.model;
  json j;
  j["model"] = m.name;
  j["source"] = m.source;
  j["architecture"] = arch_name(m.arch);
  j["layers"] = m.layers;
  j["tp"] = w.req.tp;
  j["input_len"] = w.req.input_len;
  j["block_tokens"] = w.req.block_tokens;
  j["kv_dtype"] = w.dtype;
  j["elem_bytes"] = w.elem_bytes;
  if (m.arch == KvArch::kGqa) {
    j["kv_heads"] = m.kv_heads;
    j["kv_heads_per_card"] = w.kv_heads_per_card;
    j["head_dim"] = m.head_dim;
  } else {
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    if (m.arch == KvArch::kDsa) j["index_head_dim"] = m.index_head_dim;
  }
  j["fragments"] = json::array();
  for (size_t i = 0; i < w.fragments.size(); ++i)
    j["fragments"].push_back({{"name", w.fragment_names[i]}, {"bytes", w.fragments[i]}, {"formula", w.fragment_formulas[i]}});
  j["layout"] = fragments_label(w);
  j["kv_layout"] = kv_layout_name(w.layout);
  j["kv_layout_shape"] = w.layout_shape;
  j["tasks_per_block"] = w.tasks_per_block;
  j["chunks_per_block"] = w.model.layers * w.fragments.size();
  j["copies_per_card"] = w.copies_per_card;
  j["engine_defaults"] = engine_defaults_text(w);
  j["layer_block_bytes"] = w.layer_block_bytes;
  j["blocks"] = w.blocks;
  j["tasks_per_card"] = w.tasks_per_card;
  j["bytes_per_card"] = w.bytes_per_card;
  j["layerwise"] = w.req.layerwise;
  j["shards_per_file"] = w.shards_per_file;
  j["shard_bytes"] = w.shard_bytes;
  return j.dump();
}

}  // namespace ds
