// SPDX-License-Identifier: Apache-2.0
// The buffer pool (MNN BufferAllocator). A node is a span of a block from
// the backend; a split node has two children (front: the part handed out,
// back: the rest; both from the pool's arena of split nodes) and counts the
// children that are not in a free list.
// Free lists keep MNN's order (smallest fit, then insertion order; MNN uses
// a multimap size -> node) in bins of nearby sizes (pool_free_list.h); a
// node in a list carries its links, so a merge removes its children in O(1)
// instead of MNN's scan of the list.
// The defer mode lives in buffer_pool_defer.cc.
#include "tensormem/allocators/buffer_pool.h"

#include <new>

#include "allocators/buffer_pool_state.h"

namespace tensormem {

using pool::FreeList;
using pool::Node;

Status Validate(const BufferPoolParams& p) {
  if (!IsPowerOfTwo(p.split_granularity) || p.split_granularity > kMaxAllocationAlignment)
    return InvalidArgument("pool: split_granularity " + std::to_string(p.split_granularity) +
                           " is not a power of two between 1 and " +
                           std::to_string(kMaxAllocationAlignment));
  bool known = false;
  for (OffsetsStrategy s : AllOffsetsStrategies()) known |= s == p.defer_strategy;
  if (!known)
    return InvalidArgument("pool: unknown defer_strategy value " +
                           std::to_string(static_cast<long long>(p.defer_strategy)));
  return Status::Ok();
}

BufferPool::BufferPool(Backend& backend, const BufferPoolParams& params)
    : state_(std::make_unique<State>(backend, params)) {}

Result<std::unique_ptr<BufferPool>> BufferPool::Create(Backend& backend,
                                                       const BufferPoolParams& params) {
  TM_RETURN_IF_ERROR(Validate(params));
  return std::make_unique<BufferPool>(backend, params);
}

BufferPool::~BufferPool() {
  for (auto& [address, root] : state_->roots)
    (void)state_->backend.Release(root->start, root->size);
}

namespace pool {

void PoolState::Insert(FreeList* list, Node* n) {
  list->Insert(n);
  free_bytes += n->size;
}

void PoolState::Remove(Node* n) {
  n->free.list->Remove(n);
  free_bytes -= n->size;
}

void PoolState::MarkUsed(void* pointer, Node* n) {
  used.Insert(pointer, n);
  ++stats.num_allocs;
  stats.bytes_in_use += n->size;
  stats.peak_bytes_in_use = std::max(stats.peak_bytes_in_use, stats.bytes_in_use);
  stats.largest_alloc_size = std::max(stats.largest_alloc_size, n->size);
}

std::uintptr_t AlignUp(std::uintptr_t v, std::uint64_t a) { return (v + a - 1) & ~(a - 1); }

void* PoolState::GetFromFreeList(FreeList* list, std::uint64_t size, bool permit_split,
                                 std::uint64_t alignment) {
  Node* n = list->LowerBound(size);
  if (n == nullptr) return nullptr;
  std::uintptr_t start = reinterpret_cast<std::uintptr_t>(n->start);
  std::uintptr_t pointer = start;
  std::uint64_t real_size = size;
  if (start % alignment != 0) {
    // Move the start up to the alignment; walk up the list until a block
    // still holds the request after the move.
    while (true) {
      if (n == nullptr) return nullptr;
      start = reinterpret_cast<std::uintptr_t>(n->start);
      pointer = AlignUp(start, alignment);
      real_size = size + (pointer - start);
      if (real_size <= n->size) break;
      n = list->Next(n);
    }
  }
  if (permit_split && n->parent != nullptr) n->parent->use_count += 1;
  const std::uint64_t size_aligned = AlignUp(real_size, params.split_granularity);
  Remove(n);
  void* result = reinterpret_cast<void*>(pointer);
  if (size_aligned >= n->size || !permit_split) {
    MarkUsed(result, n);
    return result;
  }
  // Split: the front part is used, the back part stays free.
  Node* f = NewSplitNode(n, n->start, size_aligned);
  Node* b = NewSplitNode(n, n->start + size_aligned, n->size - size_aligned);
  n->use_count += 1;
  n->children[0] = f;
  n->children[1] = b;
  Insert(list, b);
  MarkUsed(result, f);
  return result;
}

Node* PoolState::NewSplitNode(Node* parent, char* start, std::uint64_t size) {
  Node* n = new (split_nodes.Get(sizeof(Node))) Node();
  n->parent = parent;
  n->start = start;
  n->size = size;
  return n;
}

void PoolState::DeleteSplitNodes(Node* n) {
  // An explicit stack: a block split thousands of times over is a chain
  // that deep.
  std::vector<Node*> stack;
  for (Node* c : n->children)
    if (c != nullptr) stack.push_back(c);
  n->children[0] = n->children[1] = nullptr;
  while (!stack.empty()) {
    Node* c = stack.back();
    stack.pop_back();
    for (Node* g : c->children)
      if (g != nullptr) stack.push_back(g);
    c->~Node();
    split_nodes.Put(c, sizeof(Node));
  }
}

FreeList* PoolState::CurrentGroup() const {
  if (current_group.empty()) return nullptr;  // no barrier: skip hashing the thread id
  const auto group = current_group.find(std::this_thread::get_id());
  return group == current_group.end() ? nullptr : group->second;
}

void PoolState::ReturnMemory(FreeList* list, Node* n, bool permit_merge) {
  Insert(list, n);
  Node* parent = n->parent;
  if (parent == nullptr || !permit_merge) return;
  parent->use_count -= 1;
  while (parent != nullptr && parent->use_count == 0) {
    // Every child is whole and free again: the parent takes their place.
    for (Node*& child : parent->children) {
      Remove(child);
      child->~Node();
      split_nodes.Put(child, sizeof(Node));
      child = nullptr;
    }
    Insert(list, parent);
    parent = parent->parent;
    if (parent != nullptr) parent->use_count -= 1;
  }
}

Result<void*> PoolState::NewBlock(std::uint64_t bytes, std::uint64_t alignment) {
  TM_ASSIGN_OR_RETURN(void* mem, backend.Reserve(bytes, std::max(alignment, params.split_granularity)));
  auto root = std::make_unique<Node>();
  root->start = static_cast<char*>(mem);
  root->size = bytes;
  Node* n = root.get();
  roots.emplace(n->start, std::move(root));
  stats.bytes_reserved += bytes;
  stats.peak_bytes_reserved = std::max(stats.peak_bytes_reserved, stats.bytes_reserved);
  MarkUsed(mem, n);
  return mem;
}

Result<void*> PoolState::Allocate(std::uint64_t bytes, std::uint64_t alignment, bool separate) {
  if (!separate) {
    if (FreeList* group = CurrentGroup()) {
      if (void* p = GetFromFreeList(group, bytes, false, alignment)) return p;
    }
    if (void* p = GetFromFreeList(&free_list, bytes, true, alignment)) return p;
  }
  Result<void*> block = NewBlock(bytes, alignment);
  if (!block.ok()) {
    ++stats.num_failed_allocs;
    return block.status().WithContext("pool: no free block of " + std::to_string(bytes) +
                                      " bytes and the backend refused a new one");
  }
  return block;
}

Status PoolState::Free(void* pointer) {
  Node* const* found = used.Find(pointer);
  if (found == nullptr) {
    // Inside one of our blocks means a double free or an interior pointer.
    auto root = roots.upper_bound(static_cast<char*>(pointer));
    const bool ours = root != roots.begin() &&
                      static_cast<char*>(pointer) < std::prev(root)->second->start +
                                                        std::prev(root)->second->size;
    if (ours)
      return FailedPrecondition("pool: " + PointerToString(pointer) +
                                " is not a live allocation: it was already freed, or it points "
                                "inside a block rather than at its start");
    return NotFound("pool: " + PointerToString(pointer) +
                    " was not allocated by this pool (it lies in none of its blocks)");
  }
  Node* n = *found;
  used.Erase(pointer);
  ++stats.num_frees;
  stats.bytes_in_use -= n->size;
  if (FreeList* group = CurrentGroup())
    ReturnMemory(group, n, false);
  else
    ReturnMemory(&free_list, n, true);
  return Status::Ok();
}

std::uint64_t PoolState::ReleaseBlock(Node* root) {
  const std::uint64_t bytes = root->size;
  DeleteSplitNodes(root);
  (void)backend.Release(root->start, bytes);
  stats.bytes_reserved -= bytes;
  roots.erase(root->start);
  return bytes;
}

}  // namespace pool

Result<void*> BufferPool::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  if (!state_->valid.ok()) return state_->valid;
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Allocate(bytes, alignment, false);
}

Result<void*> BufferPool::AllocateSeparate(std::uint64_t bytes, std::uint64_t alignment) {
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "pool", kMaxAllocationAlignment));
  if (bytes > (std::uint64_t{1} << 62))  // as MemoryResource::Allocate refuses
    return ResourceExhausted("pool: cannot allocate " + std::to_string(bytes) + " bytes (more than 2^62)");
  if (!state_->valid.ok()) return state_->valid;
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Allocate(bytes == 0 ? 1 : bytes, alignment, true);
}

Status BufferPool::DoDeallocate(void* pointer) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  // The defer mode's arena is a block of the pool's own, not the caller's
  // (its address may be one the caller once had).
  if (pointer != nullptr && pointer == state_->deferred_arena)
    return FailedPrecondition("pool: " + PointerToString(pointer) +
                              " is the defer mode's arena (DeferReset frees it), not an allocation");
  return state_->Free(pointer);
}

Result<std::uint64_t> BufferPool::Release(PoolRelease mode) {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (s.barrier_open)
    return FailedPrecondition("pool: Release while a barrier is open (call BarrierEnd first)");
  std::uint64_t released = 0;
  if (mode == PoolRelease::kAll) {
    s.used.clear();
    s.free_list.Clear();
    s.free_bytes = 0;
    s.deferred_arena = nullptr;  // the recorded chunks stay; DeferCompute plans them anew
    s.deferred_arena_bytes = 0;
    s.planned_count = 0;
    while (!s.roots.empty()) released += s.ReleaseBlock(s.roots.begin()->second.get());
    s.stats.bytes_in_use = 0;
    return released;
  }
  std::vector<Node*> free_roots;
  for (Node* n = s.free_list.First(); n != nullptr; n = s.free_list.Next(n))
    if (n->parent == nullptr) free_roots.push_back(n);
  for (Node* n : free_roots) {
    s.Remove(n);
    released += s.ReleaseBlock(n);
  }
  return released;
}

Status BufferPool::BarrierBegin() {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  if (state_->barrier_open) return FailedPrecondition("pool: BarrierBegin: a barrier is already open");
  state_->barrier_open = true;
  return Status::Ok();
}

Status BufferPool::BeginGroup() {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (!s.barrier_open) return FailedPrecondition("pool: BeginGroup outside a barrier (call BarrierBegin)");
  const auto id = std::this_thread::get_id();
  if (s.current_group.count(id) != 0)
    return FailedPrecondition("pool: BeginGroup: this thread's group is still open (call EndGroup)");
  if (s.spare_groups.empty()) {
    s.groups.push_back(std::make_unique<FreeList>());
  } else {
    s.groups.push_back(std::move(s.spare_groups.back()));
    s.spare_groups.pop_back();
  }
  s.current_group.emplace(id, s.groups.back().get());
  return Status::Ok();
}

Status BufferPool::EndGroup() {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  if (state_->current_group.erase(std::this_thread::get_id()) == 0)
    return FailedPrecondition("pool: EndGroup without a BeginGroup on this thread");
  return Status::Ok();
}

Status BufferPool::BarrierEnd() {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (!s.barrier_open) return FailedPrecondition("pool: BarrierEnd without BarrierBegin");
  if (!s.current_group.empty())
    return FailedPrecondition("pool: BarrierEnd while " + std::to_string(s.current_group.size()) +
                              " group(s) are still open (call EndGroup on their threads)");
  for (auto& group : s.groups) {
    std::vector<Node*> nodes;
    for (Node* n = group->First(); n != nullptr; n = group->Next(n)) nodes.push_back(n);
    for (Node* n : nodes) {
      s.Remove(n);
      s.ReturnMemory(&s.free_list, n, true);
    }
    s.spare_groups.push_back(std::move(group));  // empty now
  }
  s.groups.clear();
  s.barrier_open = false;
  return Status::Ok();
}

std::size_t BufferPool::num_blocks() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->roots.size();
}

AllocatorStats BufferPool::DoGetStats() const {
  const State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  AllocatorStats st = s.stats;
  st.free_bytes = s.free_bytes;
  std::uint64_t largest = s.free_list.empty() ? 0 : s.free_list.Last()->size;
  for (const auto& g : s.groups)
    if (!g->empty()) largest = std::max(largest, g->Last()->size);
  st.largest_free_block = largest;
  st.fragmentation = FragmentationMetric(largest, st.free_bytes);
  return st;
}

}  // namespace tensormem
