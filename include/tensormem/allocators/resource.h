// SPDX-License-Identifier: Apache-2.0
// The one allocator interface (RAPIDS RMM / std::pmr style): public
// non-virtual Allocate / Deallocate / GetStats that check their arguments and
// call private virtual hooks. Errors are values: an allocation that cannot be
// served returns ResourceExhausted with a report, a pointer that was not
// handed out (or was already freed) returns an error naming it, and neither
// changes the allocator's state.
//
// Every allocator in tensormem is a MemoryResource; statistics, limits and
// logging are adaptors that wrap any resource (adaptors.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

// The alignment Allocate uses when none is given (a cache line; what MNN and
// TensorFlow Lite use for tensors).
inline constexpr std::uint64_t kDefaultAllocationAlignment = 64;
// The largest alignment any allocator accepts (one huge page).
inline constexpr std::uint64_t kMaxAllocationAlignment = std::uint64_t{1} << 21;

constexpr bool IsPowerOfTwo(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// What an allocator reports about itself. "In use" counts the bytes the
// allocator has given to live allocations as it accounts them (the BFC
// allocator counts whole chunks, rounded to 256 bytes, as TensorFlow does;
// the system allocator counts the bytes requested). "Reserved" counts the
// bytes the allocator holds from the memory below it (its backend or malloc).
struct AllocatorStats {
  std::uint64_t num_allocs = 0;        // successful allocations so far
  std::uint64_t num_frees = 0;         // successful deallocations so far
  std::uint64_t num_failed_allocs = 0; // allocations refused (out of memory, over a limit)
  std::uint64_t bytes_in_use = 0;
  std::uint64_t peak_bytes_in_use = 0;
  std::uint64_t largest_alloc_size = 0;
  std::uint64_t bytes_reserved = 0;
  std::uint64_t peak_bytes_reserved = 0;
  std::optional<std::uint64_t> bytes_limit;  // unset = no limit of its own
  std::uint64_t free_bytes = 0;              // reserved, not in use, and reusable
  std::uint64_t largest_free_block = 0;
  // 1 - largest_free_block / free_bytes: 0 when the free memory is one block
  // (or there is none), near 1 when it is scattered in small pieces.
  double fragmentation = 0;

  // "allocs 3, frees 1, in use 512 B (peak 768 B), reserved 2 MiB ..."
  std::string ToString() const;
};

// 1 - largest_free / free (0 when free is 0).
double FragmentationMetric(std::uint64_t largest_free, std::uint64_t free_bytes);

class MemoryResource {
 public:
  MemoryResource() = default;
  MemoryResource(const MemoryResource&) = delete;
  MemoryResource& operator=(const MemoryResource&) = delete;
  virtual ~MemoryResource() = default;

  // A block of at least `bytes` bytes whose address is a multiple of
  // `alignment` (a power of two, at most kMaxAllocationAlignment). Zero bytes
  // are served as one byte, so every live allocation has its own address.
  Result<void*> Allocate(std::uint64_t bytes,
                         std::uint64_t alignment = kDefaultAllocationAlignment);

  // Returns a block from Allocate. Null is a no-op. A pointer this resource
  // did not hand out, or one already freed, is an error (NotFound or
  // FailedPrecondition) naming the pointer; the state is left unchanged.
  Status Deallocate(void* pointer);

  AllocatorStats GetStats() const { return DoGetStats(); }

  // A short name for reports ("bfc", "pool", "system", ...).
  std::string_view name() const { return DoName(); }

 private:
  virtual Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) = 0;
  virtual Status DoDeallocate(void* pointer) = 0;
  virtual AllocatorStats DoGetStats() const = 0;
  virtual std::string_view DoName() const = 0;
};

// "0x7f12a0000000"
std::string PointerToString(const void* pointer);
// "1.5 MiB" (binary units; bytes below 1 KiB as "123 B").
std::string HumanBytes(std::uint64_t bytes);

}  // namespace tensormem
