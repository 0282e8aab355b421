// What a result carries beyond the common columns (output/result_schema.h): typed
// parts owned by the measurement that makes them (its disk counters, its stages
// alone and their verdict, ...). An extra says what it adds to each output and
// how its parts combine across ranks and nodes; output/ and cluster/ only drive
// that interface, so they name no measurement (docs/results.md).
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ds {

// JSON with keys in the order they were written (tool, backend, ..., results);
// plain sorted keys with nlohmann_json older than 3.9, which has no ordered_json.
// (json.hpp undefines its version macros at its end, so CMake tells us, for every
// target that includes this: one Json type in the whole program.)
#ifndef DS_JSON_HAS_ORDERED
#error "DS_JSON_HAS_ORDERED is set by CMake (ds_output's public definitions)"
#endif
#if DS_JSON_HAS_ORDERED
using Json = nlohmann::ordered_json;
#else
using Json = nlohmann::json;
#endif

struct CaseResult;
struct Stage;

// Where an extra's JSON members go among a result's common keys: after "notes"
// (what the measurement counted, beside the run's record) or after "numa" (what
// it derives from the run). The schema's table holds one row per place.
enum class JsonPlace { kAfterNotes, kAfterNuma };

// How the parts of one result being combined relate (src/cluster).
struct CombineScope {
  // The parts ran on one node: what they name alike (a disk) is one thing.
  bool one_node = false;
  // Across nodes, each part's node, in part order, when there is more than one
  // node (names that differ by node then carry it); empty otherwise.
  std::vector<std::string> nodes;
};

class ResultExtra {
 public:
  virtual ~ResultExtra() = default;
  // Its name in the codec and in the decoder registry: one per type.
  virtual const char* key() const = 0;

  // JSON: the members it adds to its result's object, at `json_place()`.
  virtual JsonPlace json_place() const = 0;
  virtual void add_json(Json& result, const CaseResult& r) const = 0;

  // Text, each line ending in '\n': within the result's block after its Wall line,
  // and after the block (after the --model line). Default: none.
  virtual std::string block_lines(const CaseResult& r) const;
  virtual std::string trailing_lines(const CaseResult& r) const;

  // CSV: rows written after the result's own, each an object keyed by the CSV
  // columns' keys (a statistic as json_forms.h stats_us gives it); a column a row
  // leaves out is empty in it. Default: none.
  virtual std::vector<Json> csv_rows(const CaseResult& r) const;

  // The codec's form (lossless); the decoder registered under key() reads it back.
  virtual Json encode() const = 0;

  // This extra and the same key's of the other parts of one result (`parts`, this
  // one first, one per part), combined; `combined`: the result with its common
  // fields already combined (bytes summed, stages the slowest per iteration).
  // RunError when the parts did not measure the same thing.
  virtual std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts,
                                                     const CombineScope& scope, const CaseResult& combined) const = 0;
};

// The extras of one result, in the order they were put. Extras are immutable once
// put, so copies of a result share them.
class ResultExtras {
 public:
  // Replaces the one with the same key, else appends.
  void put(std::shared_ptr<const ResultExtra> extra);
  template <class T>
  void put(T extra) {
    put(std::shared_ptr<const ResultExtra>(std::make_shared<const T>(std::move(extra))));
  }
  // The extra of type T; null when the result has none.
  template <class T>
  const T* get() const {
    for (const auto& e : list_)
      if (const T* t = dynamic_cast<const T*>(e.get())) return t;
    return nullptr;
  }
  const ResultExtra* find(const std::string& key) const;
  const std::vector<std::shared_ptr<const ResultExtra>>& all() const { return list_; }
  bool empty() const { return list_.empty(); }
  void clear() { list_.clear(); }

 private:
  std::vector<std::shared_ptr<const ResultExtra>> list_;
};

// The decoder registry: the measurement that owns an extra registers how its codec
// form is read back, explicitly (register_*_result() in its folder, called at the
// start of the program and by tests: no static initialisers, which a static
// library may drop). Registering a key again replaces its decoder.
using ExtraDecoder = std::shared_ptr<const ResultExtra> (*)(const Json& value);
void register_extra_decoder(const std::string& key, ExtraDecoder decode);
// RunError ("... no decoder for the result part '<key>' ...") when none is registered.
std::shared_ptr<const ResultExtra> decode_extra(const std::string& key, const Json& value);

// For extras that combine their own stages as the common ones are: per iteration
// the longest of the parts' (their iterations started together), and its stats.
// RunError when the parts measured different iteration counts (`what` names it).
Stage slowest_per_iteration(const std::vector<const Stage*>& parts, const std::string& what);

// The parts as the extra type T, for an extra's combine(); RunError when one is not.
[[noreturn]] void throw_mismatched_extra(const std::string& key);
template <class T>
std::vector<const T*> extra_parts(const std::vector<const ResultExtra*>& parts) {
  std::vector<const T*> out;
  for (const ResultExtra* p : parts) {
    const T* t = dynamic_cast<const T*>(p);
    if (!t) throw_mismatched_extra(p ? p->key() : "(none)");
    out.push_back(t);
  }
  return out;
}

}  // namespace ds
