// SPDX-License-Identifier: Apache-2.0
// Fixed-size nodes for node-based containers (std::set, std::multimap)
// from a free list, for allocators that already serialise every container
// operation under their own mutex (internal): no malloc per insert, and a
// freed node is the next one handed out, still in cache.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace tensormem::internal {

// One node size (the first asked for); other sizes (a hash map's bucket
// array) go to operator new.
class NodeArena {
 public:
  NodeArena() = default;
  NodeArena(const NodeArena&) = delete;
  NodeArena& operator=(const NodeArena&) = delete;
  void* Get(std::size_t bytes) {
    if (node_bytes_ == 0) node_bytes_ = std::max(bytes, sizeof(void*));
    if (bytes != node_bytes_) return ::operator new(bytes);  // not a node (an array a container asked for)
    if (free_ == nullptr) Grow();
    void* p = free_;
    free_ = *static_cast<void**>(free_);
    return p;
  }
  void Put(void* p, std::size_t bytes) {
    if (bytes != node_bytes_) {
      ::operator delete(p);
      return;
    }
    *static_cast<void**>(p) = free_;
    free_ = p;
  }

 private:
  void Grow() {
    const std::size_t n = 512;
    blocks_.push_back(std::make_unique<std::max_align_t[]>((n * node_bytes_ + sizeof(std::max_align_t) - 1) /
                                                           sizeof(std::max_align_t)));
    char* base = reinterpret_cast<char*>(blocks_.back().get());
    for (std::size_t i = 0; i < n; ++i) Put(base + i * node_bytes_, node_bytes_);
  }
  std::size_t node_bytes_ = 0;
  void* free_ = nullptr;
  std::vector<std::unique_ptr<std::max_align_t[]>> blocks_;
};

template <typename T>
struct NodeAllocator {
  using value_type = T;
  NodeArena* arena;
  explicit NodeAllocator(NodeArena* a) : arena(a) {}
  template <typename U>
  NodeAllocator(const NodeAllocator<U>& o) : arena(o.arena) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(arena->Get(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { arena->Put(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const NodeAllocator<U>& o) const { return arena == o.arena; }
};

}  // namespace tensormem::internal
