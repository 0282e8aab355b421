#include "output/result_extra.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "core/stats.h"
#include <nlohmann/json.hpp>

#include "output/result.h"

namespace ds {

std::string ResultExtra::block_lines(const CaseResult&) const { return ""; }
std::string ResultExtra::trailing_lines(const CaseResult&) const { return ""; }

std::vector<Json> ResultExtra::csv_rows(const CaseResult&) const { return {}; }

void ResultExtras::put(std::shared_ptr<const ResultExtra> extra) {
  if (!extra) return;
  for (auto& e : list_)
    if (std::string(e->key()) == extra->key()) {
      e = std::move(extra);
      return;
    }
  list_.push_back(std::move(extra));
}

const ResultExtra* ResultExtras::find(const std::string& key) const {
  for (const auto& e : list_)
    if (key == e->key()) return e.get();
  return nullptr;
}

namespace {

// Built on first use (no static-initialisation order), guarded: registration may
// come from any thread before the first decode.
struct Registry {
  std::mutex mutex;
  std::map<std::string, ExtraDecoder> decoders;
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_extra_decoder(const std::string& key, ExtraDecoder decode) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.decoders[key] = decode;
}

std::shared_ptr<const ResultExtra> decode_extra(const std::string& key, const Json& value) {
  ExtraDecoder decode = nullptr;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.decoders.find(key);
    if (it != r.decoders.end()) decode = it->second;
  }
  if (!decode) throw RunError("internal: no decoder for the result part '" + key + "' (its measurement did not register one)");
  return decode(value);
}

Stage slowest_per_iteration(const std::vector<const Stage*>& parts, const std::string& what) {
  if (parts.empty()) throw RunError("internal: no stages to combine for " + what);
  Stage out = *parts.front();
  std::vector<int64_t>& per_iteration = out.samples;
  for (const Stage* p : parts) {
    if (p->samples.size() != per_iteration.size())
      throw RunError("internal: the ranks measured different iteration counts for " + what);
    for (size_t i = 0; i < per_iteration.size(); ++i) per_iteration[i] = std::max(per_iteration[i], p->samples[i]);
  }
  out.ns = compute_stats(per_iteration);
  return out;
}

void throw_mismatched_extra(const std::string& key) {
  throw RunError("internal: the ranks measured different things (result part " + key + ")");
}

}  // namespace ds
