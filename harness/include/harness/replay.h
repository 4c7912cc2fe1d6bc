// SPDX-License-Identifier: Apache-2.0
// Replaying an allocation trace through an allocator: every allocate and
// free of the trace, in order (one thread), timed as a whole. Part of the
// benchmark harness (tensormem_harness), not of the installed library: it
// forks, opens the malloc peers with dlopen and may re-execute the program.
//
// Allocators: our bfc, pool and system (a fresh instance per pass, on host
// memory; the BFC on a VirtualMemoryBackend when asked), and the system peers glibc malloc, jemalloc and mimalloc, loaded
// at run time with dlopen (libc.so.6, libjemalloc.so.2, libmimalloc.so.2;
// not linked into tensormem). A peer that cannot be loaded is reported as
// unavailable (NotFound, with the reason), never a crash.
//
// Figures per allocator (ns_per_op is the cold pass: a fresh allocator, so
// the vmm allocator maps every granule it uses during it; warm_ns_per_op is
// a second pass over the same allocator, for a peer over the heap its
// first pass left in the same process):
// - ops: events replayed; ns_per_op: the median over `repetitions` timed
//   passes of the pass's time / ops (each pass runs in a forked child
//   process on a fresh allocator, so no pass inherits a warmed heap);
//   cpu_ns_per_op: the same with the replaying thread's CPU time (user +
//   system: page faults and system calls count, waiting for a CPU on a
//   busy machine does not).
// - peak_in_use: the peak of the bytes the trace has live (its own sizes,
//   the same for every allocator).
// - peak_reserved: one definition for every allocator on the host: the
//   memory the process obtained from the system and has not returned,
//   measured as resident pages. A measured pass (a fresh allocator in its
//   own child, untimed, run before the timed passes) writes one byte to
//   every page of each block as it is allocated, as a program using it
//   would, and samples after every event the process's anonymous resident
//   pages (/proc/self/statm resident - shared) plus the written pages of a
//   granule file (vmm, host-granules), minus their sum right before the
//   first event (the trace, the replay's slots and the allocator object are
//   not counted). On the cuda device, and for a trace whose peak in use is
//   over half the memory available (ReplayParams::write_pages): the
//   allocator's statistic (peak_held). `reserved_source` says which.
// - peak_held: the allocator's own statistic, as a second figure: ours
//   their peak bytes reserved from the backend; the peers sampled in the
//   measured pass after every allocation that may have grown it: glibc
//   mallinfo2 arena + hblkhd, jemalloc stats.resident, mimalloc committed
//   bytes; each minus its value before the first event. `held_source`
//   names which.
// - reserved_over_in_use = peak_reserved / peak_in_use; fragmentation =
//   1 - peak_in_use / peak_reserved (the share of the peak reserved bytes
//   not in use at the peak in use). Neither when peak_reserved is below
//   peak_in_use (blocks served from memory resident before the pass).
//
// The timed passes write nothing to the blocks: writing is the measured
// pass's, so the times are those of the allocator calls alone. The blocks
// never freed are freed after the timed part.
//
// jemalloc uses initial-exec TLS and can only be dlopened when the process
// was started with spare static TLS: PrepareProcessForMallocPeers re-executes
// the program with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "tensormem/allocators/resource.h"
#include "tensormem/allocators/system_allocator.h"
#include "tensormem/defaults.h"
#include "tensormem/trace.h"
#include "tensormem/allocators/vmm_allocator.h"

namespace tensormem {

// kBfc runs ReplayParams::bfc (the tensorflow preset unless changed);
// kBfcCompact is the BFC under the compact preset: ReplayParams::bfc_compact
// over virtual memory; kVmm runs ReplayParams::vmm over physical memory
// (host memfd granules, or CUDA).
enum class ReplayAllocator { kBfc, kBfcCompact, kVmm, kPool, kSystem, kMalloc, kJemalloc, kMimalloc };
// The allocator name of the BFC under `preset` (bfc, bfc_compact).
ReplayAllocator ReplayAllocatorOf(BfcPreset preset);

// Where our allocators get their memory. kCuda: bfc on cudaMalloc,
// bfc_compact on a VirtualMemoryBackend over CUDA physical memory, vmm on CUDA
// physical memory, pool on cudaMalloc; system and the malloc peers are
// host-only (InvalidArgument). kHostGranules: host memory, but bfc_compact
// grows over memfd granules as it does over a GPU's (its handle counts are
// what a GPU would pay; vmm uses host granules in either host mode).
enum class ReplayDevice { kHost, kCuda, kHostGranules };
std::string_view Name(ReplayDevice device);
Result<ReplayDevice> ParseReplayDevice(std::string_view name);
std::span<const ReplayDevice> AllReplayDevices();

std::string_view Name(ReplayAllocator allocator);
// "bfc", "bfc_compact", "pool", "system", "malloc", "jemalloc", "mimalloc"; the error lists them.
Result<ReplayAllocator> ParseReplayAllocator(std::string_view name);
std::span<const ReplayAllocator> AllReplayAllocators();
bool IsMallocPeer(ReplayAllocator allocator);
// System and the malloc peers: host memory only.
bool IsHostOnly(ReplayAllocator allocator);
// InvalidArgument for a host-only allocator on the cuda device (the message
// names the ones that can); Ok otherwise.
Status CheckReplayDevice(ReplayAllocator allocator, ReplayDevice device);

// The most timed passes a replay takes (the CLI's and Python's bound).
inline constexpr int kMaxReplayRepetitions = 1000;
// The most passes over one allocator after the cold one.
inline constexpr int kMaxReplayWarmPasses = 100;

// InvalidArgument naming the count unless repetitions is 1 to
// kMaxReplayRepetitions and warm_passes 1 to kMaxReplayWarmPasses (wide
// types, so that a caller's value is checked before it is narrowed).
Status CheckReplayPasses(std::uint64_t repetitions, std::uint64_t warm_passes);

namespace defaults {
// The allocators a replay compares unless told (`replay -a`, Python
// replay()): every one. One row of the table of tensormem/defaults.h, kept
// here beside the allocators' names, which the library does not know.
inline constexpr std::string_view kReplayAllocators = "all";
}  // namespace defaults

struct ReplayParams {
  // Alignment of every allocation (the CPU traces come from 64-byte
  // posix_memalign; BFC rounds to 256 anyway).
  std::uint64_t alignment = defaults::kTensorAlignment;
  // Timed passes; ns_per_op is their median. 1 to kMaxReplayRepetitions.
  int repetitions = defaults::kReplayRepetitions;
  // Passes over the same allocator after each cold one (a training loop's
  // later steps); warm_ns_per_op and vmm's warm counters are the last
  // one's, so that a large count shows the steady state. 1 to
  // kMaxReplayWarmPasses.
  int warm_passes = defaults::kReplayWarmPasses;
  // Run every pass in a forked child process, so that each starts from the
  // same heap (glibc's heap and its dynamic mmap threshold remember every
  // earlier allocation of the process). Without it passes run here, and
  // later passes of a peer find a warm heap.
  bool isolate = true;
  // The measured pass writes one byte in every page of each block, so that
  // resident memory is the reserved figure. ReplayTrace turns this off when
  // the trace's peak in use is more than half the memory available: then
  // the allocator's own statistic is the reserved figure, and
  // reserved_source says why.
  bool write_pages = true;
  BfcParams bfc = BfcPresetParams(BfcPreset::kTensorflow);
  // kBfc's memory: host (aligned allocations from the C library,
  // TensorFlow's CPU sub-allocator) or a VirtualMemoryBackend (what
  // coalesce_regions needs).
  bool bfc_virtual_memory = BfcPresetUsesVirtualMemory(BfcPreset::kTensorflow);
  // kBfcCompact's parameters (always over virtual memory).
  BfcParams bfc_compact = BfcPresetParams(BfcPreset::kCompact);
  // The BFCs over virtual memory on physical granules (kCuda,
  // kHostGranules): a handle per granule, so that release_free_granules
  // gives granules back as over host pages (a create and a map call per
  // granule); otherwise a handle per commit, which keeps its granules.
  bool bfc_granule_handles = false;
  BufferPoolParams pool;
  SystemAllocatorParams system;
  VmmParams vmm;
  ReplayDevice device = ReplayDevice::kHost;
  int cuda_device = 0;
  // Host and host-granules: the device runs this many trace events behind
  // the replay (an event recorded at a free completes that many events
  // later), as a GPU does behind the CPU that queues its work; 0 = never
  // behind. What a re-stitch must wait for shows on the host.
  std::uint64_t device_lag = 0;
};

struct ReplayResult {
  std::string allocator;
  std::uint64_t ops = 0;
  double ns_per_op = 0;      // wall clock
  double cpu_ns_per_op = 0;  // the replaying thread's CPU time (user + system)
  std::uint64_t peak_in_use = 0;
  std::uint64_t peak_reserved = 0;
  double reserved_over_in_use = 0;
  std::optional<double> fragmentation;  // 1 - peak_in_use / peak_reserved
  std::string reserved_source;
  std::optional<std::uint64_t> peak_held;  // the allocator's own statistic
  std::string held_source;
  // A second pass over the same allocator right after the first (ours: its
  // memory cached, nothing to map; a peer: the heap its first pass grew,
  // glibc's mmap threshold raised): median over the repetitions.
  std::optional<double> warm_ns_per_op;
  // vmm only, cold pass: what a device would pay for (map calls, pages
  // mapped, pages re-stitched, granules created, synchronizations).
  std::optional<VmmAllocator::Counters> vmm_counters;
  // A virtual-memory backend (bfc_compact), cold pass: the handles it
  // created and released (over physical memory), the parts of regions it
  // decommitted and recommitted.
  std::optional<VirtualMemoryBackend::Counters> backend_counters;
  // vmm only, the warm pass: the same counters (what a steady state pays).
  std::optional<VmmAllocator::Counters> vmm_warm_counters;
};

// One allocator over a trace (built fresh per pass from params).
Result<ReplayResult> ReplayTrace(const Trace& trace, ReplayAllocator allocator,
                                 const ReplayParams& params = {});

// One pass through a resource the caller built (timed once; peak_reserved
// and peak_held from its statistics: no measured pass, the resource is not
// fresh). The resource is left with the never-freed blocks
// freed again.
Result<ReplayResult> ReplayTraceThrough(const Trace& trace, MemoryResource& resource,
                                        std::uint64_t alignment = defaults::kTensorAlignment);

// Where a replay put every block, for a memory map: one untimed pass in this
// process through a fresh instance of one of our allocators (the malloc
// peers are refused: Unimplemented). The buffers are those of
// TraceToProblem(trace), in the same order.
struct ReplayPlacement {
  std::string allocator;
  // Per buffer: its address, with the holes between disjoint address ranges
  // (separate regions) closed, so the lowest block starts at 0 and regions
  // sit on top of each other.
  std::vector<std::uint64_t> offsets;
  std::uint64_t top = 0;  // max(offset + size)
  // Per event: the allocator's bytes reserved after it.
  std::vector<std::uint64_t> reserved;
  // Events replayed: all of them, or those before the allocation the
  // allocator refused for want of memory (`refusal`, ResourceExhausted
  // naming the line; Ok otherwise). The offsets and reserved bytes cover
  // those events, so the map shows the memory up to the refusal.
  std::size_t replayed = 0;
  Status refusal;
};
// Other failures (a bad free, bad parameters) are errors.
Result<ReplayPlacement> ReplayPlacements(const Trace& trace, ReplayAllocator allocator,
                                         const ReplayParams& params = {});

// The replay's interactive memory map (io.h WriteHtmlMap): x = event,
// y = the placement's offsets, the reserved bytes after every event as a
// line, the trace's peak live bytes as the lower bound.
Status WriteReplayHtmlMap(std::ostream& out, const Trace& trace, const ReplayPlacement& placement,
                          const std::string& title = {});

// Ok when the peer can be loaded in this process; else why not.
Status MallocPeerAvailable(ReplayAllocator peer);

// Re-executes the program (/proc/self/exe with the same arguments) with
// glibc.rtld.optional_static_tls added to GLIBC_TUNABLES, once, so that
// jemalloc can be dlopened. Returns (and changes nothing) when the tunable
// is already set or re-executing fails.
void PrepareProcessForMallocPeers(char** argv);

}  // namespace tensormem
