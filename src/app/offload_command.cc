// `offload`: one request's freshly computed KV cache from every card to the POSIX
// store, device -> host staging -> disk, overlapped (the reverse of `load`); its
// options are every staged command's (app/staged_options.h), src/staging does the
// measurement (docs/offload.md).
#include "app/command.h"
#include "app/staged_options.h"

namespace ds {

Command add_offload_command(CLI::App& root, GlobalOptions& global) {
  return add_staged_command(
      root, global, StagedDir::kOffload,
      "one request's KV from every card to disk (device -> host staging -> disk, overlapped), with each stage alone "
      "and the bottleneck named",
      {"dev-sandbox offload --workspace /data/kv -s 1M -n 64 -d 8 -i 8",
       "dev-sandbox offload --workspace /data/kv --model Qwen3-32B --tp 8 --input-len 32K",
       "dev-sandbox offload --workspace /data/kv --model DeepSeek-V3 -d 8 --input-len 32K --validate",
       "dev-sandbox offload --workspace /data/kv -d 1 --sweep 64K:8M --plot offload.svg"});
}

}  // namespace ds
