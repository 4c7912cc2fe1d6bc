// SPDX-License-Identifier: Apache-2.0
// The PyTorch plug-in (see tensormem_torch.h): one vmm allocator per device
// over CUDA physical memory, created at the device's first allocation with
// the settings of the environment. PyTorch calls malloc and free with the
// stream of the allocation, so a block freed on a stream is reusable by that
// stream at once and by others after its event (the vmm allocator's rule);
// a block PyTorch's record_stream marked as used on other streams is freed
// once their work queued at the free has finished.
#include "tensormem_torch.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/vmm_allocator.h"
#include "out_of_memory.h"

#define TM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using tensormem::MakeCudaPhysicalMemory;
using tensormem::PhysicalMemory;
using tensormem::Result;
using tensormem::Status;
using tensormem::VmmAllocator;
using tensormem::VmmParams;

constexpr int kMaxDevices = 64;

struct Device {
  std::unique_ptr<PhysicalMemory> memory;
  std::unique_ptr<VmmAllocator> vmm;
};

std::mutex g_mutex;
// Never destroyed: at process exit the static destructors run after PyTorch
// and the CUDA driver have torn their state down, and releasing granules and
// events then crashed (record_stream_check.py, PyTorch 2.11 on an H100: a
// segmentation fault at exit after every check had passed). The driver takes
// the memory back with the process, as with PyTorch's own allocator.
std::array<std::unique_ptr<Device>, kMaxDevices>& g_devices =
    *new std::array<std::unique_ptr<Device>, kMaxDevices>();
std::array<std::string, kMaxDevices> g_device_errors;  // why a device could not start
thread_local std::string t_last_error;

// A failure of a call that returns nothing to PyTorch (free, the hooks) or
// NULL: kept for tensormem_torch_last_error() and said on stderr, where
// someone will see it.
void SayFailure(std::string message) {
  t_last_error = std::move(message);
  std::fprintf(stderr, "%s\n", t_last_error.c_str());
}

// Every device's allocator created so far.
std::vector<VmmAllocator*> AllAllocators() {
  std::vector<VmmAllocator*> all;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const std::unique_ptr<Device>& d : g_devices)
    if (d) all.push_back(d->vmm.get());
  return all;
}

// TENSORMEM_VMM_LIMIT etc.: a whole number, or the error says which.
Status ReadSize(const char* name, std::optional<std::uint64_t>* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return Status::Ok();
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (*end != '\0' || v[0] == '-')
    return tensormem::InvalidArgument(std::string(name) + "='" + v + "' is not a whole number");
  *out = x;
  return Status::Ok();
}

// TENSORMEM_VMM_GROWTH_SLACK: a fraction (checked by Validate).
Status ReadFraction(const char* name, std::optional<double>* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return Status::Ok();
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (*end != '\0') return tensormem::InvalidArgument(std::string(name) + "='" + v + "' is not a number");
  *out = x;
  return Status::Ok();
}

Result<VmmParams> ParamsFromEnvironment() {
  VmmParams p;
  std::optional<std::uint64_t> limit, small, restitch;
  if (Status s = ReadSize("TENSORMEM_VMM_LIMIT", &limit); !s.ok()) return s;
  if (Status s = ReadSize("TENSORMEM_VMM_SMALL", &small); !s.ok()) return s;
  if (Status s = ReadSize("TENSORMEM_VMM_RESTITCH", &restitch); !s.ok()) return s;
  std::optional<double> slack;
  if (Status s = ReadFraction("TENSORMEM_VMM_GROWTH_SLACK", &slack); !s.ok()) return s;
  if (slack) p.growth_slack = *slack;
  std::optional<double> ahead;
  if (Status s = ReadFraction("TENSORMEM_VMM_GROW_AHEAD", &ahead); !s.ok()) return s;
  if (ahead) p.grow_ahead = *ahead;
  std::optional<std::uint64_t> protect;
  if (Status s = ReadSize("TENSORMEM_VMM_PROTECT_REFAULTED", &protect); !s.ok()) return s;
  if (protect) p.protect_refaulted = *protect != 0;
  std::optional<std::uint64_t> max_handle;
  if (Status s = ReadSize("TENSORMEM_VMM_MAX_HANDLE", &max_handle); !s.ok()) return s;
  if (max_handle) p.max_handle_granules = *max_handle;
  if (limit) p.memory_limit = *limit;
  if (small) p.small_request_bytes = *small;
  if (restitch) p.restitch_before_growing = *restitch != 0;
  if (Status s = tensormem::Validate(p); !s.ok()) return s;
  return p;
}

// The device's allocator, created on first use; null with t_last_error set.
VmmAllocator* Get(int device, bool create) {
  if (device < 0 || device >= kMaxDevices) {
    t_last_error = "tensormem: device " + std::to_string(device) + " is out of range";
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_devices[device]) return g_devices[device]->vmm.get();
  if (!create) return nullptr;
  if (!g_device_errors[device].empty()) {
    t_last_error = g_device_errors[device];
    return nullptr;
  }
  auto fail = [&](const Status& s) -> VmmAllocator* {
    g_device_errors[device] = "tensormem: device " + std::to_string(device) + ": " + s.ToString();
    SayFailure(g_device_errors[device]);
    return nullptr;
  };
  Result<VmmParams> params = ParamsFromEnvironment();
  if (!params.ok()) return fail(params.status());
  Result<std::unique_ptr<PhysicalMemory>> memory = MakeCudaPhysicalMemory(device);
  if (!memory.ok()) return fail(memory.status());
  auto d = std::make_unique<Device>();
  d->memory = std::move(*memory);
  Result<std::unique_ptr<VmmAllocator>> vmm = VmmAllocator::Create(*d->memory, *params);
  if (!vmm.ok()) return fail(vmm.status());
  d->vmm = std::move(*vmm);
  g_devices[device] = std::move(d);
  return g_devices[device]->vmm.get();
}

}  // namespace

namespace {

// The C functions let no C++ exception out (a C caller cannot catch one):
// the library reports errors as values, but its bookkeeping can still run
// out of host memory (std::bad_alloc). `what` names the call; a function
// with a result returns `failed` then.
void SayException(const char* what, const std::exception& e) {
  t_last_error = std::string("tensormem: ") + what + ": " + e.what() + " (host memory for the allocator's bookkeeping)";
  SayFailure(t_last_error);
}
template <typename F>
void NoThrow(const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    SayException(what, e);
  }
}
template <typename F, typename R>
R NoThrow(const char* what, F&& f, R failed) {
  try {
    return f();
  } catch (const std::exception& e) {
    SayException(what, e);
    return failed;
  }
}

// An allocation for PyTorch: the block, or null with t_last_error set.
void* AllocateOrNull(ssize_t size, int device, void* stream) {
  if (size < 0) {
    t_last_error = "tensormem: negative size " + std::to_string(size);
    return nullptr;
  }
  VmmAllocator* vmm = Get(device, true);
  if (vmm == nullptr) return nullptr;
  // CUDA graphs need a private pool whose blocks outlive the capture (PyTorch
  // keeps one; the plug-in has none), and a capturing stream takes no event
  // queries or synchronisation: refuse plainly rather than corrupt a replay.
  if (Result<bool> capturing = g_devices[device]->memory->StreamCapturing(
          reinterpret_cast<tensormem::StreamHandle>(stream));
      !capturing.ok() || *capturing) {
    SayFailure(capturing.ok() ? "tensormem: allocation on a stream being captured into a CUDA graph "
                                "(torch.cuda.graph, torch.compile mode='reduce-overhead'): the plug-in "
                                "has no graph memory pools; capture graphs with PyTorch's own allocator"
                              : "tensormem: " + capturing.status().ToString());
    return nullptr;
  }
  // 512-byte alignment, as PyTorch's caching allocator gives.
  Result<void*> p = vmm->AllocateAsync(static_cast<std::uint64_t>(size),
                                       reinterpret_cast<tensormem::StreamHandle>(stream), 512);
  if (!p.ok()) {
    t_last_error = p.status().code() == tensormem::StatusCode::kResourceExhausted
                       ? tensormem::torch_plugin::OutOfMemoryMessage(static_cast<std::uint64_t>(size),
                                                                      device, p.status())
                       : p.status().ToString();
    return nullptr;
  }
  return *p;
}

void* Allocate(ssize_t size, int device, void* stream) {
  return NoThrow("malloc", [&] { return AllocateOrNull(size, device, stream); }, static_cast<void*>(nullptr));
}

}  // namespace

TM_EXPORT void* tensormem_torch_malloc(ssize_t size, int device, void* stream) {
  return Allocate(size, device, stream);
}

TM_EXPORT void* tensormem_torch_malloc_or_raise(ssize_t size, int device, void* stream) {
  void* p = Allocate(size, device, stream);
  // PyTorch's pluggable allocator does not look at what alloc_fn returns: a
  // null became a tensor at address 0 (PyTorch 2.11 on an H100: no error, a
  // CUDA graph "captured", the process crashed at exit). An exception reaches
  // the caller as a Python RuntimeError with this message.
  if (p == nullptr && size != 0) throw std::runtime_error(t_last_error);
  return p;
}

TM_EXPORT void tensormem_torch_free(void* ptr, ssize_t /*size*/, int device, void* stream) {
  if (ptr == nullptr) return;
  NoThrow("free", [&] {
    VmmAllocator* vmm = Get(device, false);
    Status s = vmm == nullptr ? tensormem::NotFound("tensormem: free of " + tensormem::PointerToString(ptr) +
                                                    " on device " + std::to_string(device) +
                                                    ", which has no allocator")
                              : vmm->DeallocateAsync(ptr, reinterpret_cast<tensormem::StreamHandle>(stream));
    if (!s.ok()) SayFailure("tensormem: " + s.ToString());
  });
}

TM_EXPORT void tensormem_torch_record_stream(void* ptr, void* stream) {
  NoThrow("record_stream", [&] {
    // PyTorch passes no device: the allocator whose addresses hold ptr.
    VmmAllocator* owner = nullptr;
    for (VmmAllocator* vmm : AllAllocators())
      if (vmm->Owns(ptr)) owner = vmm;
    const Status s = owner == nullptr
                         ? tensormem::NotFound("tensormem: record_stream of " + tensormem::PointerToString(ptr) +
                                               ", which no device's allocator gave out")
                         : owner->RecordStream(ptr, reinterpret_cast<tensormem::StreamHandle>(stream));
    if (!s.ok()) SayFailure("tensormem: " + s.ToString());
  });
}

TM_EXPORT size_t tensormem_torch_stats(int device, char* buf, size_t len) {
  return NoThrow("stats", [&]() -> std::size_t {
    std::string json = "{}";
    if (VmmAllocator* vmm = Get(device, false)) {
      const tensormem::AllocatorStats s = vmm->GetStats();
      const VmmAllocator::Counters c = vmm->counters();
      std::string counters;
      for (const auto& [name, field] : VmmAllocator::kCounterFields)
        counters += ",\"" + std::string(name) + "\":" + std::to_string(c.*field);
      json = "{\"device\":" + std::to_string(device) + ",\"bytes_in_use\":" + std::to_string(s.bytes_in_use) +
             ",\"peak_bytes_in_use\":" + std::to_string(s.peak_bytes_in_use) +
             ",\"bytes_reserved\":" + std::to_string(s.bytes_reserved) +
             ",\"peak_bytes_reserved\":" + std::to_string(s.peak_bytes_reserved) +
             ",\"num_allocs\":" + std::to_string(s.num_allocs) + ",\"num_frees\":" + std::to_string(s.num_frees) +
             ",\"num_failed_allocs\":" + std::to_string(s.num_failed_allocs) +
             ",\"bytes_limit\":" + (s.bytes_limit ? std::to_string(*s.bytes_limit) : std::string("null")) +
             counters +
             ",\"granularity\":" + std::to_string(vmm->granularity()) + "}";
    }
    if (buf != nullptr && len > 0) {
      const std::size_t n = std::min(len - 1, json.size());
      json.copy(buf, n);
      buf[n] = '\0';
    }
    return json.size();
  }, std::size_t{0});
}

TM_EXPORT long long tensormem_torch_release_cached(int device) {
  return NoThrow("release_cached", [&]() -> long long {
    VmmAllocator* vmm = Get(device, false);
    if (vmm == nullptr) return 0;
    Result<std::uint64_t> r = vmm->ReleaseCachedMemory();
    if (!r.ok()) {
      t_last_error = r.status().ToString();
      return -1;
    }
    return static_cast<long long>(*r);
  }, -1LL);
}

TM_EXPORT void tensormem_torch_set_memory_fraction(double fraction, int device) {
  NoThrow("set_memory_fraction", [&] {
    auto fail = [](const std::string& why) { SayFailure("tensormem: set_memory_fraction: " + why); };
    if (!(fraction >= 0.0 && fraction <= 1.0)) return fail("fraction " + std::to_string(fraction) + " is not in [0, 1]");
    VmmAllocator* vmm = Get(device, true);
    if (vmm == nullptr) return fail(t_last_error);
    const std::optional<std::uint64_t> total = g_devices[device]->memory->total_bytes();
    if (!total) return fail("the device's total memory is unknown");
    const auto limit = static_cast<std::uint64_t>(fraction * static_cast<double>(*total));
    if (Status s = vmm->SetMemoryLimit(limit); !s.ok())
      return fail("fraction " + std::to_string(fraction) + " of " + std::to_string(*total) + " bytes: " + s.ToString());
  });
}

TM_EXPORT void tensormem_torch_empty_cache(void) {
  NoThrow("empty_cache", [] {
    for (VmmAllocator* vmm : AllAllocators())
      if (Result<std::uint64_t> r = vmm->ReleaseCachedMemory(); !r.ok()) SayFailure("tensormem: " + r.status().ToString());
  });
}

TM_EXPORT const char* tensormem_torch_last_error(void) { return t_last_error.c_str(); }
