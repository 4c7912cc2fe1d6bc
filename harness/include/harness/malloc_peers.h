// SPDX-License-Identifier: Apache-2.0
// The system allocators the replay compares against, loaded at run time
// with dlopen (by replay.cc, and by allocators_bench, which times them
// directly): glibc malloc, jemalloc, mimalloc.
#pragma once

#include <cstdint>
#include <string>

#include "harness/replay.h"

namespace tensormem::replay {

struct MallocPeer {
  void* (*malloc_fn)(std::size_t) = nullptr;
  int (*posix_memalign_fn)(void**, std::size_t, std::size_t) = nullptr;
  void* (*aligned_fn)(std::size_t, std::size_t) = nullptr;  // mimalloc: mi_malloc_aligned(size, align)
  void (*free_fn)(void*) = nullptr;
  // The bytes the peer holds from the OS by its own statistics.
  std::uint64_t (*reserved_fn)(const MallocPeer&) = nullptr;
  // When set: false only where the reserved figure cannot have grown since
  // the last time this returned true (then `reserved_fn` need not be asked
  // after an allocation of `bytes`). glibc's mallinfo2 walks every free
  // chunk, so sampling it after every allocation in a fragmented heap takes
  // minutes; this asks it only when the heap's break moved or the request
  // could be mmapped.
  bool (*reserved_may_have_grown_fn)(std::size_t bytes, std::size_t alignment) = nullptr;
  void* handle = nullptr;
  const char* reserved_source = "";

  void* Allocate(std::size_t bytes, std::size_t alignment) const {
    if (alignment <= 16) return malloc_fn(bytes);
    if (aligned_fn != nullptr) return aligned_fn(bytes, alignment);
    void* p = nullptr;
    return posix_memalign_fn(&p, alignment, bytes) == 0 ? p : nullptr;
  }
  std::uint64_t Reserved() const { return reserved_fn(*this); }
  bool ReservedMayHaveGrown(std::size_t bytes, std::size_t alignment) const {
    return reserved_may_have_grown_fn == nullptr || reserved_may_have_grown_fn(bytes, alignment);
  }
};

// Loads (once per process) and returns the peer; NotFound with the reason
// when its library is absent or cannot be loaded.
Result<MallocPeer> LoadMallocPeer(ReplayAllocator peer);

}  // namespace tensormem::replay
