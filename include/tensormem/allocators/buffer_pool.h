// SPDX-License-Identifier: Apache-2.0
// The buffer pool: MNN's BufferAllocator.
//
// - A request is served from a free list keyed by size: the smallest free
//   block >= the request (the first of equal sizes); when the block's start
//   is not aligned, the pool walks up the list to the first block that still
//   fits after moving the start up. Otherwise a new block comes from the
//   backend, and it is recorded as used.
// - A larger free block is split: the front part (the request rounded up to
//   the pool's split granularity) is returned, the rest stays free; both halves know
//   their parent and the parent counts its children not in the free list.
//   When every child of a parent is free again they merge back into the
//   parent, recursively upward.
// - Groups: between BarrierBegin and BarrierEnd each thread may BeginGroup:
//   its frees then go to its group's own free list (no merging), and its
//   allocations look there first; BarrierEnd returns every group's blocks to
//   the main list (merging). Blocks freed by one parallel branch are thus
//   never reused by another before the barrier.
// - Release(kAll) returns every block to the backend (live pointers become
//   invalid); Release(kOnlyFree) only the blocks that are wholly free.
// - Defer mode: DeferAllocate / DeferFree record virtual chunks and the order
//   of events; DeferCompute builds a planning problem from the recorded
//   lifetimes (event i is task i; a chunk never freed lives to the end),
//   plans offsets with tensormem::PlanOffsets, allocates one arena block of
//   the planned size and makes Address(chunk) = arena + offset.
// - Thread-safe: one lock, which spins before it sleeps (docs/design/allocators.md).
#pragma once

#include <cstdint>
#include <memory>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/resource.h"
#include "tensormem/planning.h"

namespace tensormem {

struct BufferPoolParams {
  // A split keeps the front part rounded up to this many bytes
  // (MNN_MEMORY_ALIGN_DEFAULT = 64), and every block the pool reserves
  // starts on it. Not an alignment request: that is Allocate's argument. A
  // power of two. (Named `alignment` before issue 12.)
  std::uint64_t split_granularity = 64;
  // The static planner DeferCompute uses (greedy_by_size: best fit by size,
  // which reaches the lower bound on most real networks).
  OffsetsStrategy defer_strategy = OffsetsStrategy::kGreedyBySize;
};

// Checks every field once: split_granularity a power of two in [1,
// kMaxAllocationAlignment]; defer_strategy a known strategy.
Status Validate(const BufferPoolParams& params);

enum class PoolRelease {
  kAll,       // every block, used or free, goes back to the backend
  kOnlyFree,  // only blocks that are wholly free
};

// A virtual allocation of the defer mode.
struct DeferredChunk {
  std::uint64_t id = 0;
};

class BufferPool final : public MemoryResource {
 public:
  // The backend must outlive the pool.
  // Invalid params (see Validate) make every allocation fail with the
  // reason; Create reports it up front.
  explicit BufferPool(Backend& backend, const BufferPoolParams& params = {});
  static Result<std::unique_ptr<BufferPool>> Create(Backend& backend,
                                                    const BufferPoolParams& params = {});
  ~BufferPool() override;

  // A block that never comes from the free list (MNN `separate`): a new
  // backend block of its own.
  Result<void*> AllocateSeparate(std::uint64_t bytes,
                                 std::uint64_t alignment = kDefaultAllocationAlignment);

  // Fails with FailedPrecondition while a barrier is open. Returns the bytes
  // given back to the backend.
  Result<std::uint64_t> Release(PoolRelease mode);

  Status BarrierBegin();
  Status BeginGroup();  // for the calling thread; needs an open barrier
  Status EndGroup();    // for the calling thread
  Status BarrierEnd();  // needs every group ended

  // Defer mode. Recording may continue after DeferCompute; call it again to
  // re-plan (the arena grows when needed).
  Result<DeferredChunk> DeferAllocate(std::uint64_t bytes,
                                      std::uint64_t alignment = kDefaultAllocationAlignment);
  Status DeferFree(DeferredChunk chunk);
  Status DeferCompute();
  // Arena + offset; FailedPrecondition before DeferCompute has planned it.
  Result<void*> Address(DeferredChunk chunk) const;
  // The planned arena size and the lower bound (peak live bytes) of the plan.
  std::uint64_t deferred_arena_bytes() const;
  std::uint64_t deferred_lower_bound() const;
  // Frees the arena and forgets every recorded chunk.
  Status DeferReset();

  // Blocks held from the backend.
  std::size_t num_blocks() const;

 private:
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override;
  std::string_view DoName() const override { return "pool"; }

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tensormem
