// SPDX-License-Identifier: Apache-2.0
// The BFC allocator: TensorFlow's best-fit with coalescing.
//
// - Requests are rounded up to 256 bytes. Free chunks sit in 21 bins: bin k
//   holds chunks of size >= 256 * 2^k (the last bin is unbounded); within a
//   bin chunks are ordered by (size, address). Allocation takes the smallest
//   free chunk that fits, searching from the request's bin upward (the lowest
//   address among equal sizes).
// - A chunk is split when it is at least twice the request, or when the
//   leftover is at least `max_internal_fragmentation_bytes` (128 MiB by
//   default); the remainder goes back to its bin.
// - The chunks of a region form an address-ordered doubly linked list; a
//   freed chunk coalesces with its free neighbours immediately. A pointer
//   finds its chunk in O(1) through a hash map of chunk starts (TensorFlow
//   keeps a table of one entry per 256 bytes of region instead).
// - With release_free_granules, before extending it gives back the whole
//   granules inside free chunks (the backend decommits them) and takes
//   them again when a block lands on them; bytes_reserved counts what is
//   held: the regions less the granules given back. Once some are given
//   back, a request takes, among the few best-fitting chunks, the one
//   whose granules under it were given back least (`fit_candidates`).
// - When nothing fits the allocator extends: with growth the first region is
//   2 MiB and each next one doubles (at least the request, capped by what the
//   limit leaves); without growth the whole limit is reserved up front. When
//   the backend refuses, it retries at 90% of the size until the request no
//   longer fits. Then it frees regions that are wholly unused (garbage
//   collection) and tries again; then it fails with an out-of-memory report:
//   per-bin totals, the chunk map and the largest free block.
// - Thread-safe: one lock, which spins before it sleeps (docs/design/allocators.md).
//
// Options, with TensorFlow's behaviour as the default: `growth` (kDoubling
// is TensorFlow's allow_growth, kReserveAll its default without it; ours:
// kOnDemand sizes each new region to the request), `initial_region_bytes`
// (2 MiB), `max_internal_fragmentation_bytes` (128 MiB), `coalesce_regions`
// (TensorFlow's option for its virtual-memory sub-allocator; off).
// CompactBfcParams() is the tuned set: kOnDemand + coalesce_regions over a
// VirtualMemoryBackend, which keeps the reserved bytes near the peak in use.
// Alignments above 256 bytes (TensorFlow ignores the argument) are served by
// skipping to an aligned address inside a chunk and returning the front
// part to its bin.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/resource.h"

namespace tensormem {

enum class BfcGrowth {
  kDoubling,  // TensorFlow allow_growth: initial region, each next one twice as large
  kOnDemand,  // each new region as large as the request needs (at least initial_region_bytes)
  kReserveAll,  // TensorFlow without allow_growth: the whole limit in one region up front
};

// "doubling", "on_demand", "reserve_all"; the parser's error lists them.
std::string_view Name(BfcGrowth growth);
std::span<const BfcGrowth> AllBfcGrowths();
Result<BfcGrowth> ParseBfcGrowth(std::string_view name);

struct BfcParams {
  // The most bytes the allocator may reserve from its backend. With
  // kReserveAll it must be finite.
  std::uint64_t memory_limit = std::numeric_limits<std::uint64_t>::max();
  BfcGrowth growth = BfcGrowth::kDoubling;
  // The size of the first region with kDoubling (TensorFlow: 2 MiB); the
  // smallest region with kOnDemand. Rounded up to 256 bytes.
  std::uint64_t initial_region_bytes = std::uint64_t{2} << 20;
  // Split a chunk when the leftover would be at least this many bytes even
  // if the chunk is less than twice the request (TensorFlow: 128 MiB).
  // Values below 256 mean "split whenever 256 bytes or more are left".
  std::uint64_t max_internal_fragmentation_bytes = std::uint64_t{128} << 20;
  // TensorFlow's coalesce_regions: a region that starts where another ends
  // extends it, and their boundary chunks coalesce (needs a contiguous
  // backend such as VirtualMemoryBackend; ignored otherwise). With
  // kOnDemand growth an extension then only needs the part of the request
  // that the free tail of the top region does not cover.
  bool coalesce_regions = false;
  // Before growing, give back the memory of the whole granules
  // (Backend::decommit_granularity) inside free chunks, and take it again
  // when a block lands on them: a request larger than every free chunk
  // then grows the allocator without the free chunks' memory still held.
  // Needs a backend that can decommit (VirtualMemoryBackend on the host);
  // ignored otherwise.
  bool release_free_granules = false;
  // With release_free_granules: granules go back only where the memory
  // held would otherwise exceed the bytes in use by more than this fraction
  // (fewer calls to the backend; 0: whenever the memory held grows).
  double held_slack = 0.05;
  // With release_free_granules, once granules have been given back: the
  // free chunks looked at, in best-fit order, for the one whose granules
  // under the block were given back least (each taken again is memory held
  // again and a call to the backend); ties go to the best fit.
  // 1 = best fit alone. 1 to 1024.
  std::uint32_t fit_candidates = 8;
  // Free wholly unused regions before failing an allocation.
  bool garbage_collection = true;
  // Retry a refused region at 90% of the size (TensorFlow's backpedal).
  bool retry_smaller_regions = true;
  // Chunks listed at most in the out-of-memory report (the per-bin totals
  // and the largest free block are always complete).
  std::size_t report_max_chunks = 64;
};

// The tuned parameters (not TensorFlow's defaults): kOnDemand growth in
// steps of at least 2 MiB, coalesce_regions, splitting whenever 256 bytes or
// more would be left over, release_free_granules. Use with a
// VirtualMemoryBackend.
BfcParams CompactBfcParams();

// The named parameter sets, one table (bfc_allocator.cc) that the CLI's
// --bfc-preset, replay's allocator names (bfc_compact is bfc under the
// compact preset) and Python's BfcAllocator(preset=...) all read:
// "tensorflow" (BfcParams{}: TensorFlow's defaults, host memory) and
// "compact" (CompactBfcParams() over a VirtualMemoryBackend).
enum class BfcPreset { kTensorflow, kCompact };
std::string_view Name(BfcPreset preset);
Result<BfcPreset> ParseBfcPreset(std::string_view name);
std::span<const BfcPreset> AllBfcPresets();
BfcParams BfcPresetParams(BfcPreset preset);
// Whether the preset runs over a VirtualMemoryBackend (coalesce_regions
// needs regions that can be adjacent).
bool BfcPresetUsesVirtualMemory(BfcPreset preset);

// Checks every field once: memory_limit >= 256; initial_region_bytes in
// [1, 2^62]; held_slack >= 0; fit_candidates in [1, 1024]; growth a known
// value; kReserveAll with a finite memory_limit.
// InvalidArgument naming the field otherwise.
Status Validate(const BfcParams& params);

class BfcAllocator final : public MemoryResource {
 public:
  // The backend must outlive the allocator.
  // Invalid params (see Validate) make every Allocate fail with the reason;
  // Create reports it up front.
  explicit BfcAllocator(Backend& backend, const BfcParams& params = {});
  static Result<std::unique_ptr<BfcAllocator>> Create(Backend& backend, const BfcParams& params = {});
  ~BfcAllocator() override;

  static constexpr std::uint64_t kMinAllocationSize = 256;
  static constexpr int kNumBins = 21;
  // The bin of a chunk (or request) of `bytes` rounded bytes.
  static int BinForSize(std::uint64_t bytes);
  static std::uint64_t RoundedBytes(std::uint64_t bytes);

  // The report an out-of-memory failure carries: limit, reserved, in use,
  // per-bin totals (chunks, bytes, in use, free), the largest free block and
  // the chunk map (at most `max_chunks` chunks listed).
  std::string MemoryReport(std::size_t max_chunks) const;
  // Every chunk of every region: "region 0x.. (N bytes): 0x.. 256 used ...".
  void DumpChunkMap(std::ostream& out) const;
  // Regions currently held from the backend.
  std::size_t num_regions() const;
  // Frees every wholly unused region now; returns the bytes given back.
  std::uint64_t ReleaseFreeRegions();

 private:
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override;
  std::string_view DoName() const override { return "bfc"; }

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tensormem
