// SPDX-License-Identifier: Apache-2.0
// CUDA device memory for the BFC allocator's regions: cuMemAlloc / cuMemFree
// in the device's primary context (the one the CUDA runtime and PyTorch
// use). The driver is opened at run time (cuda_driver.h), so nothing here
// links the CUDA runtime. Compiled only when CMake found a CUDA toolkit
// (TENSORMEM_HAVE_CUDA, for cuda.h); otherwise MakeCudaBackend says the build
// has none. cuMemAlloc aligns to at least 256 bytes; larger alignments are
// refused rather than silently ignored.
#include <memory>
#include <string>

#include "tensormem/allocators/backend.h"

#if TENSORMEM_HAVE_CUDA
#include "cuda_driver.h"
#endif

namespace tensormem {

#if TENSORMEM_HAVE_CUDA
namespace {

class CudaMemory final : public Backend {
 public:
  CudaMemory(const cuda::Driver& d, int ordinal, CUcontext context) : d_(d), ordinal_(ordinal), context_(context) {}

  Result<void*> Reserve(std::uint64_t bytes, std::uint64_t alignment) override {
    if (alignment > 256)
      return InvalidArgument("cuda backend: cuMemAlloc aligns to 256 bytes, not " + std::to_string(alignment));
    Scope scope(*this);
    CUdeviceptr p = 0;
    if (CUresult r = d_.cuMemAlloc(&p, bytes == 0 ? 1 : bytes); r != CUDA_SUCCESS)
      return ResourceExhausted("cuda backend: " + cuda::DriverError(d_, "cuMemAlloc(" + std::to_string(bytes) + ")", r) +
                               " on device " + std::to_string(ordinal_));
    return reinterpret_cast<void*>(p);
  }
  Status Release(void* region, std::uint64_t /*bytes*/) override {
    Scope scope(*this);
    if (CUresult r = d_.cuMemFree(reinterpret_cast<CUdeviceptr>(region)); r != CUDA_SUCCESS)
      return Internal("cuda backend: " + cuda::DriverError(d_, "cuMemFree", r));
    return Status::Ok();
  }
  bool host_accessible() const override { return false; }
  std::string_view name() const override { return "cuda"; }

 private:
  struct Scope : cuda::ContextScope {
    explicit Scope(const CudaMemory& m) : cuda::ContextScope(m.d_, m.context_) {}
  };

  const cuda::Driver& d_;
  int ordinal_;
  CUcontext context_;
};

}  // namespace

bool CudaBackendCompiled() { return true; }

Result<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  const cuda::Driver& d = cuda::LoadDriver();
  if (d.library == nullptr) return FailedPrecondition("no usable CUDA device: " + d.error);
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS)
    return FailedPrecondition("no usable CUDA device: " + cuda::DriverError(d, "cuInit", r));
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return FailedPrecondition("no usable CUDA device: " + cuda::DriverError(d, "cuDeviceGetCount", r));
  if (device < 0 || device >= count)
    return FailedPrecondition("no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                              " present)");
  CUdevice dev = 0;
  if (CUresult r = d.cuDeviceGet(&dev, device); r != CUDA_SUCCESS)
    return FailedPrecondition("no usable CUDA device: " + cuda::DriverError(d, "cuDeviceGet", r));
  CUcontext context = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&context, dev); r != CUDA_SUCCESS)
    return FailedPrecondition("no usable CUDA device: " + cuda::DriverError(d, "cuDevicePrimaryCtxRetain", r));
  return std::unique_ptr<Backend>(new CudaMemory(d, device, context));
}

#else

bool CudaBackendCompiled() { return false; }

Result<std::unique_ptr<Backend>> MakeCudaBackend(int /*device*/) {
  return Unimplemented("this build of tensormem has no CUDA backend (no CUDA toolkit was found "
                       "when it was configured)");
}

#endif

}  // namespace tensormem
