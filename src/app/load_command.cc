// `load`: one request's KV cache from the POSIX store to every card, disk -> host
// staging -> device, overlapped; its options are every staged command's
// (app/staged_options.h), src/staging does the measurement.
#include "app/command.h"
#include "app/staged_options.h"

namespace ds {

Command add_load_command(CLI::App& root, GlobalOptions& global) {
  return add_staged_command(root, global, StagedDir::kLoad,
                            "one request's KV from disk to every card (disk -> host staging -> device, overlapped), "
                            "with each stage alone and the bottleneck named",
                            {"dev-sandbox load --workspace /data/kv -s 1M -n 64 -d 8 -i 8",
                             "dev-sandbox load --workspace /data/kv --model Qwen3-32B --tp 8 --input-len 32K",
                             "dev-sandbox load --workspace /data/kv -d 1 --sweep 64K:8M --plot load.svg"});
}

}  // namespace ds
