// SPDX-License-Identifier: Apache-2.0
// A hash map from names (string_views the caller keeps alive) to small
// values, for the graphs of millions of named tensors that the ONNX
// importer and the graph check index (internal). The entries sit in one
// array in insertion order and an open-addressing table (linear probing)
// of 32-bit hash tags and entry indices finds them: an insert never calls
// malloc once reserved, and a lookup reads one slot and its entry where a
// node-based map chases a bucket and a node per name (on 10^6 names that
// took most of the graph check).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace tensormem::internal {

template <typename V>
class NameMap {
 public:
  std::size_t size() const { return entries_.size(); }

  // Room for `n` names without growing the table.
  void Reserve(std::size_t n) {
    entries_.reserve(n);
    if (2 * n > slots_.size()) Rehash(2 * n);
  }

  // The value of `name`, null when absent. Pointers stay valid until the
  // next insert.
  V* Find(std::string_view name) {
    const std::uint32_t e = Lookup(name, Hash(name));
    return e == kEmpty ? nullptr : &entries_[e].value;
  }
  const V* Find(std::string_view name) const { return const_cast<NameMap*>(this)->Find(name); }

  // The value of `name`, set to `value` first when it is absent; the bool
  // says whether it was. At most 2^32 - 2 names.
  std::pair<V*, bool> TryEmplace(std::string_view name, V value) {
    if (2 * (entries_.size() + 1) > slots_.size()) Rehash(2 * (entries_.size() + 1));
    const std::size_t h = Hash(name);
    std::size_t i = h & mask_;
    for (; slots_[i].entry != kEmpty; i = (i + 1) & mask_)
      if (slots_[i].tag == Tag(h) && entries_[slots_[i].entry].key == name)
        return {&entries_[slots_[i].entry].value, false};
    slots_[i] = {Tag(h), static_cast<std::uint32_t>(entries_.size())};
    entries_.push_back({name, std::move(value)});
    return {&entries_.back().value, true};
  }

  // Sets `name` to `value`, inserting it when absent.
  void Assign(std::string_view name, V value) {
    auto [v, inserted] = TryEmplace(name, value);
    if (!inserted) *v = std::move(value);
  }

  void Clear() {
    entries_.clear();
    std::fill(slots_.begin(), slots_.end(), Slot{});
  }

 private:
  static constexpr std::uint32_t kEmpty = ~std::uint32_t{0};
  struct Slot {
    std::uint32_t tag = 0;
    std::uint32_t entry = kEmpty;
  };
  struct Entry {
    std::string_view key;
    V value;
  };

  static std::size_t Hash(std::string_view name) { return std::hash<std::string_view>()(name); }
  // The hash's high bits: the low ones choose the slot.
  static std::uint32_t Tag(std::size_t h) { return static_cast<std::uint32_t>(static_cast<std::uint64_t>(h) >> 32); }

  std::uint32_t Lookup(std::string_view name, std::size_t h) const {
    if (slots_.empty()) return kEmpty;
    for (std::size_t i = h & mask_; slots_[i].entry != kEmpty; i = (i + 1) & mask_)
      if (slots_[i].tag == Tag(h) && entries_[slots_[i].entry].key == name) return slots_[i].entry;
    return kEmpty;
  }

  // A table of at least `want` slots (a power of two), the entries placed again.
  void Rehash(std::size_t want) {
    std::size_t capacity = 16;
    while (capacity < want) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      const std::size_t h = Hash(entries_[e].key);
      std::size_t i = h & mask_;
      while (slots_[i].entry != kEmpty) i = (i + 1) & mask_;
      slots_[i] = {Tag(h), static_cast<std::uint32_t>(e)};
    }
  }

  std::vector<Entry> entries_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

}  // namespace tensormem::internal
