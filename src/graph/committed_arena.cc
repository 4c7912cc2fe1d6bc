// SPDX-License-Identifier: Apache-2.0
// Committing a graph plan to memory, as TFLite's SimpleMemoryArena::Commit:
// one aligned block per arena, grown (new block, contents copied, old block
// freed) when a plan needs more, never shrunk until released. Tensor
// pointers are base + offset.
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "tensormem/graph.h"

namespace tensormem {

CommittedArenas::~CommittedArenas() { Release(); }

CommittedArenas::CommittedArenas(CommittedArenas&& other) noexcept
    : scratch_(std::exchange(other.scratch_, {})),
      persistent_(std::exchange(other.persistent_, {})),
      placements_(std::move(other.placements_)) {}

CommittedArenas& CommittedArenas::operator=(CommittedArenas&& other) noexcept {
  if (this != &other) {
    Release();
    scratch_ = std::exchange(other.scratch_, {});
    persistent_ = std::exchange(other.persistent_, {});
    placements_ = std::move(other.placements_);
  }
  return *this;
}

void CommittedArenas::Free(Block& block) {
  if (block.data) ::operator delete(block.data, std::align_val_t(block.alignment));
  block.data = nullptr;
  block.capacity = 0;
}

Status CommittedArenas::Reserve(Block& block, std::uint64_t bytes, std::uint64_t alignment,
                                bool keep) {
  block.needed = bytes;
  const bool misaligned = block.data && reinterpret_cast<std::uintptr_t>(block.data) % alignment;
  if (bytes <= block.capacity && !misaligned) return Status::Ok();
  if (bytes == 0) return Status::Ok();  // a zero-byte arena allocates nothing
  const std::uint64_t size = std::max(bytes, block.capacity);  // never shrinks
  if (size > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max() / 2))
    return ResourceExhausted("arena of " + std::to_string(size) + " bytes is too large");
  const std::uint64_t align = std::max<std::uint64_t>({alignment, block.alignment, alignof(std::max_align_t)});
  void* p = ::operator new(static_cast<std::size_t>(size), std::align_val_t(align), std::nothrow);
  if (!p)
    return ResourceExhausted("cannot allocate an arena of " + std::to_string(size) + " bytes");
  auto* data = static_cast<std::byte*>(p);
  if (keep && block.data) std::memcpy(data, block.data, static_cast<std::size_t>(block.capacity));
  Free(block);
  block.data = data;
  block.capacity = size;
  block.alignment = align;
  ++block.allocations;
  return Status::Ok();
}

Status CommittedArenas::Commit(const GraphPlan& plan) {
  const std::uint64_t align = plan.base_alignment;
  TM_RETURN_IF_ERROR(ValidateAlignment(align, "GraphPlan::base_alignment"));
  TM_RETURN_IF_ERROR(Reserve(scratch_, plan.scratch_bytes(), align, /*keep=*/true));
  TM_RETURN_IF_ERROR(Reserve(persistent_, plan.persistent_bytes, align, /*keep=*/true));
  placements_ = plan.placements;
  return Status::Ok();
}

void CommittedArenas::ReleaseScratch() { Free(scratch_); }

Status CommittedArenas::AcquireScratch() {
  return Reserve(scratch_, scratch_.needed, scratch_.alignment, /*keep=*/true);
}

void CommittedArenas::Release() {
  Free(scratch_);
  Free(persistent_);
}

std::byte* CommittedArenas::Resolve(int tensor) const {
  if (tensor < 0 || static_cast<std::size_t>(tensor) >= placements_.size()) return nullptr;
  const TensorPlacement& p = placements_[static_cast<std::size_t>(tensor)];
  if (p.arena == Arena::kNone) return nullptr;
  const Block& b = block(p.arena);
  return b.data ? b.data + p.offset : nullptr;
}

std::byte* CommittedArenas::base(Arena arena) const {
  return arena == Arena::kNone ? nullptr : block(arena).data;
}
std::uint64_t CommittedArenas::capacity(Arena arena) const {
  return arena == Arena::kNone ? 0 : block(arena).capacity;
}
std::uint64_t CommittedArenas::alignment(Arena arena) const {
  return arena == Arena::kNone ? 1 : block(arena).alignment;
}
int CommittedArenas::reallocations(Arena arena) const {
  return arena == Arena::kNone ? 0 : block(arena).allocations;
}

}  // namespace tensormem
