// SPDX-License-Identifier: Apache-2.0
// Physical memory in granules, mapped into reserved virtual address ranges:
// the one interface below the `vmm` allocator and the VirtualMemoryBackend.
//
// A granule is the unit of physical memory (2 MiB on NVIDIA GPUs). Any
// granule can be mapped at any granule-aligned address of a reserved range,
// so a free granule anywhere can back a request anywhere (CUDA's virtual
// memory management API; GMLake's stitching; PyTorch's expandable segments).
//
// - HostPhysicalMemory: granules are pieces of one memfd_create file, mapped
//   with mmap(MAP_SHARED | MAP_FIXED) into a PROT_NONE reservation; runs and
//   is tested on every Linux machine.
// - CUDA (MakeCudaPhysicalMemory): cuMemCreate / cuMemAddressReserve /
//   cuMemMap / cuMemSetAccess / cuMemUnmap / cuMemRelease, the driver found at
//   run time (nothing links libcuda), FailedPrecondition "no device" where
//   there is none.
//
// Streams and events: device work is queued on streams, so memory freed on a
// stream may still be in use by work queued before the free. An event
// recorded at the free completes when that work has finished. On the host
// every event is complete at once (unless `manual_events` is set, for tests).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>
#include <string>
#include <string_view>

#include "tensormem/status.h"

namespace tensormem {

// Opaque handles: a granule, a stream (cudaStream_t; 0 is the default
// stream), an event (0 means "nothing to wait for").
using GranuleHandle = std::uint64_t;
using StreamHandle = std::uintptr_t;
using EventHandle = std::uintptr_t;

class PhysicalMemory {
 public:
  PhysicalMemory() = default;
  PhysicalMemory(const PhysicalMemory&) = delete;
  PhysicalMemory& operator=(const PhysicalMemory&) = delete;
  virtual ~PhysicalMemory() = default;

  // Bytes per granule (a power of two).
  virtual std::uint64_t granularity() const = 0;
  virtual bool host_accessible() const = 0;
  virtual std::string_view name() const = 0;
  // "device 0 (NVIDIA H100 80GB HBM3)", "host memfd"
  virtual std::string description() const { return std::string(name()); }

  // A range of addresses with no memory behind it (a multiple of the
  // granularity, aligned to it). Free it with every granule unmapped.
  virtual Result<void*> ReserveAddressRange(std::uint64_t bytes) = 0;
  virtual Status FreeAddressRange(void* base, std::uint64_t bytes) = 0;

  // A handle is `handle_granules` granules of one driver allocation: it is
  // created, mapped, unmapped and released as a whole. Every call is paid
  // per handle on a GPU (about 50 us for create and map on an H200, 2 MiB
  // or 20 MiB alike), so large handles serve large blocks for fewer calls.
  // Every call below takes the handles' size; handles of one call share it.

  // `count` new handles appended to `out` (all or none).
  virtual Status CreateGranules(std::size_t count, std::vector<GranuleHandle>& out,
                                std::uint64_t handle_granules = 1) = 0;
  // Gives a handle's memory back; it must not be mapped.
  virtual Status ReleaseGranule(GranuleHandle granule, std::uint64_t handle_granules = 1) = 0;
  // Maps handles[i] at address + i * handle_granules * granularity,
  // readable and writable.
  virtual Status Map(void* address, std::span<const GranuleHandle> granules,
                     std::uint64_t handle_granules = 1) = 0;
  // Unmaps `count` handles mapped one after another from `address`; the
  // addresses stay reserved. The caller makes sure no work in flight uses
  // them (Synchronize, or completed events).
  virtual Status Unmap(void* address, std::size_t count, std::uint64_t handle_granules = 1) = 0;

  // Waits until all work queued on the device has finished.
  virtual Status Synchronize() = 0;
  // An event recorded now on `stream` (0 where the device needs none).
  virtual Result<EventHandle> RecordEvent(StreamHandle stream) = 0;
  // True once the work queued before the event has finished.
  virtual bool EventCompleted(EventHandle event) = 0;
  // Waits until the work queued before the event has finished: less than a
  // Synchronize when the event was recorded a while ago.
  virtual Status WaitForEvent(EventHandle event) = 0;
  virtual void DestroyEvent(EventHandle event) = 0;
  // True while `stream` is being captured into a CUDA graph: then neither
  // events nor synchronisation may touch it, and memory handed out would be
  // baked into the graph. Devices without graphs: never.
  virtual Result<bool> StreamCapturing(StreamHandle /*stream*/) { return false; }
  // The device's total memory in bytes, where it has a fixed amount (a
  // GPU); nullopt for the host.
  virtual std::optional<std::uint64_t> total_bytes() const { return std::nullopt; }
};

struct HostPhysicalMemoryParams {
  // Bytes per granule: a power of two, a multiple of the page size.
  std::uint64_t granularity = std::uint64_t{2} << 20;
  // Tests only: events complete when CompleteEvents() is called (or waited
  // for, or by a Synchronize), so stream ordering can be checked on the host.
  bool manual_events = false;
  // Measurement: a device running behind the host. An event completes once
  // AdvanceDevice() has been called this many times after it was recorded
  // (the replay calls it once per trace event); 0 = at once. Not with
  // manual_events.
  std::uint64_t event_lag = 0;
};
Status Validate(const HostPhysicalMemoryParams& params);

// Host memory through one memfd: a handle is consecutive granule-sized
// pieces of the file (grown with ftruncate, given back with
// FALLOCATE_FL_PUNCH_HOLE and reused by handles of the same size); Map is
// mmap(MAP_SHARED | MAP_FIXED), one call per run of consecutive pieces;
// Unmap puts a PROT_NONE reservation back. Thread-safe.
class HostPhysicalMemory final : public PhysicalMemory {
 public:
  // Validates the params; FailedPrecondition when memfd_create is refused.
  static Result<std::unique_ptr<HostPhysicalMemory>> Create(const HostPhysicalMemoryParams& params = {});
  ~HostPhysicalMemory() override;

  std::uint64_t granularity() const override;
  bool host_accessible() const override { return true; }
  std::string_view name() const override { return "host"; }
  std::string description() const override;
  Result<void*> ReserveAddressRange(std::uint64_t bytes) override;
  Status FreeAddressRange(void* base, std::uint64_t bytes) override;
  Status CreateGranules(std::size_t count, std::vector<GranuleHandle>& out,
                        std::uint64_t handle_granules = 1) override;
  Status ReleaseGranule(GranuleHandle granule, std::uint64_t handle_granules = 1) override;
  Status Map(void* address, std::span<const GranuleHandle> granules, std::uint64_t handle_granules = 1) override;
  Status Unmap(void* address, std::size_t count, std::uint64_t handle_granules = 1) override;
  Status Synchronize() override;
  Result<EventHandle> RecordEvent(StreamHandle stream) override;
  bool EventCompleted(EventHandle event) override;
  Status WaitForEvent(EventHandle event) override;
  void DestroyEvent(EventHandle event) override;

  // Granules created and not released (a handle of n granules counts n).
  std::uint64_t granules_held() const;
  // Bytes of the granule file that hold memory: pages written and not
  // punched out (a granule mapped but never written costs none).
  std::uint64_t resident_bytes() const;
  // Calls made so far (what a device pays for): map, unmap, create, release, synchronize.
  struct CallCounts {
    std::uint64_t map = 0, unmap = 0, create = 0, release = 0, synchronize = 0, events = 0, event_waits = 0;
  };
  CallCounts call_counts() const;
  // manual_events: completes every event recorded so far; or those of one
  // stream (streams are independent: a wait for an event completes only its
  // stream's work up to it).
  void CompleteEvents();
  void CompleteEvents(StreamHandle stream);
  // event_lag: one step of the device's clock.
  void AdvanceDevice();

 private:
  struct State;
  explicit HostPhysicalMemory(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// True when this build has the CUDA implementation compiled in.
bool CudaPhysicalMemoryCompiled();

// CUDA device memory through the driver's virtual memory management API.
// Unimplemented when the build has no CUDA toolkit; FailedPrecondition "no
// device" (with the driver's reason) when libcuda or the device is missing or
// the device lacks virtual memory management.
Result<std::unique_ptr<PhysicalMemory>> MakeCudaPhysicalMemory(int device = 0);

}  // namespace tensormem
