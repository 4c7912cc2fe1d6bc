// Where an allocator's memory comes from: a backend hands out large regions
// and takes them back. The BFC allocator and the buffer pool sit on one.
//
// - HostBackend: host memory (aligned allocation from the C library).
// - CUDA device memory (cudaMalloc / cudaFree): compiled only when CMake
//   finds a CUDA toolkit (TENSORMEM_HAVE_CUDA); MakeCudaBackend says why it
//   is unavailable otherwise (not compiled, no device, driver missing).
// - CappedBackend: wraps another backend and refuses regions beyond a
//   capacity, as a device with N bytes of memory would (tests, simulation).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

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
};

// Host memory. Stateless and thread-safe; one shared instance.
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

  std::uint64_t reserved() const;
  std::uint64_t num_refusals() const;

 private:
  Backend& below_;
  const std::uint64_t capacity_;
  mutable std::mutex mutex_;
  std::uint64_t reserved_ = 0;
  std::uint64_t refusals_ = 0;
};

// True when this build has the CUDA backend compiled in.
bool CudaBackendCompiled();

// CUDA device memory on `device` (cudaSetDevice + cudaMalloc / cudaFree).
// Unimplemented when the build has no CUDA toolkit; FailedPrecondition when
// no usable device is present (the message carries CUDA's reason).
Result<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace tensormem
