// SPDX-License-Identifier: Apache-2.0
// HostPhysicalMemory: one memfd holds every granule; granule g is the file's
// bytes [g * granularity, (g + 1) * granularity), and a handle of n
// granules is n consecutive ones, named by the first. The file grows by
// ftruncate; a released handle's bytes are punched out (the memory goes
// back to the system) and its indices are reused first by a handle of the
// same size. Map runs of consecutive indices with one mmap each; Unmap maps
// PROT_NONE anonymous memory over the range, so the addresses stay reserved.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/resource.h"

namespace tensormem {

struct HostPhysicalMemory::State {
  HostPhysicalMemoryParams params;
  int fd = -1;
  mutable std::mutex mutex;
  std::uint64_t file_granules = 0;       // granules handed out from the file so far
  std::uint64_t file_capacity = 0;       // the file's length in granules
  // Punched out, reusable: first indices of released handles, by size.
  std::map<std::uint64_t, std::vector<GranuleHandle>> free_handles;
  // Live handles: first index -> granules.
  std::unordered_map<GranuleHandle, std::uint64_t> handle_at;
  // The granules of the live handle starting at `h`, 0 when none does.
  std::uint64_t HandleGranules(GranuleHandle h) const {
    auto it = handle_at.find(h);
    return it == handle_at.end() ? 0 : it->second;
  }
  std::uint64_t held = 0;
  CallCounts calls;
  // Events are numbered from 1, each on its stream. Streams are
  // independent, as on a device: an event is done once its own stream got
  // that far (`completed`, per stream: a wait for an event, or the lag), or
  // everything did (`all_completed`: a Synchronize, CompleteEvents()). A
  // wait for one stream's event says nothing of another stream's.
  EventHandle next_event = 1;
  std::vector<StreamHandle> event_stream;  // event e's stream at e - 1
  std::unordered_map<StreamHandle, EventHandle> completed;
  EventHandle all_completed = 0;
  // event_lag: the device's clock, and the events in flight with the tick at
  // which each completes (both in recording order).
  std::uint64_t clock = 0;
  std::deque<std::pair<EventHandle, std::uint64_t>> in_flight;

  StreamHandle StreamOf(EventHandle e) const { return event_stream[e - 1]; }
  bool Done(EventHandle e) const {
    if (e == 0 || e <= all_completed) return true;
    if (e >= next_event) return false;
    auto it = completed.find(StreamOf(e));
    return it != completed.end() && e <= it->second;
  }
  // Stream `stream` has done its work up to event `e`.
  void CompleteUpTo(StreamHandle stream, EventHandle e) {
    EventHandle& c = completed[stream];
    c = std::max(c, e);
    std::erase_if(in_flight, [&](const auto& f) { return f.first <= e && StreamOf(f.first) == stream; });
  }
  void CompleteAll() {
    all_completed = next_event - 1;
    in_flight.clear();
  }
};

namespace {
std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }
}  // namespace

Status Validate(const HostPhysicalMemoryParams& params) {
  const long page = sysconf(_SC_PAGESIZE);
  const std::uint64_t page_bytes = page > 0 ? static_cast<std::uint64_t>(page) : 4096;
  if (!IsPowerOfTwo(params.granularity) || params.granularity < page_bytes ||
      params.granularity > (std::uint64_t{1} << 30))
    return InvalidArgument("host physical memory: granularity " + std::to_string(params.granularity) +
                           " is not a power of two between the page size (" +
                           std::to_string(page_bytes) + ") and 1 GiB");
  if (params.manual_events && params.event_lag != 0)
    return InvalidArgument("host physical memory: manual_events and an event_lag of " +
                           std::to_string(params.event_lag) + " exclude each other");
  return Status::Ok();
}

Result<std::unique_ptr<HostPhysicalMemory>> HostPhysicalMemory::Create(
    const HostPhysicalMemoryParams& params) {
  TM_RETURN_IF_ERROR(Validate(params));
  auto state = std::make_unique<State>();
  state->params = params;
  state->fd = memfd_create("tensormem-granules", MFD_CLOEXEC);
  if (state->fd < 0)
    return FailedPrecondition("host physical memory: " + Errno("memfd_create"));
  return std::unique_ptr<HostPhysicalMemory>(new HostPhysicalMemory(std::move(state)));
}

HostPhysicalMemory::HostPhysicalMemory(std::unique_ptr<State> state) : state_(std::move(state)) {}

HostPhysicalMemory::~HostPhysicalMemory() {
  if (state_->fd >= 0) close(state_->fd);
}

std::uint64_t HostPhysicalMemory::resident_bytes() const {
  struct stat st {};
  if (fstat(state_->fd, &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_blocks) * 512;  // st_blocks counts 512-byte units
}

std::uint64_t HostPhysicalMemory::granularity() const { return state_->params.granularity; }

std::string HostPhysicalMemory::description() const {
  return "host memfd, " + HumanBytes(state_->params.granularity) + " granules";
}

Result<void*> HostPhysicalMemory::ReserveAddressRange(std::uint64_t bytes) {
  const std::uint64_t g = state_->params.granularity;
  if (bytes == 0 || bytes % g != 0)
    return InvalidArgument("host physical memory: address range of " + std::to_string(bytes) +
                           " bytes is not a positive multiple of the granularity " + std::to_string(g));
  if (bytes > (std::uint64_t{1} << 47))
    return ResourceExhausted("host physical memory: address range of " + std::to_string(bytes) +
                             " bytes is larger than the user address space");
  // Over-reserve by one granule and trim, so the range is granule-aligned
  // (mmap only promises page alignment).
  void* p = mmap(nullptr, bytes + g, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return ResourceExhausted("host physical memory: cannot reserve " + std::to_string(bytes) +
                             " bytes of addresses: " + std::strerror(errno));
  const auto raw = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (raw + g - 1) / g * g;
  if (aligned > raw) munmap(p, aligned - raw);
  const std::uintptr_t end = raw + bytes + g;
  if (end > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
  return reinterpret_cast<void*>(aligned);
}

Status HostPhysicalMemory::FreeAddressRange(void* base, std::uint64_t bytes) {
  if (munmap(base, bytes) != 0) return Internal("host physical memory: " + Errno("munmap"));
  return Status::Ok();
}

namespace {
Status CheckHandleGranules(std::uint64_t handle_granules) {
  if (handle_granules == 0 || handle_granules > (std::uint64_t{1} << 20))
    return InvalidArgument("host physical memory: handles of " + std::to_string(handle_granules) +
                           " granules (1 to 2^20)");
  return Status::Ok();
}
}  // namespace

Status HostPhysicalMemory::CreateGranules(std::size_t count, std::vector<GranuleHandle>& out,
                                          std::uint64_t handle_granules) {
  TM_RETURN_IF_ERROR(CheckHandleGranules(handle_granules));
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::uint64_t n = handle_granules;
  std::vector<GranuleHandle>& spare = s.free_handles[n];
  const std::size_t reused = std::min(count, spare.size());
  const std::uint64_t fresh = count - reused;
  const std::uint64_t g = s.params.granularity;
  if (fresh > (std::uint64_t{1} << 46) / g / n || s.file_granules + fresh * n > (std::uint64_t{1} << 46) / g)
    return ResourceExhausted("host physical memory: " + std::to_string(count) + " more handles of " +
                             std::to_string(n) + " granules exceed 64 TiB");
  if (fresh > 0 && s.file_granules + fresh * n > s.file_capacity) {
    const std::uint64_t needed = s.file_granules + fresh * n;
    // The file is sparse (no memory until a granule is touched): grow it in
    // doublings so creating granules rarely costs a system call.
    const std::uint64_t capacity = std::max(needed, std::min(2 * s.file_capacity, (std::uint64_t{1} << 46) / g));
    if (ftruncate(s.fd, static_cast<off_t>(capacity * g)) != 0)
      return ResourceExhausted("host physical memory: cannot grow to " + std::to_string(needed) +
                               " granules: " + std::strerror(errno));
    s.file_capacity = capacity;
  }
  // Reused indices first, the last released first (a stack).
  for (std::size_t i = 0; i < reused; ++i) {
    out.push_back(spare.back());
    s.handle_at[spare.back()] = n;
    spare.pop_back();
  }
  for (std::uint64_t i = 0; i < fresh; ++i) {
    out.push_back(s.file_granules);
    s.handle_at[s.file_granules] = n;
    s.file_granules += n;
  }
  s.held += count * n;
  ++s.calls.create;
  return Status::Ok();
}

Status HostPhysicalMemory::ReleaseGranule(GranuleHandle granule, std::uint64_t handle_granules) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::uint64_t n = handle_granules;
  const std::uint64_t held_n = s.HandleGranules(granule);
  if (held_n == 0)
    return NotFound("host physical memory: granule " + std::to_string(granule) + " is not held");
  if (held_n != n)
    return InvalidArgument("host physical memory: handle " + std::to_string(granule) + " has " +
                           std::to_string(held_n) + " granules, not " + std::to_string(n));
  const std::uint64_t g = s.params.granularity;
  if (fallocate(s.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(granule * g),
                static_cast<off_t>(n * g)) != 0)
    return Internal("host physical memory: " + Errno("fallocate(PUNCH_HOLE)"));
  s.handle_at.erase(granule);
  s.free_handles[n].push_back(granule);
  s.held -= n;
  ++s.calls.release;
  return Status::Ok();
}

Status HostPhysicalMemory::Map(void* address, std::span<const GranuleHandle> granules,
                               std::uint64_t handle_granules) {
  TM_RETURN_IF_ERROR(CheckHandleGranules(handle_granules));
  State& s = *state_;
  const std::uint64_t g = s.params.granularity;
  const std::uint64_t n = handle_granules;
  if (reinterpret_cast<std::uintptr_t>(address) % g != 0)
    return InvalidArgument("host physical memory: map address " + PointerToString(address) +
                           " is not granule-aligned");
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (GranuleHandle h : granules) {
      const std::uint64_t held_n = s.HandleGranules(h);
      if (held_n == 0)
        return NotFound("host physical memory: granule " + std::to_string(h) + " is not held");
      if (held_n != n)
        return InvalidArgument("host physical memory: handle " + std::to_string(h) + " has " +
                               std::to_string(held_n) + " granules, not " + std::to_string(n));
    }
  }
  char* at = static_cast<char*>(address);
  const std::uint64_t bytes = n * g;
  std::size_t i = 0;
  while (i < granules.size()) {
    std::size_t run = 1;
    while (i + run < granules.size() && granules[i + run] == granules[i] + run * n) ++run;
    void* p = mmap(at + i * bytes, run * bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, s.fd,
                   static_cast<off_t>(granules[i] * g));
    if (p == MAP_FAILED) {
      const Status failed = ResourceExhausted("host physical memory: " + Errno("mmap"));
      if (i > 0) (void)Unmap(address, i, n);  // all or nothing
      return failed;
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.calls.map;
    i += run;
  }
  return Status::Ok();
}

Status HostPhysicalMemory::Unmap(void* address, std::size_t count, std::uint64_t handle_granules) {
  TM_RETURN_IF_ERROR(CheckHandleGranules(handle_granules));
  State& s = *state_;
  const std::uint64_t g = s.params.granularity;
  void* p = mmap(address, count * handle_granules * g, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return Internal("host physical memory: " + Errno("mmap(PROT_NONE)"));
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls.unmap;
  return Status::Ok();
}

Status HostPhysicalMemory::Synchronize() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  ++state_->calls.synchronize;
  // The host waits for the device: every event recorded so far is done, as
  // after cuCtxSynchronize (manual events too, as WaitForEvent does).
  state_->CompleteAll();
  return Status::Ok();
}

Result<EventHandle> HostPhysicalMemory::RecordEvent(StreamHandle stream) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls.events;
  if (!s.params.manual_events && s.params.event_lag == 0) return EventHandle{0};
  if (s.params.event_lag != 0) s.in_flight.emplace_back(s.next_event, s.clock + s.params.event_lag);
  s.event_stream.push_back(stream);
  return s.next_event++;
}

bool HostPhysicalMemory::EventCompleted(EventHandle event) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Done(event);
}

Status HostPhysicalMemory::WaitForEvent(EventHandle event) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls.event_waits;
  if (s.Done(event)) return Status::Ok();
  if (event >= s.next_event)
    return InvalidArgument("host physical memory: wait for event " + std::to_string(event) +
                           ", which was never recorded");
  // The event's stream catches up to it (manual events included: a test's
  // device that is waited for has done the work); other streams do not.
  s.CompleteUpTo(s.StreamOf(event), event);
  return Status::Ok();
}

void HostPhysicalMemory::DestroyEvent(EventHandle /*event*/) {}

void HostPhysicalMemory::AdvanceDevice() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.clock;
  while (!s.in_flight.empty() && s.in_flight.front().second <= s.clock) {
    EventHandle& c = s.completed[s.StreamOf(s.in_flight.front().first)];
    c = std::max(c, s.in_flight.front().first);
    s.in_flight.pop_front();
  }
}

void HostPhysicalMemory::CompleteEvents() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->CompleteAll();
}

void HostPhysicalMemory::CompleteEvents(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->CompleteUpTo(stream, state_->next_event - 1);
}

std::uint64_t HostPhysicalMemory::granules_held() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->held;
}

HostPhysicalMemory::CallCounts HostPhysicalMemory::call_counts() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->calls;
}

}  // namespace tensormem
