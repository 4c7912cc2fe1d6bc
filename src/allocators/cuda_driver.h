// SPDX-License-Identifier: Apache-2.0
// The CUDA driver API, opened at run time. libcuda.so.1 is loaded with
// dlopen and each entry point looked up by name, so the library links
// neither libcuda nor the CUDA runtime: a consumer of the installed package
// needs no CUDA toolkit, and a machine without a driver gets a clear error
// instead of failing to load. cuda.h (from the toolkit CMake found) supplies
// only the types. Compiled only with TENSORMEM_HAVE_CUDA.
#pragma once

#include <cuda.h>

#include <string>

namespace tensormem::cuda {

// Every driver call tensormem makes: (member, exported symbol). One list, so
// the struct's members and the lookups cannot drift apart.
#define TM_CUDA_DRIVER_FUNCTIONS(X)                               \
  X(cuInit, "cuInit")                                             \
  X(cuGetErrorString, "cuGetErrorString")                         \
  X(cuDeviceGetCount, "cuDeviceGetCount")                         \
  X(cuDeviceGet, "cuDeviceGet")                                   \
  X(cuDeviceGetName, "cuDeviceGetName")                           \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")                 \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")         \
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                           \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2")                      \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2")                        \
  X(cuCtxSynchronize, "cuCtxSynchronize")                         \
  X(cuMemAlloc, "cuMemAlloc_v2")                                  \
  X(cuMemFree, "cuMemFree_v2")                                    \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity") \
  X(cuMemCreate, "cuMemCreate")                                   \
  X(cuMemRelease, "cuMemRelease")                                 \
  X(cuMemAddressReserve, "cuMemAddressReserve")                   \
  X(cuMemAddressFree, "cuMemAddressFree")                         \
  X(cuMemMap, "cuMemMap")                                         \
  X(cuMemUnmap, "cuMemUnmap")                                     \
  X(cuMemSetAccess, "cuMemSetAccess")                             \
  X(cuEventCreate, "cuEventCreate")                               \
  X(cuEventRecord, "cuEventRecord")                               \
  X(cuEventQuery, "cuEventQuery")                                 \
  X(cuEventSynchronize, "cuEventSynchronize")                     \
  X(cuEventDestroy, "cuEventDestroy_v2")                          \
  X(cuStreamIsCapturing, "cuStreamIsCapturing")                   \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2")

struct Driver {
  void* library = nullptr;  // null when the driver could not be opened: `error` says why
  std::string error;
#define TM_CUDA_DRIVER_MEMBER(name, symbol) decltype(&::name) name = nullptr;
  TM_CUDA_DRIVER_FUNCTIONS(TM_CUDA_DRIVER_MEMBER)
#undef TM_CUDA_DRIVER_MEMBER
};

// Opened once per process, on first use.
const Driver& LoadDriver();

// "call: the driver's text for r".
std::string DriverError(const Driver& d, const std::string& call, CUresult r);

// Makes a context (a device's primary context, the one the CUDA runtime and
// PyTorch use) current for one call: pushed only when another context is
// current, popped again at the end of the scope.
class ContextScope {
 public:
  ContextScope(const Driver& d, CUcontext context) : d_(d) {
    CUcontext current = nullptr;
    d_.cuCtxGetCurrent(&current);
    if (current != context) pushed_ = d_.cuCtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (pushed_) d_.cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  const Driver& d_;
  bool pushed_ = false;
};

}  // namespace tensormem::cuda
