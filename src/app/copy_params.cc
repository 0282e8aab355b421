#include "app/copy_params.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "cases/duplex_runner.h"
#include "core/units.h"

namespace ds {

CLI::Option* add_validate_option(CLI::App* app, bool& validate, bool& each, const std::vector<std::string>& words,
                                 const std::string& help) {
  // CLI11 gives "" for a bare --validate and for `--validate=` alike: the words tell them apart.
  const bool empty_value = std::find(words.begin(), words.end(), "--validate=") != words.end();
  return app
      ->add_option_function<std::string>(
          "--validate",
          [&validate, &each, empty_value](const std::string& v) {
            if ((v.empty() && !empty_value) || v == "end" || v == "each") {
              validate = true;
              each = v == "each";
              return;
            }
            throw CLI::ValidationError("option --validate got '" + v +
                                       "': accepts no value or end (check once after the run), or each "
                                       "(check every iteration)");
          },
          help)
      ->expected(0, 1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->type_name("[each]");
}

std::vector<uint64_t> parse_block_layout(const std::string& text) {
  std::vector<uint64_t> sizes;
  for (const std::string& one : split_commas(text)) {
    if (one.empty())
      throw UsageError("option --block-layout got '" + text + "': expects SIZE[,SIZE...] (e.g. 128K,16K,32K)");
    sizes.push_back(parse_size("--block-layout", one));
    if (sizes.size() > static_cast<size_t>(kMaxFrags))
      throw UsageError("option --block-layout: more than " + std::to_string(kMaxFrags) + " fragments");
  }
  return sizes;
}

namespace {

// --duplex-ratio R: a number above 0, at most kMaxDuplexRatio.
double parse_duplex_ratio(const std::string& text) {
  const std::string bad = "option --duplex-ratio got '" + text + "': accepts a number above 0 and at most " +
                          format_ratio(kMaxDuplexRatio) + " (D2H bytes per H2D byte)";
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) throw UsageError(bad);
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(r) || !(r > 0) || r > kMaxDuplexRatio) throw UsageError(bad);
  return r;
}

}  // namespace

CopyParams parse_copy_params(const CopyOptionText& t) {
  CopyParams p;
  const uint64_t blocks = parse_count("-n", t.blocks, 1);
  if (!t.block_layout.empty()) {
    if (t.size_given) throw UsageError("option --block-layout sets the block; drop -s");
    if (t.frags != "0") throw UsageError("option --block-layout sets the fragments of a block; drop -f");
    p.layout = Layout::block(parse_block_layout(t.block_layout), blocks);
  } else {
    const uint64_t block = parse_size("-s", t.size);
    const int frags = parse_int("-f", t.frags, 0, kMaxFrags);
    p.layout = Layout::uniform(block, blocks, frags);
  }
  p.iterations = parse_int("-i", t.iterations, 1, kMaxIterations);
  p.devices = parse_int("-d", t.devices, 1, kMaxDevices);
  p.streams = parse_int("--streams", t.streams, 1, kMaxStreams);
  p.warmup = parse_int("--warmup", t.warmup, 0, kMaxIterations);
  p.validate = t.validate;
  if (t.submit_mode == "stream-major")
    p.submit_mode = SubmitMode::kStreamMajor;
  else if (t.submit_mode == "round-robin")
    p.submit_mode = SubmitMode::kRoundRobin;
  else
    throw UsageError("option --submit-mode expects stream-major or round-robin, not '" + t.submit_mode + "'");
  if (t.gate != "on" && t.gate != "off")
    throw UsageError("option --stream-start-gate expects on or off, not '" + t.gate + "'");
  p.gate = t.gate == "on";
  p.timeout_s = parse_timeout(t.timeout);
  p.validate_each = t.validate && t.validate_each;
  p.numa_request = parse_numa_options(t.numa);
  p.duplex_ratio = parse_duplex_ratio(t.duplex_ratio);
  return p;
}

NumaRequest parse_numa_options(const NumaOptionText& t) {
  NumaRequest r;
  if (!t.mode.empty() && t.mode != "auto" && t.mode != "off")
    throw UsageError("option --numa expects auto or off, not '" + t.mode + "'");
  r.mode = t.mode == "off" ? NumaMode::kOff : NumaMode::kAuto;
  r.asked = !t.mode.empty() || !t.map.empty() || !t.shm_nodes.empty();
  if (!t.map.empty() && !parse_numa_map(t.map, &r.map))
    throw UsageError("option --numa-map got '" + t.map +
                     "': expects DEVICE:NODE[,DEVICE:NODE...] with each device once (e.g. 0:0,1:0,2:1)");
  if (!t.map.empty() && r.mode == NumaMode::kOff)
    throw UsageError("option --numa-map places workers; it cannot go with --numa off");
  if (!t.shm_nodes.empty() && (!parse_id_list(t.shm_nodes, &r.shm_nodes) || r.shm_nodes.empty()))
    throw UsageError("option --shm-numa-nodes got '" + t.shm_nodes + "': expects a node list such as 0-3 or 0,2");
  return r;
}

void add_numa_options(CLI::App* app, NumaOptionText& t, bool shared_region) {
  app->add_option("--numa", t.mode,
                  "auto: every worker runs on its device's NUMA node's CPUs and its host buffers are bound "
                  "to that node; off: no placement (default auto)")
      ->type_name("auto|off");
  app->add_option("--numa-map", t.map, "override the discovered device -> NUMA node map (e.g. 0:0,1:0,2:1)")
      ->type_name("DEV:NODE,...");
  if (shared_region)
    app->add_option("--shm-numa-nodes", t.shm_nodes,
                    "shared-source cases: split the shared region into equal contiguous parts, one per listed "
                    "node, each bound there before it is filled and checked with move_pages before timing")
        ->type_name("LIST");
}

int parse_timeout(const std::string& text) { return parse_int("--timeout", text, 0, 86400 * 7); }

void add_timeout_option(CLI::App* app, std::string& text) {
  app->add_option("--timeout", text,
                  "stop the run (exit 1) when a worker makes no progress for this many seconds: it names the "
                  "device, the phase and the iteration; 0: never (default 60)")
      ->type_name("SECONDS");
}

void add_stream_options(CLI::App* app, CopyOptionText& t) {
  app->add_option("--submit-mode", t.submit_mode,
                  "multi-stream cases: stream-major (each stream one contiguous range of blocks, "
                  "submitted stream by stream) or round-robin (block i on stream i mod S) "
                  "(default stream-major, as UCM)")
      ->type_name("stream-major|round-robin");
  app->add_option("--stream-start-gate", t.gate,
                  "on: hold every stream at its start until all of the iteration's copies are queued, so "
                  "Copy is the engines alone (nvbandwidth's method); off: Copy includes submission stalls, "
                  "as in the user guide and UCM (default off)")
      ->type_name("on|off");
}

}  // namespace ds
