// SPDX-License-Identifier: Apache-2.0
// A hash map from non-null pointers to small values, for an allocator's
// live blocks (internal). Open addressing with linear probing in one array
// and deletion by shifting the probe run back (no tombstones): a lookup
// reads one or two adjacent slots instead of a bucket and a node, and an
// insert or erase never calls malloc once the table has grown. Not
// thread-safe; the allocator's mutex guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tensormem::internal {

template <typename V>
class PointerMap {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value at `key`, null when absent.
  V* Find(const void* key) {
    if (slots_.empty() || key == nullptr) return nullptr;
    for (std::size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == nullptr) return nullptr;
    }
  }
  const V* Find(const void* key) const { return const_cast<PointerMap*>(this)->Find(key); }

  // Inserts or overwrites; `key` must not be null.
  void Insert(const void* key, V value) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    std::size_t i = Home(key);
    while (slots_[i].key != nullptr && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == nullptr) ++size_;
    slots_[i] = {key, value};
  }
  // Removes every entry (the table keeps its size).
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    size_ = 0;
  }
  // Removes `key`; false when absent.
  bool Erase(const void* key) {
    if (slots_.empty() || key == nullptr) return false;
    std::size_t i = Home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == nullptr) return false;
      i = (i + 1) & mask_;
    }
    // Shift the rest of the run back over the hole, each entry only as far
    // as its home slot allows, so every lookup still finds it.
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != nullptr; j = (j + 1) & mask_) {
      const std::size_t home = Home(slots_[j].key);
      // j's entry may move to i when i lies cyclically in [home, j).
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
    return true;
  }

 private:
  struct Slot {
    const void* key = nullptr;
    V value{};
  };
  std::size_t Home(const void* key) const {
    // Fibonacci hashing: the product's top bits depend on every bit of the
    // key, so aligned keys (low bits zero) spread as well as any.
    const auto k = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    const std::size_t capacity = old.empty() ? 64 : old.size() * 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != nullptr) Insert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace tensormem::internal
