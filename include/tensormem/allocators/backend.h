// SPDX-License-Identifier: Apache-2.0
// Where an allocator's memory comes from: a backend hands out large regions
// and takes them back. The BFC allocator and the buffer pool sit on one.
//
// - HostBackend: host memory (aligned allocation from the C library).
// - CUDA device memory (cudaMalloc / cudaFree): compiled only when CMake
//   finds a CUDA toolkit (TENSORMEM_HAVE_CUDA); MakeCudaBackend says why it
//   is unavailable otherwise (not compiled, no device, driver missing).
// - VirtualMemoryBackend: memory committed contiguously inside one reserved
//   address range, so regions can coalesce: host pages, or granules of any
//   PhysicalMemory (CUDA device memory included: PyTorch's expandable
//   segments).
// - CappedBackend: wraps another backend and refuses regions beyond a
//   capacity, as a device with N bytes of memory would (tests, simulation).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "tensormem/allocators/physical_memory.h"
#include "tensormem/status.h"

namespace tensormem {

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  // A region of exactly `bytes` bytes aligned to `alignment` (a power of
  // two). ResourceExhausted when the memory below refuses.
  virtual Result<void*> Reserve(std::uint64_t bytes, std::uint64_t alignment) = 0;
  // Gives a region back; `bytes` is the size it was reserved with.
  virtual Status Release(void* region, std::uint64_t bytes) = 0;
  // True when the CPU may read and write the memory (tests fill blocks with
  // patterns only then).
  virtual bool host_accessible() const = 0;
  virtual std::string_view name() const = 0;

  // True when regions may be adjacent in memory and one Release may cover
  // several adjacent regions (what the BFC allocator's coalesce_regions
  // needs, as with TensorFlow's GPU virtual-memory allocator).
  virtual bool contiguous() const { return false; }
  // Where the next region with alignment <= 256 will start, when known.
  virtual const void* next_address() const { return nullptr; }

  // Giving back the memory of part of a live region while the region stays
  // reserved (a GPU unmaps and releases the granules): Decommit gives the
  // pages of [p, p + bytes) back, Recommit makes them usable again before
  // the range is used. Both take multiples of decommit_granularity(), which
  // is 0 where the backend cannot (then both are Unimplemented).
  virtual std::uint64_t decommit_granularity() const { return 0; }
  virtual Status Decommit(void* /*p*/, std::uint64_t /*bytes*/) {
    return Unimplemented(std::string(name()) + " backend: cannot decommit part of a region");
  }
  virtual Status Recommit(void* /*p*/, std::uint64_t /*bytes*/) {
    return Unimplemented(std::string(name()) + " backend: cannot recommit part of a region");
  }
};

// Host memory. Thread-safe; one shared instance. It knows its live regions:
// a Release of anything else, or with another size, is an error.
Backend& HostBackend();

// A backend with a capacity: Reserve fails with ResourceExhausted once the
// regions held would exceed `capacity` bytes. Thread-safe.
class CappedBackend final : public Backend {
 public:
  CappedBackend(Backend& below, std::uint64_t capacity) : below_(below), capacity_(capacity) {}
  Result<void*> Reserve(std::uint64_t bytes, std::uint64_t alignment) override;
  Status Release(void* region, std::uint64_t bytes) override;
  bool host_accessible() const override { return below_.host_accessible(); }
  std::string_view name() const override { return "capped"; }
  bool contiguous() const override { return below_.contiguous(); }
  const void* next_address() const override { return below_.next_address(); }
  std::uint64_t decommit_granularity() const override { return below_.decommit_granularity(); }
  Status Decommit(void* p, std::uint64_t bytes) override { return below_.Decommit(p, bytes); }
  Status Recommit(void* p, std::uint64_t bytes) override { return below_.Recommit(p, bytes); }

  std::uint64_t reserved() const;
  std::uint64_t num_refusals() const;

 private:
  Backend& below_;
  const std::uint64_t capacity_;
  mutable std::mutex mutex_;
  std::uint64_t reserved_ = 0;
  std::uint64_t refusals_ = 0;
};

// Host virtual memory, handed out contiguously: one range of address space
// is reserved up front (PROT_NONE, nothing committed) and each region is
// committed at its top, right after the previous one (like sbrk, or a GPU
// virtual-memory allocator's cuMemMap). Pages are made read-write ahead of
// the top in steps of `commit_step` bytes, so growing by small regions costs
// few system calls (pages never touched still cost no memory). Releasing
// regions at the top lowers it and decommits the pages more than a step
// above it; a region below the top is decommitted only once everything
// above it is released. Thread-safe.
class VirtualMemoryBackend final : public Backend {
 public:
  // `address_space` bytes of addresses are reserved (not memory), rounded up
  // to whole pages (at least one); where the system refuses that much
  // (ulimit -v, sanitizers), the largest halving of it down to 1/1024 that it
  // grants.
  explicit VirtualMemoryBackend(std::uint64_t address_space = std::uint64_t{1} << 40,
                                std::uint64_t commit_step = std::uint64_t{64} << 20);
  // The same over granules of `memory` (which must outlive the backend):
  // each commit maps one new handle of the granules it adds at the top of
  // the range; decommitting unmaps and releases the handles wholly above
  // what stays. Steps are rounded up to whole granules. With
  // `release_granules` every granule is a handle of its own (a create and a
  // map call each, as PyTorch's expandable segments pay per page), so that
  // any granule of a region can be given back (Decommit) and taken again.
  VirtualMemoryBackend(PhysicalMemory& memory, std::uint64_t address_space = std::uint64_t{1} << 40,
                       std::uint64_t commit_step = 0, bool release_granules = false);
  ~VirtualMemoryBackend() override;
  Result<void*> Reserve(std::uint64_t bytes, std::uint64_t alignment) override;
  Status Release(void* region, std::uint64_t bytes) override;
  bool host_accessible() const override;
  std::string_view name() const override { return "virtual"; }
  bool contiguous() const override { return true; }
  const void* next_address() const override;
  // Host pages: parts of regions are decommitted in 2 MiB steps (a GPU's
  // granule, so the calls counted are those a GPU would make) with
  // madvise(MADV_DONTNEED); a recommitted page comes back on its first
  // write. Over granules with release_granules: the granule (Decommit
  // waits for the device, then unmaps and releases each granule of the
  // range; Recommit creates and maps them again). Over granules without
  // it: 0 (a handle spans a whole commit step and cannot be unmapped in
  // part).
  std::uint64_t decommit_granularity() const override;
  Status Decommit(void* p, std::uint64_t bytes) override;
  Status Recommit(void* p, std::uint64_t bytes) override;

  // Bytes of live regions.
  std::uint64_t reserved() const;
  // Bytes of memory committed (pages made read-write, or granules mapped).
  std::uint64_t committed() const;
  // What a device pays for (decommits and recommits on host pages too).
  struct Counters {
    std::uint64_t handles_created = 0;
    std::uint64_t handles_released = 0;
    std::uint64_t decommits = 0;  // Decommit calls (a GPU: unmap + release per granule)
    std::uint64_t recommits = 0;  // Recommit calls (a GPU: create + map per granule)
  };
  Counters counters() const;

 private:
  struct State;
  static Status Commit(State& s, std::uint64_t new_committed);
  static void Decommit(State& s, std::uint64_t keep);
  static Status MapSingleGranules(State& s, std::uint64_t offset, std::uint64_t count);
  static Status MapHoles(State& s, std::uint64_t lo, std::uint64_t hi);
  static Status ReleaseSingleGranules(State& s, std::uint64_t offset, std::uint64_t bytes);
  static Result<std::uint64_t> CommittedRange(const State& s, void* p, std::uint64_t bytes);
  std::unique_ptr<State> state_;
};

// True when this build has the CUDA backend compiled in.
bool CudaBackendCompiled();

// CUDA device memory on `device` (cudaSetDevice + cudaMalloc / cudaFree).
// Unimplemented when the build has no CUDA toolkit; FailedPrecondition when
// no usable device is present (the message carries CUDA's reason).
Result<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace tensormem
