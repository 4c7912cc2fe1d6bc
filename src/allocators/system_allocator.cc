// SPDX-License-Identifier: Apache-2.0
// The system allocator (MNN DefaultAllocator): malloc(bytes + alignment +
// header), the address moved up to the alignment, and a header just below
// the returned block holding the original pointer and the size. Statistics
// are atomics; the live-pointer set (when tracking) is a hash set under a
// mutex.
#include "tensormem/allocators/system_allocator.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_set>

namespace tensormem {
namespace {

struct Header {
  void* original;
  std::uint64_t bytes;     // requested
  std::uint64_t reserved;  // asked of malloc
};

void UpdateMax(std::atomic<std::uint64_t>& max, std::uint64_t v) {
  std::uint64_t cur = max.load(std::memory_order_relaxed);
  while (v > cur && !max.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

struct SystemAllocator::State {
  SystemAllocatorParams params;
  std::mutex mutex;
  std::unordered_set<void*> live;
  std::atomic<std::uint64_t> allocs{0}, frees{0}, failed{0};
  std::atomic<std::uint64_t> in_use{0}, peak_in_use{0}, largest{0};
  std::atomic<std::uint64_t> reserved{0}, peak_reserved{0};
};

Status Validate(const SystemAllocatorParams&) { return Status::Ok(); }

Result<std::unique_ptr<SystemAllocator>> SystemAllocator::Create(const SystemAllocatorParams& params) {
  TM_RETURN_IF_ERROR(Validate(params));
  return std::make_unique<SystemAllocator>(params);
}

SystemAllocator::SystemAllocator(const SystemAllocatorParams& params)
    : state_(std::make_unique<State>()) {
  state_->params = params;
}

SystemAllocator::~SystemAllocator() {
  // Blocks still live are the caller's leak, but with tracking we can return them.
  for (void* p : state_->live) std::free(reinterpret_cast<Header*>(p)[-1].original);
}

Result<void*> SystemAllocator::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  State& s = *state_;
  if (alignment < alignof(Header)) alignment = alignof(Header);
  const std::uint64_t total = bytes + alignment + sizeof(Header);  // bytes <= 2^62: no overflow
  void* original = std::malloc(total);
  if (original == nullptr) {
    s.failed.fetch_add(1, std::memory_order_relaxed);
    return ResourceExhausted("system: malloc(" + std::to_string(total) + ") failed for " +
                             std::to_string(bytes) + " bytes aligned to " +
                             std::to_string(alignment));
  }
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(original) + sizeof(Header);
  const std::uintptr_t aligned = (start + alignment - 1) & ~static_cast<std::uintptr_t>(alignment - 1);
  void* block = reinterpret_cast<void*>(aligned);
  reinterpret_cast<Header*>(block)[-1] = Header{original, bytes, total};
  if (s.params.track_pointers) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.live.insert(block);
  }
  s.allocs.fetch_add(1, std::memory_order_relaxed);
  UpdateMax(s.peak_in_use, s.in_use.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  UpdateMax(s.peak_reserved, s.reserved.fetch_add(total, std::memory_order_relaxed) + total);
  UpdateMax(s.largest, bytes);
  return block;
}

Status SystemAllocator::DoDeallocate(void* pointer) {
  State& s = *state_;
  if (s.params.track_pointers) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.live.erase(pointer) == 0)
      return NotFound("system: " + PointerToString(pointer) +
                      " is not a live allocation of this allocator (freed twice, or never "
                      "allocated here)");
  }
  const Header h = reinterpret_cast<Header*>(pointer)[-1];
  std::free(h.original);
  s.frees.fetch_add(1, std::memory_order_relaxed);
  s.in_use.fetch_sub(h.bytes, std::memory_order_relaxed);
  s.reserved.fetch_sub(h.reserved, std::memory_order_relaxed);
  return Status::Ok();
}

AllocatorStats SystemAllocator::DoGetStats() const {
  const State& s = *state_;
  AllocatorStats st;
  st.num_allocs = s.allocs.load();
  st.num_frees = s.frees.load();
  st.num_failed_allocs = s.failed.load();
  st.bytes_in_use = s.in_use.load();
  st.peak_bytes_in_use = s.peak_in_use.load();
  st.largest_alloc_size = s.largest.load();
  st.bytes_reserved = s.reserved.load();
  st.peak_bytes_reserved = s.peak_reserved.load();
  return st;
}

}  // namespace tensormem
