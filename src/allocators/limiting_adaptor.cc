// SPDX-License-Identifier: Apache-2.0
// LimitingAdaptor: the requested bytes in use may not exceed the limit; the
// check and the count happen under one mutex so concurrent callers cannot
// overshoot together. A refused request never reaches the resource below.
#include <mutex>

#include "allocators/adaptor_util.h"
#include "tensormem/allocators/adaptors.h"

namespace tensormem {

LimitingAdaptor::LimitingAdaptor(MemoryResource& upstream, std::uint64_t limit)
    : upstream_(upstream), limit_(limit), sizes_(std::make_unique<internal::LiveSizes>()) {}
LimitingAdaptor::~LimitingAdaptor() = default;

Result<void*> LimitingAdaptor::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  {
    std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
    if (bytes > limit_ || in_use_ > limit_ - bytes) {
      ++failed_;
      return ResourceExhausted("limiting: " + std::to_string(bytes) + " bytes more would exceed "
                               "the limit of " + std::to_string(limit_) + " bytes (" +
                               std::to_string(in_use_) + " in use)");
    }
    in_use_ += bytes;  // held while the resource below works
  }
  Result<void*> p = upstream_.Allocate(bytes, alignment);
  std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
  if (!p.ok()) {
    in_use_ -= bytes;
    ++failed_;
    return p;
  }
  sizes_->Insert(*p, bytes);
  return p;
}

Status LimitingAdaptor::DoDeallocate(void* pointer) {
  // The bytes stay counted until the free below succeeded.
  return adaptors::ForgetThenDeallocate(upstream_, pointer, *sizes_,
                                        [&](std::uint64_t bytes) { in_use_ -= bytes; });
}

AllocatorStats LimitingAdaptor::DoGetStats() const {
  AllocatorStats st = upstream_.GetStats();
  std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
  st.bytes_limit = st.bytes_limit ? std::min(*st.bytes_limit, limit_) : limit_;
  st.num_failed_allocs += failed_;
  return st;
}

}  // namespace tensormem
