// SPDX-License-Identifier: Apache-2.0
// StatisticsAdaptor: counts requested bytes per pointer (a map under a
// mutex); reserved bytes, free bytes and fragmentation come from below.
#include <mutex>

#include "allocators/adaptor_util.h"
#include "tensormem/allocators/adaptors.h"

namespace tensormem {

StatisticsAdaptor::StatisticsAdaptor(MemoryResource& upstream)
    : upstream_(upstream), sizes_(std::make_unique<internal::LiveSizes>()) {}
StatisticsAdaptor::~StatisticsAdaptor() = default;

Result<void*> StatisticsAdaptor::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  Result<void*> p = upstream_.Allocate(bytes, alignment);
  std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
  if (!p.ok()) {
    ++stats_.num_failed_allocs;
    return p;
  }
  sizes_->Insert(*p, bytes);
  ++stats_.num_allocs;
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.largest_alloc_size = std::max(stats_.largest_alloc_size, bytes);
  return p;
}

Status StatisticsAdaptor::DoDeallocate(void* pointer) {
  return adaptors::ForgetThenDeallocate(upstream_, pointer, *sizes_, [&](std::uint64_t bytes) {
    ++stats_.num_frees;
    stats_.bytes_in_use -= bytes;
  });
}

AllocatorStats StatisticsAdaptor::DoGetStats() const {
  const AllocatorStats below = upstream_.GetStats();
  std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
  AllocatorStats st = stats_;
  st.bytes_reserved = below.bytes_reserved;
  st.peak_bytes_reserved = below.peak_bytes_reserved;
  st.bytes_limit = below.bytes_limit;
  st.free_bytes = below.free_bytes;
  st.largest_free_block = below.largest_free_block;
  st.fragmentation = below.fragmentation;
  return st;
}

}  // namespace tensormem
