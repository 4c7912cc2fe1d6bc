// CUDA device memory: cudaSetDevice + cudaMalloc / cudaFree. Compiled only
// when CMake found a CUDA toolkit (TENSORMEM_HAVE_CUDA); otherwise
// MakeCudaBackend says the build has none. cudaMalloc aligns to at least
// 256 bytes; larger alignments are refused rather than silently ignored.
#include <memory>
#include <string>

#include "tensormem/allocators/backend.h"

#if TENSORMEM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tensormem {

#if TENSORMEM_HAVE_CUDA
namespace {

std::string CudaError(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

class CudaMemory final : public Backend {
 public:
  explicit CudaMemory(int device) : device_(device) {}

  Result<void*> Reserve(std::uint64_t bytes, std::uint64_t alignment) override {
    if (alignment > 256)
      return InvalidArgument("cuda backend: cudaMalloc aligns to 256 bytes, not " +
                             std::to_string(alignment));
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return FailedPrecondition("cuda backend: cudaSetDevice: " + CudaError(e));
    void* p = nullptr;
    e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // reset the last-error state so later calls start clean
      return ResourceExhausted("cuda backend: cudaMalloc(" + std::to_string(bytes) +
                               ") on device " + std::to_string(device_) + ": " + CudaError(e));
    }
    return p;
  }
  Status Release(void* region, std::uint64_t /*bytes*/) override {
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = cudaFree(region);
    if (e != cudaSuccess) return Internal("cuda backend: cudaFree: " + CudaError(e));
    return Status::Ok();
  }
  bool host_accessible() const override { return false; }
  std::string_view name() const override { return "cuda"; }

 private:
  int device_;
};

}  // namespace

bool CudaBackendCompiled() { return true; }

Result<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return FailedPrecondition("no usable CUDA device: cudaGetDeviceCount: " + CudaError(e));
  if (device < 0 || device >= count)
    return FailedPrecondition("no CUDA device " + std::to_string(device) + " (" +
                              std::to_string(count) + " present)");
  return std::unique_ptr<Backend>(new CudaMemory(device));
}

#else

bool CudaBackendCompiled() { return false; }

Result<std::unique_ptr<Backend>> MakeCudaBackend(int /*device*/) {
  return Unimplemented("this build of tensormem has no CUDA backend (no CUDA toolkit was found "
                       "when it was configured)");
}

#endif

}  // namespace tensormem
