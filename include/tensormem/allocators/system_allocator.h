// SPDX-License-Identifier: Apache-2.0
// The system allocator (MNN DefaultAllocator): aligned allocation on top of
// malloc. It over-allocates by alignment + a small header, aligns the
// address, and stashes the original pointer (and the size) just below the
// returned block; free goes through the stashed pointer.
//
// Live pointers are tracked (a hash set under a mutex) so that a double free
// or a foreign pointer is reported instead of handed to free(); tracking can
// be turned off for raw speed, and then such misuse is undefined behaviour,
// exactly as with malloc.
#pragma once

#include <cstdint>
#include <memory>

#include "tensormem/allocators/resource.h"

namespace tensormem {

struct SystemAllocatorParams {
  // Keep the set of live pointers to report double frees and foreign
  // pointers (costs a hash-set insert and erase per allocation).
  bool track_pointers = true;
};

// Every SystemAllocatorParams is valid today; kept so that every allocator's
// parameters are checked the same way.
Status Validate(const SystemAllocatorParams& params);

class SystemAllocator final : public MemoryResource {
 public:
  explicit SystemAllocator(const SystemAllocatorParams& params = {});
  static Result<std::unique_ptr<SystemAllocator>> Create(const SystemAllocatorParams& params = {});
  ~SystemAllocator() override;

 private:
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override;
  std::string_view DoName() const override { return "system"; }

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tensormem
