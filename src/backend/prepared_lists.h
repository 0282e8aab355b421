// What a backend makes once for a descriptor list that is submitted every
// iteration (a graph, the batch call's arrays, FFTS+ contexts), kept by the list's
// address and length: a case's plan does not move or change while it runs, so no
// iteration copies or hashes a whole list. Each lookup still compares the
// descriptors (memcmp, nothing copied) and remakes an entry whose list changed.
#pragma once

#include <cstring>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace ds {

template <typename T>
class PreparedLists {
 public:
  // `release` undoes what an entry holds that its destructor does not (a graph of
  // the runtime): called for an entry that is remade, and by release_all().
  explicit PreparedLists(std::function<void(T&)> release = {}) : release_(std::move(release)) {}

  // The entry for this list; made by make(descs, n) when missing or stale.
  template <typename Make>
  T& get(const CopyDesc* descs, size_t n, Make make) {
    const Key key{descs, n};
    auto it = map_.find(key);
    if (it != map_.end()) {
      if (std::memcmp(it->second.descs.data(), descs, n * sizeof(CopyDesc)) == 0) return it->second.value;
      if (release_) release_(it->second.value);
      it->second = Entry{{descs, descs + n}, make(descs, n)};
      return it->second.value;
    }
    return map_.emplace(key, Entry{{descs, descs + n}, make(descs, n)}).first->second.value;
  }

  void release_all() {
    if (release_)
      for (auto& kv : map_) release_(kv.second.value);
    map_.clear();
  }

 private:
  struct Key {
    const CopyDesc* descs;
    size_t n;
    bool operator==(const Key& o) const { return descs == o.descs && n == o.n; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.descs) ^ (std::hash<size_t>()(k.n) * 0x9e3779b97f4a7c15ULL);
    }
  };
  struct Entry {
    std::vector<CopyDesc> descs;  // what it was made from
    T value;
  };
  std::function<void(T&)> release_;
  std::unordered_map<Key, Entry, KeyHash> map_;
};

}  // namespace ds
