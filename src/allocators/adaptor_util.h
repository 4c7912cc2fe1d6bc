// SPDX-License-Identifier: Apache-2.0
// Shared by the adaptors that remember the requested size of each live
// pointer (internal).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "allocators/adaptive_mutex.h"
#include "allocators/pointer_map.h"
#include "tensormem/allocators/resource.h"

namespace tensormem {
namespace internal {
// The adaptors' map of requested bytes per live pointer (declared in the
// public header, defined here so the map's type stays internal), with the
// adaptor's one lock, which guards the map and the adaptor's counters.
class LiveSizes : public PointerMap<std::uint64_t> {
 public:
  AdaptiveMutex mutex;
};
}  // namespace internal

namespace adaptors {

// Frees `pointer` in `upstream`. Its recorded size is forgotten first, so
// that once the resource below can hand the address to another thread, that
// thread's allocation is recorded anew; it is restored when below refuses.
// `on_freed(bytes)` runs under `sizes.mutex` after below freed a pointer that was
// recorded (pointers allocated below before the adaptor existed are not).
template <typename OnFreed>
Status ForgetThenDeallocate(MemoryResource& upstream, void* pointer, internal::LiveSizes& sizes,
                            OnFreed&& on_freed) {
  std::optional<std::uint64_t> bytes;
  {
    std::lock_guard<internal::AdaptiveMutex> lock(sizes.mutex);
    if (const std::uint64_t* b = sizes.Find(pointer)) {
      bytes = *b;
      sizes.Erase(pointer);
    }
  }
  Status st = upstream.Deallocate(pointer);
  std::lock_guard<internal::AdaptiveMutex> lock(sizes.mutex);
  if (!st.ok()) {
    if (bytes) sizes.Insert(pointer, *bytes);
    return st;
  }
  if (bytes) on_freed(*bytes);
  return Status::Ok();
}

}  // namespace adaptors
}  // namespace tensormem
