// SPDX-License-Identifier: Apache-2.0
// Trace replay: one loop, templated over how a block is allocated and
// freed, so our allocators (through MemoryResource) and the malloc peers
// (through function pointers) pay the same overhead. A free finds its block
// through the partner index the trace reader stored: no lookup is timed.
//
// Peers run each pass in a forked child (a fresh heap each time), which
// writes a fixed-size result to a pipe.
//
// Reserved memory, one definition for every allocator on the host: the
// memory the process obtained from the system and has not returned, as
// resident pages. A measured pass (untimed, before the timed ones) writes
// one byte to every page of each block as it is allocated, as a program
// using the block would, and reads the process's resident memory after
// every event: its anonymous resident pages (/proc/self/statm resident -
// shared) plus the written pages of a granule file (vmm and host-granules),
// minus what was resident before the first event, so that the trace, the
// slots and the allocator object (all made before) are not counted.
// Resident memory changes only inside an allocator call or a touch, and
// every one of those ends at a sample: sampling after every event sees
// every peak that outlasts a call.
#include "harness/replay.h"

#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/malloc_peers.h"
#include "harness/restart.h"
#include "core/parse_name.h"

namespace tensormem {
namespace {

constexpr std::array<ReplayAllocator, 8> kAll = {
    ReplayAllocator::kBfc,    ReplayAllocator::kBfcCompact, ReplayAllocator::kVmm,
    ReplayAllocator::kPool,   ReplayAllocator::kSystem,     ReplayAllocator::kMalloc,
    ReplayAllocator::kJemalloc, ReplayAllocator::kMimalloc};
constexpr std::array<ReplayDevice, 3> kDevices = {ReplayDevice::kHost, ReplayDevice::kCuda,
                                                  ReplayDevice::kHostGranules};

struct Pass {
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // the replaying thread's CPU time (user + system)
  std::uint64_t peak_held = 0;  // ours: statistics; peers: their own, measured passes only
  std::uint64_t peak_resident = 0;  // measured passes only
  std::optional<double> warm_seconds;  // ours: a second pass over the same allocator
  std::optional<VmmAllocator::Counters> vmm_counters;
  std::optional<VmmAllocator::Counters> vmm_warm_counters;
  std::optional<VirtualMemoryBackend::Counters> backend_counters;
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A failure at a trace event, as "vmm: trace.csv:12: out of memory ...":
// the allocator named once (ours start their messages with their name),
// then the line, then what happened.
Status AtEvent(const Status& st, std::string_view name, const Trace& trace, const TraceEvent& e) {
  if (st.ok()) return st;
  std::string_view what = st.message();
  const std::string prefix = std::string(name) + ": ";
  if (what.starts_with(prefix)) what.remove_prefix(prefix.size());
  return Status(st.code(), prefix + trace.source + ":" + std::to_string(e.line) + ": " + std::string(what));
}

// The process's resident memory as the replay counts it (see the file
// comment): anonymous resident pages plus a granule file's written pages.
class ResidentMeter {
 public:
  explicit ResidentMeter(bool write_pages, const HostPhysicalMemory* granules = nullptr)
      : statm_(open("/proc/self/statm", O_RDONLY | O_CLOEXEC)), granules_(granules), write_pages_(write_pages) {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) page_ = static_cast<std::uint64_t>(page);
  }
  ~ResidentMeter() {
    if (statm_ >= 0) close(statm_);
  }
  ResidentMeter(const ResidentMeter&) = delete;
  ResidentMeter& operator=(const ResidentMeter&) = delete;

  Status ok() const {
    return statm_ >= 0 ? Status::Ok()
                       : FailedPrecondition("replay: cannot read /proc/self/statm to measure resident memory");
  }
  std::uint64_t page() const { return page_; }
  // The C library's free heap memory goes back to the system first
  // (malloc_trim also gives back whole free pages inside the heap), so no
  // allocator is served from pages made resident before the pass (the
  // trace's reading, earlier tests in this process) and left uncounted.
  void Start() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    base_ = peak_ = Now();
  }
  void Sample() { peak_ = std::max(peak_, Now()); }
  std::uint64_t peak() const { return peak_ - base_; }

  // Makes every page that [p, p + size) overlaps resident and written, as
  // a byte written in each would (nothing when the pages are not to be
  // written). The whole pages inside go in one MADV_POPULATE_WRITE call
  // where the kernel has it (Linux 5.14): a fault per page made a malloc
  // peer's measured pass take minutes on a serving trace. The partial pages
  // at either end, and every page on an older kernel, get a byte written.
  void Touch(void* p, std::uint64_t size) const {
    if (!write_pages_ || size == 0) return;
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t end = start + size;
    const std::uintptr_t first_whole = (start + page_ - 1) / page_ * page_, last_whole = end / page_ * page_;
    if (last_whole > first_whole && Populate(first_whole, last_whole)) {
      WriteEachPage(start, first_whole);
      WriteEachPage(last_whole, end);
    } else {
      WriteEachPage(start, end);
    }
  }

 private:
  bool Populate(std::uintptr_t begin, std::uintptr_t end) const {
#ifdef MADV_POPULATE_WRITE
    return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
#else
    (void)begin;
    (void)end;
    return false;
#endif
  }
  void WriteEachPage(std::uintptr_t begin, std::uintptr_t end) const {
    for (std::uintptr_t a = begin; a < end; a = (a / page_ + 1) * page_) *reinterpret_cast<volatile char*>(a) = 1;
  }

  std::uint64_t Now() const {
    char buf[160];
    const ssize_t n = pread(statm_, buf, sizeof buf - 1, 0);
    if (n <= 0) return base_;
    buf[n] = 0;
    unsigned long long size = 0, resident = 0, shared = 0;
    if (std::sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3) return base_;
    const std::uint64_t anonymous = resident > shared ? (resident - shared) * page_ : 0;
    return anonymous + (granules_ != nullptr ? granules_->resident_bytes() : 0);
  }

  int statm_ = -1;
  const HostPhysicalMemory* granules_ = nullptr;
  bool write_pages_ = true;
  std::uint64_t page_ = 4096;
  std::uint64_t base_ = 0, peak_ = 0;
};

// What a pass that is not measured samples: nothing.
struct NoSampler {
  void Start() {}
  void After(bool /*allocated*/) {}
};

// Replays every event; `sampler.Start()` runs right before the first event,
// `sampler.After(allocated)` after every one; `after` runs once after the
// timed part, before the never-freed blocks are freed. `slots` (one per
// event, null) is the caller's, allocated before a peer's baseline is taken
// so that the replay's own bookkeeping is not counted as the peer's.
// A failed event ends the pass; the blocks still live are freed first, so
// that a pass in this process (--no-isolate, CUDA) leaves nothing behind
// for the next allocator.
template <typename Alloc, typename Free, typename Sampler, typename After>
Result<Pass> Loop(std::string_view name, const Trace& trace, std::vector<void*>& slots, Alloc&& alloc,
                  Free&& free_fn, Sampler& sampler, After&& after) {
  Pass pass;
  auto fail = [&](const Status& st, const TraceEvent& e) {
    for (void*& p : slots)
      if (p != nullptr) (void)free_fn(std::exchange(p, nullptr));
    return AtEvent(st, name, trace, e);
  };
  sampler.Start();
  const double cpu_start = ThreadCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.action == TraceAction::kAllocate) {
      void* p = nullptr;
      if (Status st = alloc(e.size, &p); !st.ok()) return fail(st, e);
      slots[i] = p;
      sampler.After(true);
    } else {
      if (Status st = free_fn(slots[e.partner]); !st.ok()) {
        slots[e.partner] = nullptr;  // refused: not freed again
        return fail(st, e);
      }
      slots[e.partner] = nullptr;
      sampler.After(false);
    }
  }
  pass.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  pass.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  after();
  // Blocks never freed, untimed.
  for (std::size_t i = 0; i < trace.events.size(); ++i)
    if (slots[i] != nullptr) TM_RETURN_IF_ERROR(free_fn(slots[i]));
  return pass;
}

std::uint64_t PeakLiveBytesOf(const Trace& trace) {
  std::uint64_t live = 0, peak = 0;
  for (const TraceEvent& e : trace.events) {
    if (e.action == TraceAction::kAllocate) {
      live += e.size;
      peak = std::max(peak, live);
    } else {
      live -= e.size;
    }
  }
  return peak;
}

// A measured pass's sampler: resident memory after every event.
struct ResidentSampler {
  ResidentMeter& meter;
  void Start() { meter.Start(); }
  void After(bool /*allocated*/) { meter.Sample(); }
};

// One pass through our resource; `stats` receives its statistics after the
// last event (before the never-freed blocks are freed).
// `lagging`, when set, is the host device whose clock moves one step per event.
// `meter`, when set, makes it a measured pass: every block's pages written,
// resident memory sampled (Pass::peak_resident).
Result<Pass> ResourcePass(const Trace& trace, MemoryResource& r, std::uint64_t alignment,
                          AllocatorStats* stats, HostPhysicalMemory* lagging = nullptr,
                          ResidentMeter* meter = nullptr) {
  auto alloc = [&](std::uint64_t size, void** out) -> Status {
    if (lagging != nullptr) lagging->AdvanceDevice();
    Result<void*> p = r.Allocate(size, alignment);
    if (!p.ok()) return p.status();
    *out = *p;
    if (meter != nullptr) meter->Touch(*p, size);
    return Status::Ok();
  };
  auto free_fn = [&](void* p) -> Status {
    if (lagging != nullptr) lagging->AdvanceDevice();
    return r.Deallocate(p);
  };
  std::vector<void*> slots(trace.events.size(), nullptr);
  auto after = [&] {
    if (stats != nullptr) *stats = r.GetStats();
  };
  if (meter == nullptr) {
    NoSampler none;
    return Loop(r.name(), trace, slots, alloc, free_fn, none, after);
  }
  ResidentSampler sampler{*meter};
  TM_ASSIGN_OR_RETURN(Pass pass, Loop(r.name(), trace, slots, alloc, free_fn, sampler, after));
  pass.peak_resident = meter->peak();
  return pass;
}

// A peer's measured pass samples resident memory after every event and the
// peer's own statistic (Pass::peak_held) after allocations where it may
// have grown: between those samples it only falls (frees), so the last one
// stands in.
struct PeerSampler {
  const replay::MallocPeer& peer;
  ResidentMeter& meter;
  std::uint64_t alignment = 0;
  std::uint64_t last_request = 0;
  std::uint64_t base = 0, peak_held = 0;
  void Start() {
    meter.Start();  // first: it trims the C library's heap
    base = peer.Reserved();
  }
  void After(bool allocated) {
    meter.Sample();
    if (!allocated || !peer.ReservedMayHaveGrown(last_request, alignment)) return;
    const std::uint64_t r = peer.Reserved();
    peak_held = std::max(peak_held, r > base ? r - base : 0);
  }
};

// One pass through a peer; measured (pages written, resident memory and
// the peer's statistic sampled) when `meter` is set.
Result<Pass> PeerPass(std::string_view name, const Trace& trace, const replay::MallocPeer& peer,
                      std::uint64_t alignment, ResidentMeter* meter) {
  std::vector<void*> slots(trace.events.size(), nullptr);
  std::optional<PeerSampler> sampler;
  if (meter != nullptr) sampler.emplace(PeerSampler{peer, *meter, alignment});
  auto alloc = [&](std::uint64_t size, void** out) -> Status {
    *out = peer.Allocate(size, alignment);
    if (*out == nullptr) return ResourceExhausted("allocation of " + std::to_string(size) + " bytes failed");
    if (sampler) {
      sampler->last_request = size;
      meter->Touch(*out, size);
    }
    return Status::Ok();
  };
  auto free_fn = [&](void* p) -> Status {
    peer.free_fn(p);
    return Status::Ok();
  };
  auto nothing = [] {};
  if (!sampler) {
    NoSampler none;
    return Loop(name, trace, slots, alloc, free_fn, none, nothing);
  }
  TM_ASSIGN_OR_RETURN(Pass pass, Loop(name, trace, slots, alloc, free_fn, *sampler, nothing));
  pass.peak_held = sampler->peak_held;
  pass.peak_resident = meter->peak();
  return pass;
}

// One of our allocators with the memory it owns.
struct Ours {
  std::unique_ptr<PhysicalMemory> physical;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<MemoryResource> resource;
  HostPhysicalMemory* lagging = nullptr;  // physical, when it runs behind
};

Result<std::unique_ptr<PhysicalMemory>> MakePhysical(const ReplayParams& params) {
  if (params.device == ReplayDevice::kCuda) {
    if (params.device_lag != 0)
      return InvalidArgument("a device lag is simulated on the host only, not with --device cuda");
    return MakeCudaPhysicalMemory(params.cuda_device);
  }
  HostPhysicalMemoryParams host_params;
  host_params.event_lag = params.device_lag;
  TM_ASSIGN_OR_RETURN(std::unique_ptr<HostPhysicalMemory> host, HostPhysicalMemory::Create(host_params));
  return std::unique_ptr<PhysicalMemory>(std::move(host));
}

Result<Ours> MakeOurs(ReplayAllocator which, const ReplayParams& params) {
  Ours o;
  const bool cuda = params.device == ReplayDevice::kCuda;
  // bfc_compact (and bfc over virtual memory) over physical granules.
  const bool granules = cuda || params.device == ReplayDevice::kHostGranules;
  Backend* plain = &HostBackend();  // bfc and pool: host memory, or cudaMalloc
  if (cuda && (which == ReplayAllocator::kBfc || which == ReplayAllocator::kPool)) {
    TM_ASSIGN_OR_RETURN(o.backend, MakeCudaBackend(params.cuda_device));
    plain = o.backend.get();
  }
  switch (which) {
    case ReplayAllocator::kBfc:
    case ReplayAllocator::kBfcCompact: {
      // One BFC under its preset's parameters (bfc_compact: the compact
      // preset, always over virtual memory).
      const bool compact = which == ReplayAllocator::kBfcCompact;
      const BfcParams& bfc = compact ? params.bfc_compact : params.bfc;
      if (compact || params.bfc_virtual_memory) {
        if (granules) {
          TM_ASSIGN_OR_RETURN(o.physical, MakePhysical(params));
          o.backend = std::make_unique<VirtualMemoryBackend>(*o.physical, std::uint64_t{1} << 40, 0,
                                                             params.bfc_granule_handles);
        } else {
          o.backend = std::make_unique<VirtualMemoryBackend>();
        }
        plain = o.backend.get();
      }
      o.resource = std::make_unique<BfcAllocator>(*plain, bfc);
      break;
    }
    case ReplayAllocator::kVmm: {
      TM_ASSIGN_OR_RETURN(o.physical, MakePhysical(params));
      TM_ASSIGN_OR_RETURN(std::unique_ptr<VmmAllocator> vmm, VmmAllocator::Create(*o.physical, params.vmm));
      o.resource = std::move(vmm);
      break;
    }
    case ReplayAllocator::kPool:
      o.resource = std::make_unique<BufferPool>(*plain, params.pool);
      break;
    default:
      TM_RETURN_IF_ERROR(CheckReplayDevice(which, params.device));
      o.resource = std::make_unique<SystemAllocator>(params.system);
      break;
  }
  return o;
}

// What a vmm allocator did between two readings of its counters.
VmmAllocator::Counters CountersSince(const VmmAllocator::Counters& now, const VmmAllocator::Counters& then) {
  VmmAllocator::Counters d;
  for (const auto& [name, field] : VmmAllocator::kCounterFields) d.*field = now.*field - then.*field;
  return d;
}

// The measured pass through a peer: its pages written, resident memory
// and its own statistic sampled.
Result<Pass> MeasuredPeerPass(const Trace& trace, ReplayAllocator which, const replay::MallocPeer& peer,
                              const ReplayParams& params) {
  ResidentMeter meter(params.write_pages);
  TM_RETURN_IF_ERROR(meter.ok());
  return PeerPass(Name(which), trace, peer, params.alignment, &meter);
}

// The measured pass through ours: a fresh instance, its blocks' pages
// written, resident memory sampled (a granule file's written pages count).
Result<Pass> MeasuredPass(const Trace& trace, Ours& ours, const ReplayParams& params) {
  ResidentMeter meter(params.write_pages, dynamic_cast<const HostPhysicalMemory*>(ours.physical.get()));
  TM_RETURN_IF_ERROR(meter.ok());
  AllocatorStats stats;
  TM_ASSIGN_OR_RETURN(Pass pass,
                      ResourcePass(trace, *ours.resource, params.alignment, &stats, ours.lagging, &meter));
  pass.peak_held = stats.peak_bytes_reserved;
  return pass;
}

// One pass in this process: ours on a fresh instance (then a warm pass over
// the same instance); a peer the same way; or, `measure`, the measured pass
// alone (pages written, resident memory sampled, nothing timed).
Result<Pass> LocalPass(const Trace& trace, ReplayAllocator which, const ReplayParams& params,
                       bool measure) {
  if (IsMallocPeer(which)) {
    TM_RETURN_IF_ERROR(CheckReplayDevice(which, params.device));
    TM_ASSIGN_OR_RETURN(replay::MallocPeer peer, replay::LoadMallocPeer(which));
    if (measure) return MeasuredPeerPass(trace, which, peer, params);
    TM_ASSIGN_OR_RETURN(Pass pass, PeerPass(Name(which), trace, peer, params.alignment, nullptr));
    // The warm passes: the same trace again over the heap the first left.
    for (int k = 0; k < params.warm_passes; ++k) {
      TM_ASSIGN_OR_RETURN(Pass warm, PeerPass(Name(which), trace, peer, params.alignment, nullptr));
      pass.warm_seconds = warm.seconds;
    }
    return pass;
  }
  TM_ASSIGN_OR_RETURN(Ours ours, MakeOurs(which, params));
  if (params.device_lag != 0) ours.lagging = dynamic_cast<HostPhysicalMemory*>(ours.physical.get());
  if (measure) return MeasuredPass(trace, ours, params);
  AllocatorStats stats;
  TM_ASSIGN_OR_RETURN(Pass pass, ResourcePass(trace, *ours.resource, params.alignment, &stats, ours.lagging));
  pass.peak_held = stats.peak_bytes_reserved;
  const auto* vmm = dynamic_cast<const VmmAllocator*>(ours.resource.get());
  if (vmm != nullptr) pass.vmm_counters = vmm->counters();
  if (const auto* vb = dynamic_cast<const VirtualMemoryBackend*>(ours.backend.get())) pass.backend_counters = vb->counters();
  // The warm passes; the last one's time and counters are reported.
  for (int k = 0; k < params.warm_passes; ++k) {
    const VmmAllocator::Counters before = vmm != nullptr ? vmm->counters() : VmmAllocator::Counters{};
    TM_ASSIGN_OR_RETURN(Pass warm, ResourcePass(trace, *ours.resource, params.alignment, nullptr, ours.lagging));
    pass.warm_seconds = warm.seconds;
    if (vmm != nullptr) pass.vmm_warm_counters = CountersSince(vmm->counters(), before);
  }
  return pass;
}

// A pass as the child process of IsolatedPass sends it through the pipe.
struct Wire {
  int ok = 0;
  int has_warm = 0;
  int has_vmm = 0;
  VmmAllocator::Counters vmm;
  VmmAllocator::Counters vmm_warm;
  int has_backend = 0;
  VirtualMemoryBackend::Counters backend;
  double warm_seconds = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  std::uint64_t peak_held = 0;
  std::uint64_t peak_resident = 0;
  int error_code = 0;  // the child's StatusCode: a bad parameter stays a bad parameter
  char error[1024] = {};
};

Wire ToWire(const Result<Pass>& pass) {
  Wire w;
  if (!pass.ok()) {
    w.error_code = static_cast<int>(pass.status().code());
    std::snprintf(w.error, sizeof w.error, "%s", pass.status().message().c_str());
    return w;
  }
  w.ok = 1;
  w.seconds = pass->seconds;
  w.cpu_seconds = pass->cpu_seconds;
  w.peak_held = pass->peak_held;
  w.peak_resident = pass->peak_resident;
  w.has_warm = pass->warm_seconds.has_value();
  w.warm_seconds = pass->warm_seconds.value_or(0.0);
  w.has_vmm = pass->vmm_counters.has_value();
  if (pass->vmm_counters) w.vmm = *pass->vmm_counters;
  if (pass->vmm_warm_counters) w.vmm_warm = *pass->vmm_warm_counters;
  w.has_backend = pass->backend_counters.has_value();
  if (pass->backend_counters) w.backend = *pass->backend_counters;
  return w;
}

Result<Pass> FromWire(const Wire& w, ReplayAllocator which) {
  if (!w.ok) {
    // Named once: our allocators' messages start with their name already.
    const std::string name(Name(which));
    const std::string message = std::string_view(w.error).starts_with(name + ":") ? w.error : name + ": " + w.error;
    // A code the child could not have sent (0 is "ok") is the parent's to name.
    const StatusCode code = w.error_code > 0 && w.error_code <= static_cast<int>(StatusCode::kInternal)
                                ? static_cast<StatusCode>(w.error_code)
                                : StatusCode::kInternal;
    return Status(code, message);
  }
  Pass pass;
  pass.seconds = w.seconds;
  pass.cpu_seconds = w.cpu_seconds;
  pass.peak_held = w.peak_held;
  pass.peak_resident = w.peak_resident;
  if (w.has_warm) pass.warm_seconds = w.warm_seconds;
  if (w.has_vmm) {
    pass.vmm_counters = w.vmm;
    pass.vmm_warm_counters = w.vmm_warm;
  }
  if (w.has_backend) pass.backend_counters = w.backend;
  return pass;
}

// Writes (io = write) or reads (io = read) all `size` bytes of `data`,
// through EINTR; returns how many went.
template <typename Io, typename Byte>
std::size_t Transfer(Io io, int fd, Byte* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = io(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

// The same pass in a forked child, so that it starts from the heap the
// trace was loaded into and from no earlier pass (glibc's heap and its
// dynamic mmap threshold remember every earlier allocation); the result
// comes back through a pipe.
Result<Pass> IsolatedPass(const Trace& trace, ReplayAllocator which, const ReplayParams& params,
                          bool measure) {
  int fds[2];
  if (pipe(fds) != 0) return Internal(std::string("replay: pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Internal(std::string("replay: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    const Wire w = ToWire(LocalPass(trace, which, params, measure));
    (void)Transfer(write, fds[1], reinterpret_cast<const char*>(&w), sizeof w);
    _exit(0);
  }
  close(fds[1]);
  Wire w;
  const std::size_t got = Transfer(read, fds[0], reinterpret_cast<char*>(&w), sizeof w);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof w)
    return Internal("replay: the child process replaying through " + std::string(Name(which)) +
                    " ended (wait status " + std::to_string(status) + ") before reporting");
  return FromWire(w, which);
}

constexpr const char* kOwnStatistics = "allocator statistics (peak bytes reserved)";
constexpr const char* kResidentSource =
    "resident pages over the pass's baseline, every block's pages written, sampled after every event";

// The memory the system can give without swapping (MemAvailable), or the
// free physical pages where /proc/meminfo does not say.
std::uint64_t AvailableMemoryBytes() {
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr)
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found) return static_cast<std::uint64_t>(kib) * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double PerOp(double seconds, std::uint64_t ops) {
  return ops == 0 ? 0.0 : seconds * 1e9 / static_cast<double>(ops);
}

// The ratio and the fragmentation, both from the peaks: fragmentation is
// the share of the peak reserved bytes not in use at the peak in use,
// 1 - peak_in_use / peak_reserved = 1 - 1 / ratio. A peak reserved below
// the peak in use (blocks served from memory resident before the pass, or
// small blocks sharing pages) gives neither.
void Finish(ReplayResult* r) {
  r->fragmentation.reset();
  if (r->peak_in_use == 0) {
    r->reserved_over_in_use = 0.0;
    return;
  }
  if (r->peak_reserved < r->peak_in_use) {
    r->reserved_source += "; below the bytes in use (served partly from memory resident before the pass), no ratio";
    r->reserved_over_in_use = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const double in_use = static_cast<double>(r->peak_in_use);
  const double reserved = static_cast<double>(r->peak_reserved);
  r->reserved_over_in_use = reserved / in_use;
  r->fragmentation = 1.0 - in_use / reserved;
}

}  // namespace

std::string_view Name(ReplayAllocator allocator) {
  switch (allocator) {
    case ReplayAllocator::kBfc: return "bfc";
    case ReplayAllocator::kBfcCompact: return "bfc_compact";
    case ReplayAllocator::kVmm: return "vmm";
    case ReplayAllocator::kPool: return "pool";
    case ReplayAllocator::kSystem: return "system";
    case ReplayAllocator::kMalloc: return "malloc";
    case ReplayAllocator::kJemalloc: return "jemalloc";
    case ReplayAllocator::kMimalloc: return "mimalloc";
  }
  return "?";
}

Result<ReplayAllocator> ParseReplayAllocator(std::string_view name) {
  return internal::ParseName<ReplayAllocator>(name, kAll, "allocator");
}

std::span<const ReplayAllocator> AllReplayAllocators() { return kAll; }

ReplayAllocator ReplayAllocatorOf(BfcPreset preset) {
  return preset == BfcPreset::kCompact ? ReplayAllocator::kBfcCompact : ReplayAllocator::kBfc;
}

bool IsHostOnly(ReplayAllocator a) { return IsMallocPeer(a) || a == ReplayAllocator::kSystem; }

Status CheckReplayDevice(ReplayAllocator allocator, ReplayDevice device) {
  if (device != ReplayDevice::kCuda || !IsHostOnly(allocator)) return Status::Ok();
  std::string usable;
  for (ReplayAllocator a : kAll)
    if (!IsHostOnly(a)) usable += (usable.empty() ? "" : ", ") + std::string(Name(a));
  return InvalidArgument(std::string(Name(allocator)) + " allocates host memory: it cannot replay on the cuda "
                         "device (use " + usable + ")");
}

std::string_view Name(ReplayDevice device) {
  switch (device) {
    case ReplayDevice::kHost: return "host";
    case ReplayDevice::kCuda: return "cuda";
    case ReplayDevice::kHostGranules: return "host-granules";
  }
  return "?";
}

Result<ReplayDevice> ParseReplayDevice(std::string_view name) {
  return internal::ParseName<ReplayDevice>(name, kDevices, "device");
}
std::span<const ReplayDevice> AllReplayDevices() { return kDevices; }

bool IsMallocPeer(ReplayAllocator a) {
  return a == ReplayAllocator::kMalloc || a == ReplayAllocator::kJemalloc ||
         a == ReplayAllocator::kMimalloc;
}

Status MallocPeerAvailable(ReplayAllocator peer) { return replay::LoadMallocPeer(peer).status(); }

Result<ReplayResult> ReplayTraceThrough(const Trace& trace, MemoryResource& resource,
                                        std::uint64_t alignment) {
  ReplayResult r;
  r.allocator = std::string(resource.name());
  r.ops = trace.events.size();
  r.peak_in_use = PeakLiveBytesOf(trace);
  AllocatorStats stats;
  TM_ASSIGN_OR_RETURN(Pass pass, ResourcePass(trace, resource, alignment, &stats));
  r.ns_per_op = PerOp(pass.seconds, r.ops);
  r.cpu_ns_per_op = PerOp(pass.cpu_seconds, r.ops);
  // One pass through a resource that was not fresh: no measured pass.
  r.peak_reserved = stats.peak_bytes_reserved;
  r.peak_held = stats.peak_bytes_reserved;
  r.reserved_source = r.held_source = kOwnStatistics;
  Finish(&r);
  return r;
}

namespace {

// The reserved figure of the measured pass: resident pages where they were
// written, else the allocator's own statistic, saying why (`asked`: the
// caller wanted pages written, and the trace was too large for it).
void TakeReserved(const Pass& pass, bool written, bool asked, std::uint64_t available, ReplayResult& r) {
  r.peak_held = pass.peak_held;
  if (written) {
    r.peak_reserved = pass.peak_resident;
    r.reserved_source = std::string(kResidentSource);
    return;
  }
  r.peak_reserved = pass.peak_held;
  r.reserved_source = std::string(kOwnStatistics) + ": " +
                      (asked ? "the trace's peak in use (" + HumanBytes(r.peak_in_use) +
                                   ") is over half the memory available (" + HumanBytes(available) +
                                   "), so its pages were not written"
                             : std::string("the caller asked for no pages written"));
}

}  // namespace

Status CheckReplayPasses(std::uint64_t repetitions, std::uint64_t warm_passes) {
  const auto bounded = [](const char* name, std::uint64_t v, int most) {
    if (v >= 1 && v <= static_cast<std::uint64_t>(most)) return Status::Ok();
    return InvalidArgument(std::string("replay: ") + name + " must be between 1 and " + std::to_string(most) +
                           ", got " + std::to_string(v));
  };
  TM_RETURN_IF_ERROR(bounded("repetitions", repetitions, kMaxReplayRepetitions));
  return bounded("warm_passes", warm_passes, kMaxReplayWarmPasses);
}

Result<ReplayResult> ReplayTrace(const Trace& trace, ReplayAllocator allocator,
                                 const ReplayParams& params) {
  // (A negative count is refused as 0, not wrapped to a huge one.)
  TM_RETURN_IF_ERROR(CheckReplayPasses(static_cast<std::uint64_t>(std::max(params.repetitions, 0)),
                                       static_cast<std::uint64_t>(std::max(params.warm_passes, 0))));
  ReplayResult r;
  r.allocator = std::string(Name(allocator));
  r.ops = trace.events.size();
  r.peak_in_use = PeakLiveBytesOf(trace);
  // Writing every page of a trace that needs most of the machine's memory
  // would push the system into swap or the OOM killer: such a trace is
  // measured by the allocator's own statistic instead.
  ReplayParams p = params;
  const std::uint64_t available = AvailableMemoryBytes();
  p.write_pages = params.write_pages && r.peak_in_use <= available / 2;
  auto run = [&](bool measure) -> Result<Pass> {
    return p.isolate ? IsolatedPass(trace, allocator, p, measure) : LocalPass(trace, allocator, p, measure);
  };
  r.held_source = kOwnStatistics;
  if (IsMallocPeer(allocator)) {
    TM_ASSIGN_OR_RETURN(replay::MallocPeer peer, replay::LoadMallocPeer(allocator));
    r.held_source = peer.reserved_source;
  }
  // Device memory is not the host's to measure: there the allocator's own
  // statistic is the reserved figure.
  const bool measured = params.device != ReplayDevice::kCuda;
  if (measured) {
    TM_ASSIGN_OR_RETURN(Pass pass, run(true));
    TakeReserved(pass, p.write_pages, params.write_pages, available, r);
  }
  std::vector<double> ns, cpu_ns, warm_ns;
  for (int k = 0; k < params.repetitions; ++k) {
    TM_ASSIGN_OR_RETURN(Pass pass, run(false));
    ns.push_back(PerOp(pass.seconds, r.ops));
    cpu_ns.push_back(PerOp(pass.cpu_seconds, r.ops));
    if (pass.warm_seconds) warm_ns.push_back(PerOp(*pass.warm_seconds, r.ops));
    if (pass.vmm_counters) r.vmm_counters = pass.vmm_counters;
    if (pass.vmm_warm_counters) r.vmm_warm_counters = pass.vmm_warm_counters;
    if (pass.backend_counters) r.backend_counters = pass.backend_counters;
    if (!IsMallocPeer(allocator)) r.peak_held = pass.peak_held;
  }
  if (!measured) {
    r.peak_reserved = r.peak_held.value_or(0);
    r.reserved_source = std::string(kOwnStatistics) + " (device memory)";
  }
  r.ns_per_op = Median(ns);
  r.cpu_ns_per_op = Median(cpu_ns);
  if (!warm_ns.empty()) r.warm_ns_per_op = Median(warm_ns);
  Finish(&r);
  return r;
}

namespace {

// The placement's offsets from the blocks' addresses, with the holes
// between disjoint address ranges closed: the blocks sorted by address,
// overlapping spans merged, and the spans stacked from 0.
void CloseAddressHoles(const std::vector<std::uint64_t>& address, const std::vector<std::uint64_t>& sizes,
                       ReplayPlacement& out) {
  std::vector<std::size_t> order(address.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return address[a] < address[b]; });
  out.offsets.assign(address.size(), 0);
  std::uint64_t span_start = 0, span_end = 0, span_base = 0;
  bool open = false;
  for (std::size_t k : order) {
    const std::uint64_t end = address[k] + std::max<std::uint64_t>(sizes[k], 1);
    if (!open || address[k] > span_end) {
      span_base = open ? span_base + (span_end - span_start) : 0;
      span_start = address[k];
      span_end = end;
      open = true;
    } else {
      span_end = std::max(span_end, end);
    }
    out.offsets[k] = span_base + (address[k] - span_start);
    out.top = std::max(out.top, out.offsets[k] + sizes[k]);
  }
}

}  // namespace

Result<ReplayPlacement> ReplayPlacements(const Trace& trace, ReplayAllocator allocator,
                                         const ReplayParams& params) {
  if (IsMallocPeer(allocator))
    return Unimplemented("replay placements: '" + std::string(Name(allocator)) +
                         "' is a malloc peer; the map needs one of our allocators");
  TM_ASSIGN_OR_RETURN(Ours ours, MakeOurs(allocator, params));
  ReplayPlacement out;
  out.allocator = std::string(Name(allocator));
  out.reserved.reserve(trace.events.size());
  std::vector<std::uint64_t> address;  // per allocation, in event order
  std::vector<std::uint64_t> sizes;
  std::vector<void*> slots(trace.events.size(), nullptr);
  Status failed = Status::Ok();
  out.replayed = trace.events.size();
  for (std::size_t i = 0; i < trace.events.size() && failed.ok(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.action == TraceAction::kAllocate) {
      Result<void*> p = ours.resource->Allocate(e.size, params.alignment);
      if (!p.ok()) {
        failed = AtEvent(p.status(), out.allocator, trace, e);
        if (failed.code() == StatusCode::kResourceExhausted) {
          out.refusal = std::exchange(failed, Status::Ok());
          out.replayed = i;
        }
        break;
      }
      slots[i] = *p;
      address.push_back(reinterpret_cast<std::uintptr_t>(*p));
      sizes.push_back(e.size);
    } else {
      failed = AtEvent(ours.resource->Deallocate(slots[e.partner]), out.allocator, trace, e);
      slots[e.partner] = nullptr;
    }
    out.reserved.push_back(ours.resource->GetStats().bytes_reserved);
  }
  for (void* p : slots)
    if (p != nullptr) (void)ours.resource->Deallocate(p);
  TM_RETURN_IF_ERROR(failed);
  CloseAddressHoles(address, sizes, out);
  return out;
}

void PrepareProcessForMallocPeers(char** argv) {
  // Not re-executed: jemalloc will be reported unavailable with the reason.
  RestartWithGlibcTunable(argv, "glibc.rtld.optional_static_tls=16384");
}

}  // namespace tensormem
