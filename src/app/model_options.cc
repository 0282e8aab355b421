#include "app/model_options.h"

#include "core/error.h"
#include "core/shell_word.h"
#include "core/units.h"
#include "app/output_options.h"

#include <utility>

namespace ds {

void add_model_options(CLI::App* app, ModelOptionText& t, ModelOptionsFor what) {
  const bool aio = what == ModelOptionsFor::kAio;
  app->add_option("--model", t.model,
                  aio ? "size the store from a model: a preset (--model list), a directory holding config.json, "
                        "or a JSON file; one file per block, --io-number = blocks per request"
                      : std::string("size one request's KV from a model: a preset (--model list), a directory holding "
                                    "config.json, or a JSON file; replaces ") +
                            (what == ModelOptionsFor::kCopy ? "--model-type, -s, -n, -f" : "-s, -n, -f, --block-layout"))
      ->type_name("NAME|PATH");
  t.tp_opt = app->add_option("--tp", t.tp, "with --model: tensor-parallel size (default 1)")->type_name("N");
  t.input_opt = app->add_option("--input-len", t.input_len,
                                std::string("with --model: prompt tokens whose KV is ") +
                                    (what == ModelOptionsFor::kOffload ? "offloaded" : "loaded") +
                                    " (default 4096; K = x1024)")
                    ->type_name("TOKENS");
  t.block_opt =
      app->add_option("--block-size", t.block_size, "with --model: tokens per KV block (default 128)")->type_name("TOKENS");
  t.dtype_opt = app->add_option("--kv-dtype", t.kv_dtype,
                                "with --model: auto|bf16|fp16|fp32|fp8|int8|fp8_ds_mla (default auto: the config's "
                                "torch_dtype/dtype, else bf16; fp8 on a DSA model in vLLM's or SGLang's MLA cache is "
                                "fp8_ds_mla, 656 B per token)")
                    ->type_name("DTYPE");
  if (!aio)
    t.layout_opt = app->add_option("--kv-layout", t.kv_layout,
                                   "with --model: the device's KV layout, ucm|vllm-flash|vllm-flashinfer|vllm-mla|"
                                   "sglang|sglang-mla (default ucm: an IO task per layer of a block; the others one "
                                   "per block of every layer's chunks; see docs/model.md)")
                       ->type_name("LAYOUT");
  if (aio)
    t.layerwise_opt =
        app->add_flag("--layerwise", t.layerwise, "with --model: one shard per layer in each block's file");
  t.dry_opt = app->add_flag("--dry-run", t.dry_run,
                            "with --model: print the sizing and the equivalent command line, touch no device or disk");
}

std::optional<Workload> parse_workload(const ModelOptionText& t) {
  if (t.model.empty()) {
    for (CLI::Option* o : {t.tp_opt, t.input_opt, t.block_opt, t.dtype_opt, t.layout_opt, t.layerwise_opt, t.dry_opt})
      if (o && o->count() > 0) throw UsageError("option " + o->get_name() + " needs --model NAME|PATH");
    return std::nullopt;
  }
  WorkloadRequest req;
  if (!t.tp.empty()) req.tp = static_cast<uint64_t>(parse_int("--tp", t.tp, 1, 65536));
  if (!t.input_len.empty()) req.input_len = parse_tokens("--input-len", t.input_len);
  if (!t.block_size.empty()) req.block_tokens = parse_tokens("--block-size", t.block_size);
  req.kv_dtype = t.kv_dtype;
  req.kv_layout = t.kv_layout;
  req.layerwise = t.layerwise;
  Workload w = size_workload(load_model(t.model), req);
  const std::string note = layout_resolution_note(w);
  if (!note.empty()) stderr_notes().note(note);
  return w;
}

std::string model_option_words(const ModelOptionText& t) {
  if (t.model.empty()) return "";
  std::string s = " --model " + shell_word(t.model) + " --tp " + shell_word(t.tp.empty() ? "1" : t.tp);
  const std::pair<const char*, const std::string*> given[] = {
      {"--input-len", &t.input_len}, {"--block-size", &t.block_size}, {"--kv-dtype", &t.kv_dtype},
      {"--kv-layout", &t.kv_layout}};
  for (const auto& g : given)
    if (!g.second->empty()) s += std::string(" ") + g.first + " " + shell_word(*g.second);
  return s;
}

void attach_workload(RunInfo& info, const Workload& w) {
  info.workload_text = workload_line(w);
  info.workload_json = workload_json(w);
}

}  // namespace ds
