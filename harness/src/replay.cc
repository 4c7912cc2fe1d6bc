// SPDX-License-Identifier: Apache-2.0
// Trace replay: one loop, templated over how a block is allocated and
// freed, so our allocators (through MemoryResource) and the malloc peers
// (through function pointers) pay the same overhead. A free finds its block
// through the partner index the trace reader stored: no lookup is timed.
//
// Peers run each pass in a forked child (a fresh heap each time), which
// writes a fixed-size result to a pipe.
#include "harness/replay.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/malloc_peers.h"
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
  std::uint64_t peak_reserved = 0;  // ours: statistics; peers: sampled passes only
  std::optional<double> fragmentation;
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

// Replays every event; `sample` (after each allocation) returns the bytes
// reserved, or is a no-op when not sampling; `after` runs once after the
// timed part, before the never-freed blocks are freed. `slots` (one per
// event, null) is the caller's, allocated before a peer's baseline is taken
// so that the replay's own bookkeeping is not counted as the peer's.
// A failed event ends the pass; the blocks still live are freed first, so
// that a pass in this process (--no-isolate, CUDA) leaves nothing behind
// for the next allocator.
template <typename Alloc, typename Free, typename Sample, typename After>
Result<Pass> Loop(std::string_view name, const Trace& trace, std::vector<void*>& slots, Alloc&& alloc,
                  Free&& free_fn, Sample&& sample, After&& after) {
  Pass pass;
  auto fail = [&](const Status& st, const TraceEvent& e) {
    for (void*& p : slots)
      if (p != nullptr) (void)free_fn(std::exchange(p, nullptr));
    return AtEvent(st, name, trace, e);
  };
  const double cpu_start = ThreadCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.action == TraceAction::kAllocate) {
      void* p = nullptr;
      if (Status st = alloc(e.size, &p); !st.ok()) return fail(st, e);
      slots[i] = p;
      pass.peak_reserved = std::max(pass.peak_reserved, sample());
    } else {
      if (Status st = free_fn(slots[e.partner]); !st.ok()) {
        slots[e.partner] = nullptr;  // refused: not freed again
        return fail(st, e);
      }
      slots[e.partner] = nullptr;
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

// One pass through our resource; `stats` receives its statistics after the
// last event (before the never-freed blocks are freed).
// `lagging`, when set, is the host device whose clock moves one step per event.
Result<Pass> ResourcePass(const Trace& trace, MemoryResource& r, std::uint64_t alignment,
                          AllocatorStats* stats, HostPhysicalMemory* lagging = nullptr) {
  auto alloc = [&](std::uint64_t size, void** out) -> Status {
    if (lagging != nullptr) lagging->AdvanceDevice();
    Result<void*> p = r.Allocate(size, alignment);
    if (!p.ok()) return p.status();
    *out = *p;
    return Status::Ok();
  };
  auto free_fn = [&](void* p) -> Status {
    if (lagging != nullptr) lagging->AdvanceDevice();
    return r.Deallocate(p);
  };
  std::vector<void*> slots(trace.events.size(), nullptr);
  return Loop(
      r.name(), trace, slots, alloc, free_fn, [] { return std::uint64_t{0}; },
      [&] {
        if (stats != nullptr) *stats = r.GetStats();
      });
}

Result<Pass> PeerPass(std::string_view name, const Trace& trace, const replay::MallocPeer& peer,
                      std::uint64_t alignment, bool sample) {
  std::vector<void*> slots(trace.events.size(), nullptr);
  const std::uint64_t base = sample ? peer.Reserved() : 0;
  std::uint64_t last_request = 0;
  auto alloc = [&](std::uint64_t size, void** out) -> Status {
    last_request = size;
    *out = peer.Allocate(size, alignment);
    if (*out == nullptr) return ResourceExhausted("allocation of " + std::to_string(size) + " bytes failed");
    return Status::Ok();
  };
  auto free_fn = [&](void* p) -> Status {
    peer.free_fn(p);
    return Status::Ok();
  };
  auto nothing = [] {};
  if (!sample) return Loop(name, trace, slots, alloc, free_fn, [] { return std::uint64_t{0}; }, nothing);
  // Between samples the figure only falls (frees), so the last sample
  // stands in where the peer says it cannot have grown.
  std::uint64_t last = 0;
  return Loop(
      name, trace, slots, alloc, free_fn,
      [&] {
        if (peer.ReservedMayHaveGrown(last_request, alignment)) {
          const std::uint64_t r = peer.Reserved();
          last = r > base ? r - base : 0;
        }
        return last;
      },
      nothing);
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
      if (compact || params.bfc_virtual_memory) {
        if (granules) {
          TM_ASSIGN_OR_RETURN(o.physical, MakePhysical(params));
          o.backend = std::make_unique<VirtualMemoryBackend>(*o.physical);
        } else {
          o.backend = std::make_unique<VirtualMemoryBackend>();
        }
        plain = o.backend.get();
      }
      o.resource = std::make_unique<BfcAllocator>(*plain, compact ? params.bfc_compact : params.bfc);
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

// One pass in this process: ours on a fresh instance (then a warm pass over
// the same instance); a peer sampled or not.
Result<Pass> LocalPass(const Trace& trace, ReplayAllocator which, const ReplayParams& params,
                       bool sample) {
  if (IsMallocPeer(which)) {
    TM_RETURN_IF_ERROR(CheckReplayDevice(which, params.device));
    TM_ASSIGN_OR_RETURN(replay::MallocPeer peer, replay::LoadMallocPeer(which));
    TM_ASSIGN_OR_RETURN(Pass pass, PeerPass(Name(which), trace, peer, params.alignment, sample));
    if (!sample) {  // the warm pass: the same trace again over the heap the first left
      TM_ASSIGN_OR_RETURN(Pass warm, PeerPass(Name(which), trace, peer, params.alignment, false));
      pass.warm_seconds = warm.seconds;
    }
    return pass;
  }
  TM_ASSIGN_OR_RETURN(Ours ours, MakeOurs(which, params));
  AllocatorStats stats;
  if (params.device_lag != 0) ours.lagging = dynamic_cast<HostPhysicalMemory*>(ours.physical.get());
  TM_ASSIGN_OR_RETURN(Pass pass, ResourcePass(trace, *ours.resource, params.alignment, &stats, ours.lagging));
  pass.peak_reserved = stats.peak_bytes_reserved;
  pass.fragmentation = stats.fragmentation;
  const auto* vmm = dynamic_cast<const VmmAllocator*>(ours.resource.get());
  if (vmm != nullptr) pass.vmm_counters = vmm->counters();
  if (const auto* vb = dynamic_cast<const VirtualMemoryBackend*>(ours.backend.get()); vb && ours.physical)
    pass.backend_counters = vb->counters();
  TM_ASSIGN_OR_RETURN(Pass warm, ResourcePass(trace, *ours.resource, params.alignment, nullptr, ours.lagging));
  pass.warm_seconds = warm.seconds;
  if (vmm != nullptr) pass.vmm_warm_counters = CountersSince(vmm->counters(), *pass.vmm_counters);
  return pass;
}

// A pass as the child process of IsolatedPass sends it through the pipe.
struct Wire {
  int ok = 0;
  int has_fragmentation = 0;
  int has_warm = 0;
  int has_vmm = 0;
  VmmAllocator::Counters vmm;
  VmmAllocator::Counters vmm_warm;
  int has_backend = 0;
  VirtualMemoryBackend::Counters backend;
  double warm_seconds = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  double fragmentation = 0;
  std::uint64_t peak_reserved = 0;
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
  w.peak_reserved = pass->peak_reserved;
  w.has_fragmentation = pass->fragmentation.has_value();
  w.fragmentation = pass->fragmentation.value_or(0.0);
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
  pass.peak_reserved = w.peak_reserved;
  if (w.has_fragmentation) pass.fragmentation = w.fragmentation;
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
                          bool sample) {
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
    const Wire w = ToWire(LocalPass(trace, which, params, sample));
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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double PerOp(double seconds, std::uint64_t ops) {
  return ops == 0 ? 0.0 : seconds * 1e9 / static_cast<double>(ops);
}

void Finish(ReplayResult* r) {
  if (std::isnan(r->reserved_over_in_use)) return;  // no ratio (see ReplayTrace)
  r->reserved_over_in_use =
      r->peak_in_use == 0 ? 0.0 : static_cast<double>(r->peak_reserved) / static_cast<double>(r->peak_in_use);
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
  r.peak_reserved = stats.peak_bytes_reserved;
  r.fragmentation = stats.fragmentation;
  r.reserved_source = "allocator statistics (peak bytes reserved)";
  Finish(&r);
  return r;
}

Result<ReplayResult> ReplayTrace(const Trace& trace, ReplayAllocator allocator,
                                 const ReplayParams& params) {
  if (params.repetitions < 1) return InvalidArgument("replay: repetitions must be at least 1");
  ReplayResult r;
  r.allocator = std::string(Name(allocator));
  r.ops = trace.events.size();
  r.peak_in_use = PeakLiveBytesOf(trace);
  auto run = [&](bool sample) -> Result<Pass> {
    return params.isolate ? IsolatedPass(trace, allocator, params, sample)
                          : LocalPass(trace, allocator, params, sample);
  };
  if (IsMallocPeer(allocator)) {
    TM_ASSIGN_OR_RETURN(replay::MallocPeer peer, replay::LoadMallocPeer(allocator));
    r.reserved_source = peer.reserved_source;
    // Sampling the peer's statistics after every allocation costs time: a
    // pass of its own, untimed.
    TM_ASSIGN_OR_RETURN(Pass sampled, run(true));
    r.peak_reserved = sampled.peak_reserved;
    if (r.peak_reserved < r.peak_in_use) {
      // The peer served the trace (partly) from memory it held before the
      // replay: its growth says nothing about what the trace needs.
      r.reserved_source += "; below the bytes in use (served from memory held before the replay), no ratio";
      r.reserved_over_in_use = std::numeric_limits<double>::quiet_NaN();
    }
  } else {
    r.reserved_source = "allocator statistics (peak bytes reserved)";
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
    if (!IsMallocPeer(allocator)) {
      r.peak_reserved = pass.peak_reserved;
      r.fragmentation = pass.fragmentation;
    }
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
  const char* current = std::getenv("GLIBC_TUNABLES");
  if (current != nullptr && std::strstr(current, "glibc.rtld.optional_static_tls") != nullptr) return;
  std::string value = current != nullptr && *current ? std::string(current) + ":" : std::string();
  value += "glibc.rtld.optional_static_tls=16384";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-executed: jemalloc will be reported unavailable with the reason.
}

}  // namespace tensormem
