// Shared by the adaptors that remember the requested size of each live
// pointer (internal).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "tensormem/allocators/resource.h"

namespace tensormem::adaptors {

// Frees `pointer` in `upstream`. Its recorded size is forgotten first, so
// that once the resource below can hand the address to another thread, that
// thread's allocation is recorded anew; it is restored when below refuses.
// `on_freed(bytes)` runs under `mutex` after below freed a pointer that was
// recorded (pointers allocated below before the adaptor existed are not).
template <typename OnFreed>
Status ForgetThenDeallocate(MemoryResource& upstream, void* pointer, std::mutex& mutex,
                            std::unordered_map<void*, std::uint64_t>& sizes, OnFreed&& on_freed) {
  std::optional<std::uint64_t> bytes;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = sizes.find(pointer);
    if (it != sizes.end()) {
      bytes = it->second;
      sizes.erase(it);
    }
  }
  Status st = upstream.Deallocate(pointer);
  std::lock_guard<std::mutex> lock(mutex);
  if (!st.ok()) {
    if (bytes) sizes.emplace(pointer, *bytes);
    return st;
  }
  if (bytes) on_freed(*bytes);
  return Status::Ok();
}

}  // namespace tensormem::adaptors
