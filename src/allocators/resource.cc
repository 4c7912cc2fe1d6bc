// SPDX-License-Identifier: Apache-2.0
// The non-virtual front of MemoryResource: argument checks shared by every
// allocator, and the formatting helpers of its reports.
#include "tensormem/allocators/resource.h"

#include <cinttypes>
#include <cstdio>

namespace tensormem {

Result<void*> MemoryResource::Allocate(std::uint64_t bytes, std::uint64_t alignment) {
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, name(), kMaxAllocationAlignment));
  // Half the address space: beyond it no size computation below can be
  // trusted not to overflow, and no memory can serve it anyway.
  if (bytes > (std::uint64_t{1} << 62))
    return ResourceExhausted(std::string(name()) + ": cannot allocate " + std::to_string(bytes) +
                             " bytes (more than 2^62)");
  return DoAllocate(bytes == 0 ? 1 : bytes, alignment);
}

Status MemoryResource::Deallocate(void* pointer) {
  if (pointer == nullptr) return Status::Ok();
  return DoDeallocate(pointer);
}

double FragmentationMetric(std::uint64_t largest_free, std::uint64_t free_bytes) {
  if (free_bytes == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free) / static_cast<double>(free_bytes);
}

std::string PointerToString(const void* pointer) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, reinterpret_cast<std::uintptr_t>(pointer));
  return buf;
}

std::string HumanBytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string AllocatorStats::ToString() const {
  std::string s = "allocs " + std::to_string(num_allocs) + ", frees " + std::to_string(num_frees) +
                  ", failed " + std::to_string(num_failed_allocs) + ", in use " +
                  HumanBytes(bytes_in_use) + " (peak " + HumanBytes(peak_bytes_in_use) +
                  "), largest allocation " + HumanBytes(largest_alloc_size) + ", reserved " +
                  HumanBytes(bytes_reserved) + " (peak " + HumanBytes(peak_bytes_reserved) +
                  "), limit " + (bytes_limit ? HumanBytes(*bytes_limit) : std::string("none")) +
                  ", free " + HumanBytes(free_bytes) + ", largest free block " +
                  HumanBytes(largest_free_block);
  char buf[48];
  std::snprintf(buf, sizeof buf, ", fragmentation %.3f", fragmentation);
  return s + buf;
}

}  // namespace tensormem
