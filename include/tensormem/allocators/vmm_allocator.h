// SPDX-License-Identifier: Apache-2.0
// The `vmm` allocator: physical granules stitched into virtual ranges.
//
// - One virtual address space, a huge reservation (a second one, the small
//   space, for requests up to `small_request_bytes` where that is set).
//   Blocks are placed best fit with splitting and immediate coalescing, as
//   in BFC; a request no free block fits takes fresh addresses at the top.
//   Among the few best-fitting free blocks (each at its low or its high
//   end) and the top, the place with the fewest pages not mapped wins
//   (ties: the smallest block's low end), so a request lands on cached
//   pages rather than needing pages re-stitched or created.
//   Sizes are rounded to `block_rounding_bytes`.
// - Physical memory is a separate matter: a page of a space (one granule of
//   addresses) is backed by a granule while any live block touches it. A
//   page that no live block touches stays mapped (the cache: a repeat of the
//   same request costs no map call). When a block needs pages that are not
//   mapped, granules come from (1) granules held but unmapped, (2) cached
//   pages anywhere, unmapped and re-stitched (the most recently cached of
//   those whose last free the device has finished with first; when those
//   do not suffice, a wait for the pending fence, which covers the pages
//   cached before it, then for the device: a GPU runs behind the host, and
//   growing instead held 1.07x the peak in use on an H200), (3) new
//   granules while the limit allows,
//   as handles of up to `max_handle_granules` per run of pages (a run
//   handle moves only whole: once free, it is mapped whole where a run of
//   pages of its very size needs backing, or else released and created
//   again where needed). With `restitch_before_growing`
//   (default) (2) comes before (3), so the memory held never exceeds the
//   most pages live blocks ever touched at once; `growth_slack` lets (3)
//   come first up to that many pages times (1 + slack): a loop whose blocks
//   move between iterations then stops re-stitching (an unmap and a map per
//   page, about 50 us per 2 MiB page on an H200) once its footprint fits.
// - Reserved = granules held x granularity.
// - Streams: a block freed on stream S is reusable by S at once; by another
//   stream only once an event recorded at the free has completed (events
//   are recorded only after a second stream has been seen). With several
//   streams those events are also the fences of the pages: a re-stitch
//   waits for the frees' events in order, not for the whole device.
// - Blocks used on other streams too (`RecordStream`, PyTorch's
//   `Tensor.record_stream`): their free is deferred until an event recorded
//   at the free on each such stream has completed; until then the block
//   stays in use (nothing reuses, re-stitches or releases its pages). Checked
//   at every allocation; waited for before an out-of-memory answer and by
//   `ReleaseCachedMemory`.
// - One lock (spins, then sleeps); every public call is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/resource.h"

namespace tensormem {

struct VmmParams {
  // The most bytes of physical memory held (granules x granularity); unset =
  // no limit of our own (the device's refusal is the limit).
  std::optional<std::uint64_t> memory_limit;
  // Requests of at most this many bytes go to a second space, the small
  // space, and share pages only with each other there; 0 (the default) puts
  // every request in one space. One space chosen on held-out dynamic traces:
  // small blocks fill the partial pages of large ones, and pages cached by
  // one kind of request serve the other where they are, without a map call
  // (docs/design/allocators.md).
  std::uint64_t small_request_bytes = 0;
  // Every block is a multiple of this (a power of two, 256 to 64 KiB); it is
  // also the alignment every block has without asking.
  std::uint64_t block_rounding_bytes = 512;
  // Addresses reserved per space (rounded to granules); halved until the
  // system grants them, down to 1/1024.
  std::uint64_t address_space_bytes = std::uint64_t{1} << 40;
  // Re-stitch cached pages before creating granules (keeps the memory held
  // at the peak of touched pages); false grows first, like PyTorch's
  // expandable segments.
  bool restitch_before_growing = true;
  // With restitch_before_growing: granules are still created first while
  // the memory held stays within this fraction above the most pages live
  // blocks ever touched at once (0 to 1; 0 = memory first).
  double growth_slack = 0.0;
  // New granules for a run of consecutive pages come as handles of up to
  // this many granules: one create and one map call per handle instead of
  // per page (a GPU pays per call, ~50 us on an H200). Such a handle moves
  // only whole: once no live block is on any of its pages it is mapped
  // whole where a run of its size needs pages (an unmap and a map), or
  // released and its granules created again where they are needed; while a
  // live block is on one of its pages, the others stay cached. 1 = a handle
  // per granule. 1 to 2^20.
  std::uint64_t max_handle_granules = 16;
  // A block that grows a space at its top with new granules also gets the
  // pages above it up to the end of its last run handle, at most this
  // fraction of the granules held (0 to 1; 0 = none): a heap that grows
  // makes one create and one map call per run handle rather than per
  // block, and the next blocks placed at the top find those pages mapped.
  // They stay cached until a block lands on them. The default acts only
  // once 2 GiB of 2 MiB granules are held (a granule ahead per 1,024).
  double grow_ahead = 1.0 / 1024;
  // Re-stitching takes the most recently cached page first (in a training
  // step the page cached longest ago is the one the next iteration reaches
  // soonest). In a loop smaller than the cache, such as a serving request's
  // steps of one shape, that page is needed again at its place within the
  // same iteration, which then takes another: the same pages move every
  // iteration. With this set, a page whose granule was taken and that was
  // needed again at its place D cached pages later (a refault) is passed
  // over while it has been cached for less than D: older pages, which the
  // loop no longer reaches, are taken first. Fewer map calls in steady loops,
  // above all with a small space, whose pages a loop's small and large
  // requests take from each other (a warm pass made about half as many on
  // held-out serving and dynamic-shape traces; in one space 30 % fewer, of
  // far fewer); memory held moves by a granule either way, which is why it
  // is off by default.
  bool protect_refaulted = false;
  // Chunks listed at most in the out-of-memory report.
  std::size_t report_max_blocks = 32;
};
Status Validate(const VmmParams& params);

class VmmAllocator final : public MemoryResource {
 public:
  // Validates the params and reserves the address spaces. The physical
  // memory must outlive the allocator.
  static Result<std::unique_ptr<VmmAllocator>> Create(PhysicalMemory& memory,
                                                      const VmmParams& params = {});
  ~VmmAllocator() override;

  // Stream-ordered allocation: the block may be used by work on `stream`.
  // MemoryResource::Allocate is AllocateAsync on stream 0.
  Result<void*> AllocateAsync(std::uint64_t bytes, StreamHandle stream,
                              std::uint64_t alignment = kDefaultAllocationAlignment);
  // Frees a block in the order of `stream`: reusable by that stream at once,
  // by others once the work queued on `stream` so far has finished.
  Status DeallocateAsync(void* pointer, StreamHandle stream);
  // The live block at `pointer` is also used by work on `stream` (PyTorch's
  // record_stream): its free is deferred until the work queued on `stream`
  // at the time of the free has finished. The block's own allocation stream
  // is a no-op. Errors as for a free: not a live allocation, not ours.
  Status RecordStream(void* pointer, StreamHandle stream);
  // True when `pointer` lies in this allocator's address spaces (live or
  // not): which of several allocators a pointer belongs to. No lock taken.
  bool Owns(const void* pointer) const;

  // Changes the memory limit (PyTorch's set_per_process_memory_fraction):
  // at least one granule, or none. Memory held above a lowered limit stays
  // held and serves later requests (as PyTorch keeps what it reserved); only
  // new granules are refused. InvalidArgument below one granule.
  Status SetMemoryLimit(std::optional<std::uint64_t> limit);

  // PyTorch's empty_cache: unmaps every cached page and gives every granule
  // not backing a live block back to the device (after waiting for the
  // device). Returns the bytes given back.
  Result<std::uint64_t> ReleaseCachedMemory();

  // Limit, held, in use, cached, per-space blocks and pages, the largest
  // free block, and up to `max_blocks` blocks of each space.
  std::string MemoryReport(std::size_t max_blocks) const;

  struct Counters {
    std::uint64_t map_calls = 0;        // Map calls (one per run of pages)
    std::uint64_t pages_mapped = 0;
    std::uint64_t pages_unmapped = 0;
    std::uint64_t pages_restitched = 0;  // cached pages taken for another place
    std::uint64_t granules_created = 0;
    std::uint64_t handles_created = 0;   // one device allocation each
    std::uint64_t handles_mapped = 0;    // one map call each on a GPU
    std::uint64_t handles_unmapped = 0;  // one unmap call each on a GPU
    std::uint64_t granules_released = 0;
    std::uint64_t synchronizations = 0;
    std::uint64_t event_waits = 0;  // waits for one fence, less than a synchronization
    std::uint64_t events_recorded = 0;
    std::uint64_t handles_moved = 0;  // run handles re-stitched whole: no release, no create
    std::uint64_t frees_deferred = 0;  // frees held for the events of recorded streams
  };
  // Every counter's name (as replay's JSON, the plug-in's statistics and
  // Python's counters() write it) and field, in declaration order.
  static constexpr std::array<std::pair<std::string_view, std::uint64_t Counters::*>, 14> kCounterFields = {{
      {"map_calls", &Counters::map_calls},
      {"pages_mapped", &Counters::pages_mapped},
      {"pages_unmapped", &Counters::pages_unmapped},
      {"pages_restitched", &Counters::pages_restitched},
      {"granules_created", &Counters::granules_created},
      {"handles_created", &Counters::handles_created},
      {"handles_mapped", &Counters::handles_mapped},
      {"handles_unmapped", &Counters::handles_unmapped},
      {"granules_released", &Counters::granules_released},
      {"synchronizations", &Counters::synchronizations},
      {"event_waits", &Counters::event_waits},
      {"events_recorded", &Counters::events_recorded},
      {"handles_moved", &Counters::handles_moved},
      {"frees_deferred", &Counters::frees_deferred},
  }};
  Counters counters() const;
  VmmParams params() const;  // a copy: SetMemoryLimit may change it
  std::uint64_t granularity() const;

 private:
  struct State;
  explicit VmmAllocator(std::unique_ptr<State> state);
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override;
  std::string_view DoName() const override { return "vmm"; }

  std::unique_ptr<State> state_;
};

}  // namespace tensormem
