// SPDX-License-Identifier: Apache-2.0
// The buffer pool's defer mode: virtual chunks are recorded with the order
// of events (each DeferAllocate / DeferFree is one task), then planned as an
// offsets problem by the static planner (tensormem::PlanOffsets) and backed
// by one arena block from the pool's backend.
#include <algorithm>

#include "allocators/buffer_pool_state.h"
#include "tensormem/planning.h"

namespace tensormem {

Result<DeferredChunk> BufferPool::DeferAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  if (!state_->valid.ok()) return state_->valid;
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "pool: DeferAllocate", kMaxAllocationAlignment));
  if (bytes > (std::uint64_t{1} << 62))
    return ResourceExhausted("pool: DeferAllocate: " + std::to_string(bytes) +
                             " bytes is more than 2^62");
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  pool::DeferredRecord r;
  r.bytes = bytes == 0 ? 1 : bytes;
  r.alignment = alignment;
  r.first_event = s.next_event++;
  s.deferred.push_back(r);
  return DeferredChunk{s.deferred.size() - 1};
}

Status BufferPool::DeferFree(DeferredChunk chunk) {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (chunk.id >= s.deferred.size())
    return NotFound("pool: DeferFree: no deferred chunk " + std::to_string(chunk.id));
  pool::DeferredRecord& r = s.deferred[chunk.id];
  if (r.free_event >= 0)
    return FailedPrecondition("pool: DeferFree: deferred chunk " + std::to_string(chunk.id) +
                              " was already freed");
  // A later free only shortens a lifetime, so an existing plan stays valid.
  r.free_event = s.next_event++;
  return Status::Ok();
}

Status BufferPool::DeferCompute() {
  State& s = *state_;
  if (!s.valid.ok()) return s.valid;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  Problem problem;
  problem.buffers.reserve(s.deferred.size());
  const std::int64_t last_event = std::max<std::int64_t>(0, s.next_event - 1);
  std::uint64_t max_alignment = s.params.split_granularity;
  for (std::size_t i = 0; i < s.deferred.size(); ++i) {
    const pool::DeferredRecord& r = s.deferred[i];
    Buffer b;
    b.id = "chunk" + std::to_string(i);
    b.size = r.bytes;
    b.first_task = r.first_event;
    b.last_task = r.free_event >= 0 ? r.free_event : last_event;
    b.alignment = r.alignment;
    max_alignment = std::max(max_alignment, r.alignment);
    problem.buffers.push_back(std::move(b));
  }
  PlanParams params;
  params.alignment = s.params.split_granularity;
  TM_ASSIGN_OR_RETURN(OffsetsPlan plan, PlanOffsets(problem, s.params.defer_strategy, params));
  // A new arena when the plan needs more bytes, or a larger alignment than
  // the one it has (chunks recorded since may ask for more).
  if (s.deferred_arena == nullptr || s.deferred_arena_bytes < plan.total ||
      reinterpret_cast<std::uintptr_t>(s.deferred_arena) % max_alignment != 0) {
    if (s.deferred_arena != nullptr) TM_RETURN_IF_ERROR(s.Free(s.deferred_arena));
    s.deferred_arena = nullptr;
    s.deferred_arena_bytes = 0;
    Result<void*> arena = s.Allocate(std::max<std::uint64_t>(plan.total, 1), max_alignment, true);
    if (!arena.ok()) return arena.status().WithContext("pool: DeferCompute: the planned arena");
    s.deferred_arena = *arena;
    s.deferred_arena_bytes = plan.total;
  }
  for (std::size_t i = 0; i < s.deferred.size(); ++i) s.deferred[i].offset = plan.offsets[i];
  s.planned_count = s.deferred.size();
  s.deferred_lower_bound = plan.lower_bound;
  return Status::Ok();
}

Result<void*> BufferPool::Address(DeferredChunk chunk) const {
  const State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (chunk.id >= s.deferred.size())
    return NotFound("pool: Address: no deferred chunk " + std::to_string(chunk.id));
  if (chunk.id >= s.planned_count || s.deferred_arena == nullptr)
    return FailedPrecondition("pool: Address: deferred chunk " + std::to_string(chunk.id) +
                              " has not been planned yet (call DeferCompute)");
  return static_cast<void*>(static_cast<char*>(s.deferred_arena) + s.deferred[chunk.id].offset);
}

std::uint64_t BufferPool::deferred_arena_bytes() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->deferred_arena_bytes;
}

std::uint64_t BufferPool::deferred_lower_bound() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->deferred_lower_bound;
}

Status BufferPool::DeferReset() {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (s.deferred_arena != nullptr) TM_RETURN_IF_ERROR(s.Free(s.deferred_arena));
  s.deferred_arena = nullptr;
  s.deferred_arena_bytes = 0;
  s.deferred_lower_bound = 0;
  s.deferred.clear();
  s.next_event = 0;
  s.planned_count = 0;
  return Status::Ok();
}

}  // namespace tensormem
