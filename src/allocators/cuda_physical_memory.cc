// SPDX-License-Identifier: Apache-2.0
// CUDA physical memory through the driver's virtual memory management API.
// The driver (libcuda.so.1) is opened with dlopen (cuda_driver.h), so
// nothing links libcuda and a machine without a driver or device gets
// FailedPrecondition "no device" with the reason.
//
// One granule = one cuMemCreate allocation of the recommended granularity
// (cuMemMap maps whole allocations, so granules cannot be carved from a
// larger one). Every call runs with the device's primary context current
// (pushed when another context is current), as the CUDA runtime and PyTorch
// use it.
#include <mutex>
#include <string>
#include <vector>

#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/resource.h"

#if TENSORMEM_HAVE_CUDA
#include "cuda_driver.h"
#endif

namespace tensormem {

#if TENSORMEM_HAVE_CUDA
namespace {

using cuda::Driver;
using cuda::LoadDriver;

class CudaPhysicalMemory final : public PhysicalMemory {
 public:
  CudaPhysicalMemory(const Driver& d, CUdevice device, int ordinal, CUcontext context,
                     std::uint64_t granularity, std::string device_name)
      : d_(d), device_(device), ordinal_(ordinal), context_(context), granularity_(granularity),
        device_name_(std::move(device_name)) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device_;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  ~CudaPhysicalMemory() override {
    Scope scope(*this);
    for (CUevent e : spare_events_) d_.cuEventDestroy(e);
  }

  std::uint64_t granularity() const override { return granularity_; }
  bool host_accessible() const override { return false; }
  std::string_view name() const override { return "cuda"; }
  std::string description() const override {
    return "CUDA device " + std::to_string(ordinal_) + " (" + device_name_ + "), " +
           HumanBytes(granularity_) + " granules";
  }

  Result<void*> ReserveAddressRange(std::uint64_t bytes) override {
    Scope scope(*this);
    CUdeviceptr p = 0;
    if (CUresult r = d_.cuMemAddressReserve(&p, bytes, granularity_, 0, 0); r != CUDA_SUCCESS)
      return ResourceExhausted(Why("cuMemAddressReserve(" + std::to_string(bytes) + ")", r));
    return reinterpret_cast<void*>(p);
  }
  Status FreeAddressRange(void* base, std::uint64_t bytes) override {
    Scope scope(*this);
    if (CUresult r = d_.cuMemAddressFree(Ptr(base), bytes); r != CUDA_SUCCESS)
      return Internal(Why("cuMemAddressFree", r));
    return Status::Ok();
  }
  Status CreateGranules(std::size_t count, std::vector<GranuleHandle>& out,
                        std::uint64_t handle_granules = 1) override {
    if (handle_granules == 0) return InvalidArgument("cuda physical memory: handles of 0 granules");
    Scope scope(*this);
    const std::size_t before = out.size();
    const std::uint64_t bytes = handle_granules * granularity_;
    for (std::size_t i = 0; i < count; ++i) {
      CUmemGenericAllocationHandle h = 0;
      if (CUresult r = d_.cuMemCreate(&h, bytes, &prop_, 0); r != CUDA_SUCCESS) {
        for (std::size_t j = before; j < out.size(); ++j) d_.cuMemRelease(out[j]);
        out.resize(before);
        return ResourceExhausted(Why("cuMemCreate(" + std::to_string(bytes) + ")", r));
      }
      out.push_back(h);
    }
    return Status::Ok();
  }
  Status ReleaseGranule(GranuleHandle granule, std::uint64_t /*handle_granules*/ = 1) override {
    Scope scope(*this);
    if (CUresult r = d_.cuMemRelease(granule); r != CUDA_SUCCESS) return Internal(Why("cuMemRelease", r));
    return Status::Ok();
  }
  Status Map(void* address, std::span<const GranuleHandle> granules, std::uint64_t handle_granules = 1) override {
    Scope scope(*this);
    const CUdeviceptr base = Ptr(address);
    const std::uint64_t bytes = handle_granules * granularity_;
    for (std::size_t i = 0; i < granules.size(); ++i) {
      if (CUresult r = d_.cuMemMap(base + i * bytes, bytes, 0, granules[i], 0); r != CUDA_SUCCESS) {
        for (std::size_t j = 0; j < i; ++j) d_.cuMemUnmap(base + j * bytes, bytes);
        return ResourceExhausted(Why("cuMemMap", r));
      }
    }
    // One access call for the whole run: the driver pays per call.
    if (CUresult r = d_.cuMemSetAccess(base, granules.size() * bytes, &access_, 1); r != CUDA_SUCCESS) {
      for (std::size_t j = 0; j < granules.size(); ++j) d_.cuMemUnmap(base + j * bytes, bytes);
      return ResourceExhausted(Why("cuMemSetAccess", r));
    }
    return Status::Ok();
  }
  Status Unmap(void* address, std::size_t count, std::uint64_t handle_granules = 1) override {
    Scope scope(*this);
    const CUdeviceptr base = Ptr(address);
    const std::uint64_t bytes = handle_granules * granularity_;
    for (std::size_t i = 0; i < count; ++i)
      if (CUresult r = d_.cuMemUnmap(base + i * bytes, bytes); r != CUDA_SUCCESS)
        return Internal(Why("cuMemUnmap", r));
    return Status::Ok();
  }
  Status Synchronize() override {
    Scope scope(*this);
    if (CUresult r = d_.cuCtxSynchronize(); r != CUDA_SUCCESS) return Internal(Why("cuCtxSynchronize", r));
    return Status::Ok();
  }
  Result<EventHandle> RecordEvent(StreamHandle stream) override {
    Scope scope(*this);
    CUevent e = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!spare_events_.empty()) {
        e = spare_events_.back();
        spare_events_.pop_back();
      }
    }
    if (e == nullptr) {
      if (CUresult r = d_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS)
        return Internal(Why("cuEventCreate", r));
    }
    if (CUresult r = d_.cuEventRecord(e, reinterpret_cast<CUstream>(stream)); r != CUDA_SUCCESS) {
      d_.cuEventDestroy(e);
      return Internal(Why("cuEventRecord", r));
    }
    return reinterpret_cast<EventHandle>(e);
  }
  std::optional<std::uint64_t> total_bytes() const override {
    std::size_t bytes = 0;
    if (d_.cuDeviceTotalMem(&bytes, device_) != CUDA_SUCCESS) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
  }
  Result<bool> StreamCapturing(StreamHandle stream) override {
    if (stream == 0) return false;  // the legacy default stream cannot be captured: no driver call
    Scope scope(*this);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (CUresult r = d_.cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &status); r != CUDA_SUCCESS)
      return Internal(Why("cuStreamIsCapturing", r));
    return status != CU_STREAM_CAPTURE_STATUS_NONE;  // active, or invalidated by an error
  }
  bool EventCompleted(EventHandle event) override {
    if (event == 0) return true;
    Scope scope(*this);
    return d_.cuEventQuery(reinterpret_cast<CUevent>(event)) == CUDA_SUCCESS;
  }
  Status WaitForEvent(EventHandle event) override {
    if (event == 0) return Status::Ok();
    Scope scope(*this);
    if (CUresult r = d_.cuEventSynchronize(reinterpret_cast<CUevent>(event)); r != CUDA_SUCCESS)
      return Internal(Why("cuEventSynchronize", r));
    return Status::Ok();
  }
  void DestroyEvent(EventHandle event) override {
    if (event == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    spare_events_.push_back(reinterpret_cast<CUevent>(event));  // reused by the next record
  }

 private:
  // The device's primary context, current for one call.
  struct Scope : cuda::ContextScope {
    explicit Scope(const CudaPhysicalMemory& m) : cuda::ContextScope(m.d_, m.context_) {}
  };
  static CUdeviceptr Ptr(void* p) { return reinterpret_cast<CUdeviceptr>(p); }
  std::string Why(const std::string& call, CUresult r) const {
    const char* text = nullptr;
    d_.cuGetErrorString(r, &text);
    return "cuda physical memory on device " + std::to_string(ordinal_) + ": " + call + ": " +
           (text ? text : "error " + std::to_string(static_cast<int>(r)));
  }

  const Driver& d_;
  CUdevice device_;
  int ordinal_;
  CUcontext context_;
  std::uint64_t granularity_;
  std::string device_name_;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  std::mutex mutex_;
  std::vector<CUevent> spare_events_;
};

}  // namespace

bool CudaPhysicalMemoryCompiled() { return true; }

Result<std::unique_ptr<PhysicalMemory>> MakeCudaPhysicalMemory(int device) {
  const Driver& d = LoadDriver();
  if (d.library == nullptr) return FailedPrecondition("no device: " + d.error);
  auto why = [&](const char* call, CUresult r) {
    const char* text = nullptr;
    d.cuGetErrorString(r, &text);
    return std::string(call) + ": " + (text ? text : "error " + std::to_string(static_cast<int>(r)));
  };
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) return FailedPrecondition("no device: " + why("cuInit", r));
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return FailedPrecondition("no device: " + why("cuDeviceGetCount", r));
  if (device < 0 || device >= count)
    return FailedPrecondition("no device: CUDA device " + std::to_string(device) + " does not exist (" +
                              std::to_string(count) + " present)");
  CUdevice dev = 0;
  if (CUresult r = d.cuDeviceGet(&dev, device); r != CUDA_SUCCESS)
    return FailedPrecondition("no device: " + why("cuDeviceGet", r));
  int vmm = 0;
  d.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  if (vmm == 0)
    return FailedPrecondition("no device: CUDA device " + std::to_string(device) +
                              " does not support virtual memory management");
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof name - 1, dev);
  CUcontext context = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&context, dev); r != CUDA_SUCCESS)
    return FailedPrecondition("no device: " + why("cuDevicePrimaryCtxRetain", r));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  std::size_t granularity = 0;
  if (CUresult r = d.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
      r != CUDA_SUCCESS || granularity == 0 || !IsPowerOfTwo(granularity))
    return FailedPrecondition("no device: " + why("cuMemGetAllocationGranularity", r));
  return std::unique_ptr<PhysicalMemory>(new CudaPhysicalMemory(d, dev, device, context, granularity, name));
}

#else

bool CudaPhysicalMemoryCompiled() { return false; }

Result<std::unique_ptr<PhysicalMemory>> MakeCudaPhysicalMemory(int /*device*/) {
  return Unimplemented("this build of tensormem has no CUDA physical memory (no CUDA toolkit was found "
                       "when it was configured)");
}

#endif

}  // namespace tensormem
