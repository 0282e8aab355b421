// --model end to end on sim: quick mode and copy size one request's KV per card
// from a model (GQA and DSA, CE and direct path, --validate), say it before and
// after each table, --dry-run touches nothing, and bad input is exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

struct ModelRun {
  const char* model;
  const char* sdma;
  const char* name;
  const char* method;
  uint64_t block_bytes;  // one layer's block, per card
  uint64_t layers;
  const char* layout;
  uint64_t fragments;
};

// TP 2, 256 tokens = 2 blocks of 128. Qwen3-32B: 8 / 2 = 4 kv heads x 128 x 128 x 2 = 128K per K and V.
// DeepSeek-V3.2: 512, 64, 128 x 128 x 2 = 128K, 16K, 32K (the latent replicated: one shared source).
const ModelRun kRuns[] = {
    {"Qwen3-32B", "false", "all_host_to_all_device_ce_multi_stream", "CE-MS-FORK", 262144, 64, "128K,128K", 2},
    {"Qwen3-32B", "true", "all_host_to_all_device_ffts_direct_h2d", "SDMA-FORK", 262144, 64, "128K,128K", 2},
    {"DeepSeek-V3.2", "false", "one_share_host_to_all_device_ce_multi_stream", "CE-MS-FORK", 180224, 61,
     "128K,16K,32K", 3},
    {"DeepSeek-V3.2", "true", "one_share_host_to_all_device_ffts_direct_h2d", "SDMA-FORK", 180224, 61,
     "128K,16K,32K", 3},
};

TEST(ModelE2E, QuickModeLoadsOneRequestPerCard) {
  for (const ModelRun& m : kRuns) {
    // -d defaults to --tp (2).
    JsonRun r = run_json({"--backend", "sim", "--model", m.model, "--tp", "2", "--input-len", "256", "--iodirect",
                          "false", "--sdma", m.sdma, "-i", "2", "--validate"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(m.name);
    EXPECT_EQ(res["validated"], true) << m.name;
    EXPECT_EQ(res["method"], m.method) << m.name;
    EXPECT_EQ(res["devices"], 2) << m.name;
    EXPECT_EQ(res["block_bytes"], m.block_bytes) << m.name;
    EXPECT_EQ(res["count"], 2 * 2 * m.layers) << m.name;  // d x N x layers
    EXPECT_EQ(res["copies_per_iteration"], 2 * 2 * m.layers * m.fragments) << m.name;
    EXPECT_EQ(res["layout"], m.layout) << m.name;
    EXPECT_TRUE(res["kv_load_ms"]["per_card"].is_number()) << res.dump();
    EXPECT_EQ(res["kv_load_ms"]["cards"], 2);
    const json& w = r.doc["workload"];
    EXPECT_EQ(w["model"], m.model);
    EXPECT_EQ(w["blocks"], 2);
    EXPECT_EQ(w["tasks_per_card"], 2 * m.layers);
    EXPECT_EQ(w["bytes_per_card"], 2 * m.layers * m.block_bytes);
    EXPECT_EQ(w["layout"], m.layout);
  }
}

TEST(ModelE2E, TextSaysTheWorkloadAndTheLoadPerRequest) {
  RunResult r = run_tool({"--backend", "sim", "--model", "Qwen3-32B", "--tp", "2", "--input-len", "256",
                          "--iodirect", "true", "--sdma", "false", "-i", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("[[ workload ]] Qwen3-32B: GQA, 64 layers, bf16, TP 2, 256 tokens = 2 blocks of 128; "
                        "per card 128 tasks of 128K,128K = 33554432 bytes (32.00 MiB)\n[[ "
                        "all_odirect_host_to_all_device_ce_multi_stream ]] ",
                        0),
            0u)
      << r.out;
  const size_t wall = r.out.find("\n  Wall: ");
  // The copy's path, so its figure is not read as the disk-to-device load (load --model's).
  const size_t kv = r.out.find("\n  KV load per request (host memory -> device): ");
  ASSERT_NE(kv, std::string::npos) << r.out;
  EXPECT_LT(wall, kv) << "the KV line follows the Wall line";
  // One line, avg and P50 of each (the spread notes say to compare P50s); the P50s are
  // the row's Copy P50 and the Wall line's GroupWall P50, in ms.
  const std::string line = r.out.substr(kv + 1, r.out.find('\n', kv + 1) - kv - 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, std::regex("  KV load per request \\(host memory -> device\\): ([0-9.]+) ms per card, "
                                                   "2 cards at once \\(Copy avg; P50 ([0-9.]+) ms\\); ([0-9.]+) ms end "
                                                   "to end \\(GroupWall avg; P50 ([0-9.]+) ms\\)")))
      << line;
  std::smatch w;
  const std::string wall_line = r.out.substr(wall + 1, r.out.find('\n', wall + 1) - wall - 1);
  ASSERT_TRUE(std::regex_search(wall_line, w, std::regex("GroupWall\\(us\\)-\\(Min/Max/Avg/P50/P90\\)=[0-9]+ / [0-9]+ / "
                                                         "([0-9]+) / ([0-9]+) / ")))
      << wall_line;
  EXPECT_NEAR(std::stod(m[3]) * 1000, std::stod(w[1]), 1.0) << line << "\n" << wall_line;
  EXPECT_NEAR(std::stod(m[4]) * 1000, std::stod(w[2]), 1.0) << line << "\n" << wall_line;
  EXPECT_LE(std::stod(m[2]), std::stod(m[4])) << "a card's Copy P50 within the request's GroupWall P50: " << line;
}

TEST(ModelE2E, CopyCaseWithModelAndAModelFile) {
  // A config file as the model: GLM-5 DSA, 128 tokens = 1 block, 78 tasks on the one card.
  JsonRun r = run_json({"copy", "--backend", "sim", "-t", "host_to_device_ce", "--model",
                        std::string(DS_MODEL_DATA) + "/GLM-5/config.json", "--input-len", "128", "-i", "2",
                        "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = expect_validated_result(r, "host_to_device_ce", "sim::host::0", "sim::device::0", "CE", 180224, 78);
  EXPECT_EQ(res["copies_per_iteration"], 78 * 3);
  EXPECT_EQ(r.doc["workload"]["architecture"], "DSA");
}

TEST(ModelE2E, DryRunTouchesNoDevice) {
  // A backend that cannot load: anything that touched it would fail.
  RunResult r = run_tool({"--backend", "cuda", "--model", "Qwen3-32B", "--tp", "8", "--input-len", "32K", "--iodirect",
                          "false", "--sdma", "true", "--dry-run"},
                         {{"DEV_SANDBOX_CUDA_LIB", "/nonexistent/libcuda.so.1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[[ workload ]] Qwen3-32B: GQA, 64 layers, bf16, TP 8, 32768 tokens = 256 blocks of 128; "
                       "per card 16384 tasks of 32K,32K = 1073741824 bytes"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("max(1, 8 kv heads / TP 8) = 1 x head_dim 128 x 128 tokens x 2 B = 32768 B"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("equivalent: dev-sandbox --backend cuda copy -t all_host_to_all_device_ffts_direct_h2d "
                       "--block-layout 32K,32K -n 16384 -d 8"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(without_run_lines(r.err), "");
}

// --kv-layout on copy: each layout really changes the copies (Count, copies per
// iteration, chunk sizes), every chunk validated at its place; TP 8, 256 tokens = 2 blocks.
TEST(ModelE2E, KvLayoutsChangeTheCopies) {
  struct L {
    const char* model;
    const char* layout;
    const char* dtype;
    uint64_t block_bytes;  // one IO task
    uint64_t count;        // IO tasks on the one card
    uint64_t copies;
    const char* label;
  } layouts[] = {
      // Qwen3-32B: 1 kv head x 128 x 128 tokens x 2 B = 32768 per K and V; 64 layers.
      {"Qwen3-32B", "ucm", "", 2 * 32768, 2 * 64, 2 * 64 * 2, "32K,32K"},
      {"Qwen3-32B", "vllm-flash", "", 64 * 2 * 32768, 2, 2 * 64 * 2, "128x[32K]"},
      {"Qwen3-32B", "vllm-flashinfer", "", 64 * 65536, 2, 2 * 64, "64x[64K]"},
      {"Qwen3-32B", "sglang", "fp8", 64 * 2 * 16384, 2, 2 * 64 * 2, "128x[16K]"},
      // DeepSeek-V3.2, 61 layers: ucm latent 128K, rope 16K, indexer 32K; vLLM's cache a
      // (512 + 64) x 128 x 2 = 147456 latent and a (128 + 4) x 128 = 16896 indexer chunk.
      {"DeepSeek-V3.2", "ucm", "", 131072 + 16384 + 32768, 2 * 61, 2 * 61 * 3, "128K,16K,32K"},
      {"DeepSeek-V3.2", "vllm-flash", "", 61 * (147456 + 16896), 2, 2 * 61 * 2, "61x[144K,16896]"},
      {"DeepSeek-V3.2", "vllm-flash", "fp8", 61 * (656 * 128 + 16896), 2, 2 * 61 * 2, "61x[82K,16896]"},
  };
  for (const L& l : layouts) {
    SCOPED_TRACE(std::string(l.model) + " " + l.layout + " " + l.dtype);
    std::vector<std::string> args = {"copy", "--backend", "sim", "-t", "host_to_device_ce", "--model", l.model, "--tp",
                                     "8", "--input-len", "256", "--kv-layout", l.layout, "-i", "2", "--validate"};
    if (*l.dtype) args.insert(args.end(), {"--kv-dtype", l.dtype});
    JsonRun r = run_json(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = expect_validated_result(r, "host_to_device_ce", "sim::host::0", "sim::device::0", "CE", l.block_bytes,
                                       l.count);
    EXPECT_EQ(res["copies_per_iteration"], l.copies);
    EXPECT_EQ(res["layout"], l.label);
    EXPECT_EQ(r.doc["workload"]["copies_per_card"], l.copies);
  }
}

TEST(ModelE2E, DryRunListsOneBlocksChunks) {
  RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "--model", "DeepSeek-V3.2", "--tp", "8", "--input-len",
                          "32K", "--kv-layout", "vllm-flash", "--kv-dtype", "fp8", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {
           "  kv dtype              fp8_ds_mla = 656 B per token for the latent (--kv-dtype fp8: vLLM stores "
           "DeepSeek-V3.2's fp8 KV as fp8_ds_mla)\n",
           "  chunks per block      122 = 61 layers x 2, 6152704 B, each its own copy:\n"
           "    layer 0 latent      83968\n"
           "    layer 0 indexer     16896\n"
           "    layers 1..60        the same, 120 chunks\n"
           "  tasks per card        an IO task per block: N = 256\n"
           "  copies per request    N x chunks per block = 256 x 122 = 31232 per card\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_EQ(without_run_lines(r.err),
            "dev-sandbox: note: --kv-layout vllm-flash on a DSA model: vLLM's MLA cache (vllm-mla), fp8_ds_mla\n");
  // Without --kv-layout and --kv-dtype: what the engines would do with the model.
  RunResult d = run_tool({"copy", "-t", "host_to_device_ce", "--model", "Qwen3-32B", "--tp", "8", "--dry-run"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("  engines' defaults     vLLM: vllm-flash (FlashAttention), block 16; SGLang: sglang (fa3 on "
                       "Hopper), page 1; on Ascend both 128 (vLLM-Ascend, SGLang's ascend backend); both at "
                       "kv-cache-dtype auto = bf16\n"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("  copies per request    N x chunks per block = 32 x 128 = 4096 per card\n"), std::string::npos)
      << d.out;
}

TEST(ModelE2E, ListAndBadInput) {
  RunResult list = run_tool({"--model", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const char* p : {"Qwen3-32B", "Qwen3-235B-A22B", "Llama-3.1-70B", "DeepSeek-V3 ", "DeepSeek-V3.2", "GLM-5"})
    EXPECT_NE(list.out.find(p), std::string::npos) << p;
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/ds_hybrid.json") << R"({"num_hidden_layers":4,"num_attention_heads":8,"head_dim":64,
      "layer_types":["full_attention","linear_attention"]})";
  std::ofstream(dir + "/ds_broken.json") << "{ not json";
  struct Bad {
    std::vector<std::string> args;
    const char* says;
  } bad[] = {
      {{"--model", "NoSuchModel", "--iodirect", "false", "--sdma", "false"}, "NoSuchModel"},
      {{"copy", "-t", "host_to_device_ce", "--tp", "2"}, "--tp needs --model"},
      {{"--model", "Qwen3-32B", "--iodirect", "false", "--sdma", "false", "-s", "4K"}, "drop -s"},
      {{"--model", "Qwen3-32B", "--model-type", "gqa", "--iodirect", "false", "--sdma", "false"}, "--model-type"},
      {{"--model", "Qwen3-32B", "--sdma", "false"}, "--iodirect"},
      {{"--model", "Qwen3-32B", "--kv-dtype", "fp4", "--iodirect", "false", "--sdma", "false"}, "--kv-dtype"},
      {{"copy", "-t", "host_to_device_ce", "--model", "Qwen3-32B", "--kv-layout", "sglng"},
       "dev-sandbox: error: option --kv-layout got 'sglng': accepts ucm, vllm-flash, vllm-flashinfer, vllm-mla, sglang "
       "or sglang-mla (did you mean sglang?)\n"},
      {{"copy", "-t", "host_to_device_ce", "--model", "Qwen3-32B", "--kv-dtype", "fp8_ds_mla"},
       "dev-sandbox: error: option --kv-dtype fp8_ds_mla is vLLM's DeepSeek-V3.2 cache format: it needs a DSA model "
       "and --kv-layout vllm-flash, vllm-flashinfer or vllm-mla (Qwen3-32B is GQA, --kv-layout ucm)\n"},
      {{"copy", "-t", "host_to_device_ce", "--kv-layout", "ucm"}, "--kv-layout needs --model"},
      {{"load", "--workspace", "/tmp/ds-no-ws", "--model", "Qwen3-32B", "--kv-layout", "vllm-mla"},
       "dev-sandbox: error: option --kv-layout vllm-mla is the MLA cache; Qwen3-32B is GQA: use vllm-flash or "
       "vllm-flashinfer\n"},
      {{"--model", dir + "/ds_hybrid.json", "--iodirect", "false", "--sdma", "false"}, "layer_types"},
      {{"--model", dir + "/ds_broken.json", "--iodirect", "false", "--sdma", "false"}, "ds_broken.json"},
      {{"--model", "/nonexistent/dir", "--iodirect", "false", "--sdma", "false"}, "/nonexistent/dir"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = {"--backend", "sim"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    RunResult e = run_tool(args);
    EXPECT_EQ(e.exit_code, 2) << b.says << ": " << e.out << e.err;
    EXPECT_NE(e.err.find(b.says), std::string::npos) << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << "one line: " << e.err;
  }
}

}  // namespace
