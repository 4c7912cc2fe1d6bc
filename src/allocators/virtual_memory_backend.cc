// SPDX-License-Identifier: Apache-2.0
// VirtualMemoryBackend: one PROT_NONE reservation (MAP_NORESERVE, so it
// costs no memory), a bump pointer `top`, and the live regions in address
// order. Commit makes pages read-write up to a commit step past the page
// holding the new top; decommit (madvise DONTNEED, then PROT_NONE) happens
// when the top comes down by more than a step, so pages shared by two
// regions are never decommitted under a live one. Over a PhysicalMemory the
// page is its granule: each commit creates and maps one handle of all the
// granules it adds (a GPU pays per handle, not per granule), and
// decommitting unmaps and releases the handles wholly above what is kept.
// With release_granules each granule is its own handle instead, so that a
// user (bfc_compact) can give back any granule inside a region and take it
// again (Decommit / Recommit of a range).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/checked_math.h"
#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/resource.h"
#include "tensormem/types.h"

namespace tensormem {

struct VirtualMemoryBackend::State {
  std::mutex mutex;
  PhysicalMemory* physical = nullptr;   // null: anonymous host pages
  bool release_granules = false;        // physical: a handle per granule
  // Physical: the handles mapped, by offset (with release_granules, holes
  // where granules were given back).
  struct Mapped {
    GranuleHandle handle;
    std::uint64_t granules;
  };
  std::map<std::uint64_t, Mapped> mapped;
  Counters counters;

  char* base = nullptr;
  std::uint64_t size = 0;
  std::string error;  // why the reservation failed, if it did
  std::uint64_t page = 4096;
  std::uint64_t commit_step = 0;  // a page multiple
  std::uint64_t top = 0;        // offset of the next region
  std::uint64_t committed = 0;  // offset up to which pages are read-write (page multiple)
  std::uint64_t live_bytes = 0;
  std::map<std::uint64_t, std::uint64_t> live;  // offset -> bytes
};

namespace {
// Rounded up to whole pages without wrapping: a size near 2^64 (a caller's
// "as much as possible") stays the largest page multiple instead of 0.
std::uint64_t RoundUpToPage(std::uint64_t bytes, std::uint64_t page) {
  std::uint64_t up = 0;
  return internal::CheckedAlignUp(bytes, page, &up) ? up : bytes / page * page;
}
}  // namespace

VirtualMemoryBackend::VirtualMemoryBackend(std::uint64_t address_space, std::uint64_t commit_step)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) s.page = static_cast<std::uint64_t>(page);
  s.commit_step = RoundUpToPage(commit_step, s.page);
  // At least one page, as over granules (no size was refused with "Success").
  s.size = RoundUpToPage(std::max<std::uint64_t>(address_space, s.page), s.page);
  // Address space can be scarce (ulimit -v, sanitizer runtimes that own
  // most of it): halve the reservation until it succeeds, down to 1/1024 of
  // what was asked, rather than fail every later request.
  const std::uint64_t asked = s.size;
  void* p = MAP_FAILED;
  int error = 0;
  while (s.size >= s.page && s.size >= asked / 1024) {
    p = mmap(nullptr, s.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) break;
    error = errno;
    s.size = s.size / 2 / s.page * s.page;
  }
  if (p == MAP_FAILED) {
    s.error = "virtual backend: cannot reserve " + std::to_string(asked) +
              " bytes of address space, nor 1/1024 of it: " + std::strerror(error);
    s.size = 0;
    return;
  }
  s.base = static_cast<char*>(p);
}

VirtualMemoryBackend::VirtualMemoryBackend(PhysicalMemory& memory, std::uint64_t address_space,
                                           std::uint64_t commit_step, bool release_granules)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.physical = &memory;
  s.release_granules = release_granules;
  s.page = memory.granularity();
  s.commit_step = RoundUpToPage(commit_step, s.page);
  const std::uint64_t asked = RoundUpToPage(std::max<std::uint64_t>(address_space, s.page), s.page);
  s.size = asked;
  Status last = Status::Ok();
  while (s.size >= s.page && s.size >= asked / 1024) {
    Result<void*> r = memory.ReserveAddressRange(s.size);
    if (r.ok()) {
      s.base = static_cast<char*>(*r);
      return;
    }
    last = r.status();
    s.size = s.size / 2 / s.page * s.page;
  }
  s.error = "virtual backend: cannot reserve " + std::to_string(asked) + " bytes of addresses on " +
            memory.description() + ", nor 1/1024 of it: " + last.message();
  s.size = 0;
}

VirtualMemoryBackend::~VirtualMemoryBackend() {
  State& s = *state_;
  if (s.base == nullptr) return;
  if (s.physical == nullptr) {
    munmap(s.base, s.size);
    return;
  }
  (void)s.physical->Synchronize();
  for (const auto& [offset, m] : s.mapped) {
    (void)s.physical->Unmap(s.base + offset, 1, m.granules);
    (void)s.physical->ReleaseGranule(m.handle, m.granules);
  }
  (void)s.physical->FreeAddressRange(s.base, s.size);
}

bool VirtualMemoryBackend::host_accessible() const {
  return state_->physical == nullptr || state_->physical->host_accessible();
}

// Makes [committed, new_committed) usable.
Status VirtualMemoryBackend::Commit(State& s, std::uint64_t new_committed) {
  if (s.physical == nullptr) {
    if (mprotect(s.base + s.committed, new_committed - s.committed, PROT_READ | PROT_WRITE) != 0)
      return ResourceExhausted("virtual backend: cannot commit " +
                               std::to_string(new_committed - s.committed) + " bytes: " + std::strerror(errno));
    s.committed = new_committed;
    return Status::Ok();
  }
  const std::uint64_t count = (new_committed - s.committed) / s.page;
  if (s.release_granules) {
    TM_RETURN_IF_ERROR(MapSingleGranules(s, s.committed, count));
    s.committed = new_committed;
    return Status::Ok();
  }
  // One handle for the whole step; a device that cannot grant one that
  // large (fragmented physical memory) may still grant single granules.
  std::uint64_t per = count;
  std::vector<GranuleHandle> fresh;
  if (Status one = s.physical->CreateGranules(1, fresh, count); !one.ok()) {
    if (count == 1) return one.WithContext("virtual backend");
    per = 1;
    TM_RETURN_IF_ERROR(s.physical->CreateGranules(count, fresh).WithContext("virtual backend"));
  }
  if (Status st = s.physical->Map(s.base + s.committed, fresh, per); !st.ok()) {
    for (GranuleHandle h : fresh) (void)s.physical->ReleaseGranule(h, per);
    return st.WithContext("virtual backend");
  }
  for (std::size_t i = 0; i < fresh.size(); ++i)
    s.mapped.emplace(s.committed + i * per * s.page, State::Mapped{fresh[i], per});
  s.counters.handles_created += fresh.size();
  s.committed = new_committed;
  return Status::Ok();
}

// Creates `count` single granules and maps them from `offset` on, all or
// nothing.
Status VirtualMemoryBackend::MapSingleGranules(State& s, std::uint64_t offset, std::uint64_t count) {
  std::vector<GranuleHandle> fresh;
  TM_RETURN_IF_ERROR(s.physical->CreateGranules(count, fresh).WithContext("virtual backend"));
  if (Status st = s.physical->Map(s.base + offset, fresh, 1); !st.ok()) {
    for (GranuleHandle h : fresh) (void)s.physical->ReleaseGranule(h, 1);
    return st.WithContext("virtual backend");
  }
  for (std::size_t i = 0; i < fresh.size(); ++i) s.mapped.emplace(offset + i * s.page, State::Mapped{fresh[i], 1});
  s.counters.handles_created += fresh.size();
  return Status::Ok();
}

// Gives back [keep, committed).
void VirtualMemoryBackend::Decommit(State& s, std::uint64_t keep) {
  if (s.physical == nullptr) {
    madvise(s.base + keep, s.committed - keep, MADV_DONTNEED);
    mprotect(s.base + keep, s.committed - keep, PROT_NONE);
    s.committed = keep;
    return;
  }
  // Only handles wholly above `keep` go (one straddling it stays mapped).
  // Single granules never straddle it: with release_granules everything
  // above `keep` is then given back (holes included).
  const bool singles = s.release_granules;
  if (s.mapped.lower_bound(keep) == s.mapped.end()) {
    if (singles) s.committed = keep;
    return;
  }
  // The regions above were released by their user, who has finished with
  // them; device work queued before that may still run: wait for it.
  if (!s.physical->Synchronize().ok()) return;  // keep them mapped: committed stays correct
  while (!s.mapped.empty() && s.mapped.rbegin()->first >= keep) {
    const auto [offset, m] = *s.mapped.rbegin();
    if (!s.physical->Unmap(s.base + offset, 1, m.granules).ok()) return;
    (void)s.physical->ReleaseGranule(m.handle, m.granules);
    ++s.counters.handles_released;
    s.mapped.erase(offset);
    s.committed = offset;
  }
  if (singles) s.committed = keep;
}

Result<void*> VirtualMemoryBackend::Reserve(std::uint64_t bytes, std::uint64_t alignment) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.base == nullptr) return ResourceExhausted(s.error);
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "virtual backend", kMaxAllocationAlignment));
  if (bytes == 0) bytes = 1;
  // The address is aligned, not the offset: the reservation's base is only
  // page-aligned, and alignments above a page are allowed.
  const auto base = reinterpret_cast<std::uintptr_t>(s.base);
  const std::uint64_t start = (base + s.top + alignment - 1) / alignment * alignment - base;
  if (start > s.size || bytes > s.size - start)
    return ResourceExhausted("virtual backend: " + std::to_string(bytes) +
                             " bytes more do not fit in the reserved address space of " +
                             std::to_string(s.size) + " bytes");
  const std::uint64_t end = start + bytes;
  // Granules a user gave back below the committed top (inside a region it
  // has since released) are mapped again before the range is handed out.
  if (s.release_granules && start < s.committed)
    TM_RETURN_IF_ERROR(MapHoles(s, start / s.page * s.page, std::min(RoundUpToPage(end, s.page), s.committed)));
  if (end > s.committed) {
    // (A step up to the whole space: added without wrapping.)
    const std::uint64_t end_page = RoundUpToPage(end, s.page);
    const std::uint64_t new_committed = end_page + std::min(s.commit_step, s.size - end_page);
    TM_RETURN_IF_ERROR(Commit(s, new_committed));
  }
  s.top = end;
  s.live.emplace(start, bytes);
  s.live_bytes += bytes;
  return static_cast<void*>(s.base + start);
}

Status VirtualMemoryBackend::Release(void* region, std::uint64_t bytes) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  char* const p = static_cast<char*>(region);
  if (s.base == nullptr || p < s.base || p >= s.base + s.size)
    return NotFound("virtual backend: " + PointerToString(region) + " is not in its address range");
  const std::uint64_t start = static_cast<std::uint64_t>(p - s.base);
  // The range may cover several adjacent regions (coalesced by the user).
  auto it = s.live.find(start);
  std::uint64_t covered = 0;
  auto last = it;
  while (last != s.live.end() && last->first == start + covered && covered < bytes) {
    covered += last->second;
    ++last;
  }
  if (it == s.live.end() || covered != bytes)
    return InvalidArgument("virtual backend: [" + PointerToString(region) + ", +" +
                           std::to_string(bytes) + ") is not a run of live regions");
  s.live.erase(it, last);
  s.live_bytes -= bytes;
  // Lower the top to the end of the highest live region; decommit above.
  const std::uint64_t new_top = s.live.empty() ? 0 : s.live.rbegin()->first + s.live.rbegin()->second;
  if (new_top < s.top) {
    s.top = new_top;
    const std::uint64_t top_page = RoundUpToPage(new_top, s.page);
    const std::uint64_t keep = top_page + std::min(s.commit_step, s.size - top_page);
    if (keep < s.committed) Decommit(s, keep);
  }
  return Status::Ok();
}

namespace {
constexpr std::uint64_t kHostDecommitGranularity = std::uint64_t{2} << 20;
}  // namespace

std::uint64_t VirtualMemoryBackend::decommit_granularity() const {
  if (state_->physical == nullptr) return kHostDecommitGranularity;
  return state_->release_granules ? state_->page : 0;
}

// [p, p + bytes) lies in committed memory (and, over granules, on whole
// granules); its offset.
Result<std::uint64_t> VirtualMemoryBackend::CommittedRange(const State& s, void* p, std::uint64_t bytes) {
  char* const c = static_cast<char*>(p);
  if (s.base == nullptr || c < s.base || bytes > s.committed || c - s.base > static_cast<std::ptrdiff_t>(s.committed - bytes))
    return InvalidArgument("virtual backend: [" + PointerToString(p) + ", +" + std::to_string(bytes) +
                           ") is not committed memory");
  const auto offset = static_cast<std::uint64_t>(c - s.base);
  if (s.physical != nullptr && (offset % s.page != 0 || bytes % s.page != 0))
    return InvalidArgument("virtual backend: [" + PointerToString(p) + ", +" + std::to_string(bytes) +
                           ") is not whole granules of " + std::to_string(s.page) + " bytes");
  return offset;
}

Status VirtualMemoryBackend::Decommit(void* p, std::uint64_t bytes) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.physical != nullptr && !s.release_granules)
    return Unimplemented("virtual backend: cannot decommit part of a granule handle (no release_granules)");
  TM_ASSIGN_OR_RETURN(const std::uint64_t offset, CommittedRange(s, p, bytes));
  if (s.physical != nullptr) return ReleaseSingleGranules(s, offset, bytes);
  if (madvise(p, bytes, MADV_DONTNEED) != 0)
    return Internal(std::string("virtual backend: madvise(MADV_DONTNEED): ") + std::strerror(errno));
  ++s.counters.decommits;
  return Status::Ok();
}

// Over granules with release_granules: the mapped granules of [offset,
// offset + bytes) are unmapped and released, once the device is done with
// what was queued before (the user freed the blocks there, but work queued
// on them may still run). All or nothing: the user records the range as
// given back only on success, so a failure part-way maps the range again
// (a granule it does not know is gone would be handed out unmapped).
Status VirtualMemoryBackend::ReleaseSingleGranules(State& s, std::uint64_t offset, std::uint64_t bytes) {
  auto first = s.mapped.lower_bound(offset), last = s.mapped.lower_bound(offset + bytes);
  if (first == last) return Status::Ok();
  TM_RETURN_IF_ERROR(s.physical->Synchronize().WithContext("virtual backend"));
  for (auto it = first; it != last;) {
    if (Status st = s.physical->Unmap(s.base + it->first, 1, 1); !st.ok()) {
      (void)MapHoles(s, offset, offset + bytes);
      return st.WithContext("virtual backend");
    }
    (void)s.physical->ReleaseGranule(it->second.handle, 1);
    ++s.counters.handles_released;
    it = s.mapped.erase(it);
  }
  ++s.counters.decommits;
  return Status::Ok();
}

// Over granules with release_granules: every gap in the mapped granules of
// [lo, hi) (granule multiples) gets new ones, a create and a map call per
// gap; the walk is over the handles there, not over every granule.
Status VirtualMemoryBackend::MapHoles(State& s, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t at = lo;
  for (auto it = s.mapped.lower_bound(lo); at < hi; ++it) {
    const std::uint64_t next = it == s.mapped.end() ? hi : std::min(it->first, hi);
    if (next > at) TM_RETURN_IF_ERROR(MapSingleGranules(s, at, (next - at) / s.page));
    if (next == hi) break;
    at = next + it->second.granules * s.page;  // (new entries lie before `it`: it stays valid)
  }
  return Status::Ok();
}

Status VirtualMemoryBackend::Recommit(void* p, std::uint64_t bytes) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.physical != nullptr && !s.release_granules)
    return Unimplemented("virtual backend: cannot recommit part of a granule handle (no release_granules)");
  TM_ASSIGN_OR_RETURN(const std::uint64_t offset, CommittedRange(s, p, bytes));
  if (s.physical != nullptr) TM_RETURN_IF_ERROR(MapHoles(s, offset, offset + bytes));
  ++s.counters.recommits;  // host pages stay read-write: each comes back on its first write
  return Status::Ok();
}

const void* VirtualMemoryBackend::next_address() const {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.base == nullptr) return nullptr;
  return s.base + s.top;
}

std::uint64_t VirtualMemoryBackend::committed() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->committed;
}

VirtualMemoryBackend::Counters VirtualMemoryBackend::counters() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->counters;
}

std::uint64_t VirtualMemoryBackend::reserved() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->live_bytes;
}

}  // namespace tensormem
