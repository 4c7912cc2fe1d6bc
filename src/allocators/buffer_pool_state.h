// SPDX-License-Identifier: Apache-2.0
// The buffer pool's internal state, shared by buffer_pool.cc (the MNN
// BufferAllocator core) and buffer_pool_defer.cc (the defer mode).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "allocators/adaptive_mutex.h"
#include "allocators/node_arena.h"
#include "allocators/pointer_map.h"
#include "allocators/pool_free_list.h"
#include "tensormem/allocators/buffer_pool.h"

namespace tensormem {
namespace pool {

struct Node;
using FreeList = SizeOrderedList<Node>;

struct Node {
  Node* parent = nullptr;
  Node* children[2] = {nullptr, nullptr};  // set while split: front, back (from split_nodes)
  char* start = nullptr;
  std::uint64_t size = 0;
  std::uint64_t use_count = 0;  // children not in a free list
  FreeLinks<Node> free;         // its free list and neighbours there, while in one
};

// One recorded virtual allocation of the defer mode.
struct DeferredRecord {
  std::uint64_t bytes = 0;
  std::uint64_t alignment = 1;
  std::int64_t first_event = 0;
  std::int64_t free_event = -1;  // -1: not freed
  std::uint64_t offset = 0;      // planned
};

struct PoolState {
  PoolState(Backend& b, const BufferPoolParams& p) : backend(b), params(p), valid(Validate(p)) {
    if (!valid.ok()) params.split_granularity = 64;  // never used to serve: every allocation fails
  }

  Backend& backend;
  BufferPoolParams params;
  Status valid;  // Validate(params)
  mutable internal::AdaptiveMutex mutex;

  std::map<char*, std::unique_ptr<Node>> roots;  // blocks from the backend, by address
  // Split halves, two per split: from a free list rather than malloc (they
  // come and go with every split and merge).
  internal::NodeArena split_nodes;
  internal::PointerMap<Node*> used;              // returned pointer -> node
  FreeList free_list;
  bool barrier_open = false;
  std::vector<std::unique_ptr<FreeList>> groups;
  std::vector<std::unique_ptr<FreeList>> spare_groups;  // emptied at BarrierEnd, reused (15 KB each)
  std::unordered_map<std::thread::id, FreeList*> current_group;
  std::uint64_t free_bytes = 0;
  AllocatorStats stats;

  // Defer mode.
  std::vector<DeferredRecord> deferred;
  std::int64_t next_event = 0;
  std::size_t planned_count = 0;  // records covered by the last plan
  void* deferred_arena = nullptr;
  std::uint64_t deferred_arena_bytes = 0;
  std::uint64_t deferred_lower_bound = 0;

  // The free list of the calling thread's group, null outside groups.
  FreeList* CurrentGroup() const;
  Node* NewSplitNode(Node* parent, char* start, std::uint64_t size);
  void DeleteSplitNodes(Node* n);  // n's descendants, not n
  void Insert(FreeList* list, Node* n);
  void Remove(Node* n);
  void MarkUsed(void* pointer, Node* n);
  void* GetFromFreeList(FreeList* list, std::uint64_t size, bool permit_split,
                        std::uint64_t alignment);
  void ReturnMemory(FreeList* list, Node* n, bool permit_merge);
  Result<void*> NewBlock(std::uint64_t bytes, std::uint64_t alignment);
  Result<void*> Allocate(std::uint64_t bytes, std::uint64_t alignment, bool separate);
  Status Free(void* pointer);
  std::uint64_t ReleaseBlock(Node* root);
};

}  // namespace pool

struct BufferPool::State : pool::PoolState {
  using PoolState::PoolState;
};

}  // namespace tensormem
