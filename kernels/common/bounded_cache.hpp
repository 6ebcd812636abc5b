#pragma once
// A map that holds at most `cap` entries: when full, a new key empties it first. For caches
// keyed by caller-owned pointers (a plan per workspace): an engine that allocates a workspace
// per call must not grow the process without end. Values are shared_ptrs, so a dropped entry
// stays alive wherever a caller still holds it. Not thread-safe: the owner locks.
#include <cstddef>
#include <map>
#include <memory>
#include <utility>

namespace moe {

template <class Key, class Value>
class BoundedCache {
 public:
  explicit BoundedCache(std::size_t cap) : cap_(cap) {}

  // The entry of `key`, made by `make()` (a shared_ptr<const Value>) when there is none.
  template <class Make>
  std::shared_ptr<const Value> get(const Key& key, Make&& make) {
    if (auto it = map_.find(key); it != map_.end()) return it->second;
    std::shared_ptr<const Value> v = make();
    if (map_.size() >= cap_) map_.clear();
    map_.emplace(key, v);
    return v;
  }
  std::size_t size() const { return map_.size(); }

 private:
  std::size_t cap_;
  std::map<Key, std::shared_ptr<const Value>> map_;
};

}  // namespace moe
