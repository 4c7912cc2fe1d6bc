// SPDX-License-Identifier: Apache-2.0
// The vmm allocator (see vmm_allocator.h for the policy, vmm_state.h for
// how the files that implement it fit): the public calls, each under the
// one lock, Validate and Create (which reserves the two address spaces),
// the statistics and the memory report.
#include "tensormem/allocators/vmm_allocator.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "allocators/vmm_state.h"

namespace tensormem {
namespace vmm {

AllocatorStats VmmState::Stats() const {
  AllocatorStats st = stats;
  st.bytes_reserved = held * g;
  st.peak_bytes_reserved = peak_held * g;
  st.bytes_limit = params.memory_limit;
  st.free_bytes = st.bytes_reserved > st.bytes_in_use ? st.bytes_reserved - st.bytes_in_use : 0;
  // Whole free granules can back one request of their total size anywhere.
  st.largest_free_block = std::min(st.free_bytes, (cached_pages + pool.size()) * g);
  st.fragmentation = FragmentationMetric(st.largest_free_block, st.free_bytes);
  return st;
}

std::string VmmState::Report(std::size_t max_blocks) const {
  std::ostringstream out;
  const AllocatorStats st = Stats();
  out << "vmm over " << memory->description() << ": limit "
      << (params.memory_limit ? HumanBytes(*params.memory_limit) : std::string("none")) << ", held "
      << HumanBytes(held * g) << " (" << held << " granules: " << (held - cached_pages - pool.size())
      << " backing live blocks, " << cached_pages << " cached, " << pool.size() << " unmapped), in use "
      << HumanBytes(st.bytes_in_use) << " in " << live.size() + deferred.size() << " blocks";
  if (!deferred.empty())
    out << " (" << deferred.size() << " of them, " << HumanBytes(deferred_bytes)
        << ", freed and waiting for other streams' work: record_stream)";
  out << ", peak held " << HumanBytes(peak_held * g) << "\n";
  for (const Space& s : spaces) {
    if (s.base == nullptr) continue;
    std::uint64_t free_bytes = 0, largest = 0;
    for (const FreeKey& k : s.free_blocks) {
      free_bytes += k.size;
      largest = std::max(largest, k.size);
    }
    out << SpaceName(s) << ": " << s.live_blocks << " live blocks, "
        << s.free_blocks.size() << " free blocks (" << HumanBytes(free_bytes) << ", largest "
        << HumanBytes(largest) << "), top at " << HumanBytes(s.top) << "\n";
    std::size_t listed = 0;
    for (const Block* b = s.tail; b != nullptr && listed < max_blocks; b = b->prev, ++listed)
      out << "  " << PointerToString(s.base + b->offset) << " " << b->size << (b->free ? " free" : " used")
          << "\n";
  }
  return out.str();
}

}  // namespace vmm

using vmm::kSmall;
using vmm::Page;
using vmm::RoundUp;
using vmm::Space;

namespace {
// A parameter that must lie in [0, 1] (NaN does not).
Status CheckFraction(const char* name, double value) {
  if (value >= 0.0 && value <= 1.0) return Status::Ok();
  std::ostringstream text;
  text << value;
  return InvalidArgument(std::string("vmm: ") + name + " " + text.str() + " is not between 0 and 1");
}
}  // namespace

Status Validate(const VmmParams& params) {
  if (!IsPowerOfTwo(params.block_rounding_bytes) || params.block_rounding_bytes < 256 ||
      params.block_rounding_bytes > (std::uint64_t{64} << 10))
    return InvalidArgument("vmm: block_rounding_bytes " + std::to_string(params.block_rounding_bytes) +
                           " is not a power of two between 256 and 65536");
  if (params.memory_limit && *params.memory_limit == 0)
    return InvalidArgument("vmm: memory_limit 0 leaves nothing to allocate");
  if (params.address_space_bytes < (std::uint64_t{1} << 21) ||
      params.address_space_bytes > (std::uint64_t{1} << 46))
    return InvalidArgument("vmm: address_space_bytes " + std::to_string(params.address_space_bytes) +
                           " is not between 2 MiB and 64 TiB");
  if (params.max_handle_granules < 1 || params.max_handle_granules > (std::uint64_t{1} << 20))
    return InvalidArgument("vmm: max_handle_granules " + std::to_string(params.max_handle_granules) +
                           " is not between 1 and 2^20");
  TM_RETURN_IF_ERROR(CheckFraction("growth_slack", params.growth_slack));
  TM_RETURN_IF_ERROR(CheckFraction("grow_ahead", params.grow_ahead));
  if (params.small_request_bytes > params.address_space_bytes / 2)
    return InvalidArgument("vmm: small_request_bytes " + std::to_string(params.small_request_bytes) +
                           " is more than half the address space");
  return Status::Ok();
}

namespace {

// Reserves the addresses of a space: `asked` bytes, halved until the system
// grants them (address space can be scarce: ulimit -v, sanitizers), down to
// 1/1024 of it.
Status ReserveSpace(PhysicalMemory& memory, std::uint64_t asked, std::uint64_t g, Space& sp, const std::string& name) {
  std::uint64_t size = asked;
  Status last = Status::Ok();
  while (size >= g && size >= asked / 1024) {
    Result<void*> r = memory.ReserveAddressRange(size);
    if (r.ok()) {
      sp.base = static_cast<char*>(*r);
      sp.size = size;
      break;
    }
    last = r.status();
    size = size / 2 / g * g;
  }
  if (sp.base == nullptr)
    return ResourceExhausted("vmm: cannot reserve addresses for the " + name + ": " + last.message());
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<VmmAllocator>> VmmAllocator::Create(PhysicalMemory& memory, const VmmParams& params) {
  TM_RETURN_IF_ERROR(Validate(params));
  auto state = std::make_unique<State>();
  State& s = *state;
  s.memory = &memory;
  s.params = params;
  s.g = memory.granularity();
  if (!IsPowerOfTwo(s.g))
    return InvalidArgument("vmm: the physical memory's granularity " + std::to_string(s.g) +
                           " is not a power of two");
  s.g_shift = std::countr_zero(s.g);
  if (params.block_rounding_bytes > s.g)
    return InvalidArgument("vmm: block_rounding_bytes " + std::to_string(params.block_rounding_bytes) +
                           " is more than the granularity " + std::to_string(s.g));
  if (params.memory_limit && *params.memory_limit < s.g)
    return InvalidArgument("vmm: memory_limit " + std::to_string(*params.memory_limit) +
                           " is less than one granule (" + std::to_string(s.g) + " bytes)");
  s.has_small = params.small_request_bytes > 0;
  for (int i = 0; i < 2; ++i) {
    Space& sp = s.spaces[i];
    sp.index = i;
    if (i == kSmall && !s.has_small) continue;
    TM_RETURN_IF_ERROR(ReserveSpace(memory, RoundUp(params.address_space_bytes, s.g), s.g, sp, s.SpaceName(sp)));
  }
  return std::unique_ptr<VmmAllocator>(new VmmAllocator(std::move(state)));
}

VmmAllocator::VmmAllocator(std::unique_ptr<State> state) : state_(std::move(state)) {}

VmmAllocator::~VmmAllocator() {
  State& s = *state_;
  (void)s.memory->Synchronize();
  for (Space& sp : s.spaces) {
    if (sp.base == nullptr) continue;
    for (std::uint64_t i = 0; i < sp.pages.size(); ++i) {
      const Page& p = sp.pages[i];
      if (!p.mapped || p.head_offset != 0) continue;  // a run handle goes with its first page
      (void)s.memory->Unmap(sp.base + i * s.g, 1, p.handle_pages);
      if (p.handle_pages == 1)
        s.pool.push_back(p.granule);
      else
        (void)s.memory->ReleaseGranule(p.granule, p.handle_pages);
    }
    (void)s.memory->FreeAddressRange(sp.base, sp.size);
  }
  for (GranuleHandle h : s.pool) (void)s.memory->ReleaseGranule(h);
  for (auto& [event, refs] : s.event_refs) s.memory->DestroyEvent(event);
}

Result<void*> VmmAllocator::AllocateAsync(std::uint64_t bytes, StreamHandle stream, std::uint64_t alignment) {
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "vmm", kMaxAllocationAlignment));
  if (bytes > (std::uint64_t{1} << 62))
    return ResourceExhausted("vmm: cannot allocate " + std::to_string(bytes) + " bytes (more than 2^62)");
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Allocate(bytes == 0 ? 1 : bytes, alignment, stream);
}

Status VmmAllocator::DeallocateAsync(void* pointer, StreamHandle stream) {
  if (pointer == nullptr) return Status::Ok();
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Deallocate(pointer, stream);
}

Status VmmAllocator::RecordStream(void* pointer, StreamHandle stream) {
  if (pointer == nullptr) return InvalidArgument("vmm: record_stream of a null pointer");
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->RecordStream(pointer, stream);
}

bool VmmAllocator::Owns(const void* pointer) const { return state_->Owns(pointer); }

Result<void*> VmmAllocator::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Allocate(bytes, alignment, 0);
}

Status VmmAllocator::DoDeallocate(void* pointer) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Deallocate(pointer, 0);
}

AllocatorStats VmmAllocator::DoGetStats() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Stats();
}

Result<std::uint64_t> VmmAllocator::ReleaseCachedMemory() {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->ReleaseCached();
}

std::string VmmAllocator::MemoryReport(std::size_t max_blocks) const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Report(max_blocks);
}

VmmAllocator::Counters VmmAllocator::counters() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->counters;
}

VmmParams VmmAllocator::params() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->params;
}

Status VmmAllocator::SetMemoryLimit(std::optional<std::uint64_t> limit) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  if (limit && *limit < state_->g)
    return InvalidArgument("vmm: memory limit " + std::to_string(*limit) + " is less than one granule (" +
                           std::to_string(state_->g) + " bytes)");
  state_->params.memory_limit = limit;
  return Status::Ok();
}
std::uint64_t VmmAllocator::granularity() const { return state_->g; }

}  // namespace tensormem
