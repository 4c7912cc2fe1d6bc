// SPDX-License-Identifier: Apache-2.0
// The host backend (aligned allocation from the C library) and the capped
// backend (a capacity in front of another backend).
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/resource.h"

namespace tensormem {
namespace {

class HostMemory final : public Backend {
 public:
  Result<void*> Reserve(std::uint64_t bytes, std::uint64_t alignment) override {
    if (!IsPowerOfTwo(alignment))
      return InvalidArgument("host backend: alignment " + std::to_string(alignment) +
                             " is not a power of two");
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    void* p = nullptr;
    // posix_memalign rather than aligned_alloc: no "size is a multiple of the
    // alignment" rule, and the error comes back as a value.
    const int rc = posix_memalign(&p, alignment, bytes == 0 ? 1 : bytes);
    if (rc != 0 || p == nullptr)
      return ResourceExhausted("host backend: cannot reserve " + std::to_string(bytes) +
                               " bytes: " + std::strerror(rc));
    std::lock_guard<std::mutex> lock(mutex_);
    regions_.emplace(p, bytes);
    return p;
  }
  // A region it did not hand out, or one given back already, is an error
  // (free() would abort or corrupt the heap), and so is a wrong size.
  Status Release(void* region, std::uint64_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = regions_.find(region);
      if (it == regions_.end())
        return NotFound("host backend: " + PointerToString(region) +
                        " is not a region it reserved (or it was released already)");
      if (it->second != bytes)
        return InvalidArgument("host backend: region " + PointerToString(region) + " was reserved with " +
                               std::to_string(it->second) + " bytes, released with " + std::to_string(bytes));
      regions_.erase(it);
    }
    std::free(region);
    return Status::Ok();
  }
  bool host_accessible() const override { return true; }
  std::string_view name() const override { return "host"; }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, std::uint64_t> regions_;  // live regions and their sizes
};

}  // namespace

Backend& HostBackend() {
  // Never destroyed: pools and allocators with static storage may release
  // their regions after this function's statics would be gone.
  static HostMemory* host = new HostMemory;
  return *host;
}

Result<void*> CappedBackend::Reserve(std::uint64_t bytes, std::uint64_t alignment) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > capacity_ || reserved_ > capacity_ - bytes) {
    ++refusals_;
    return ResourceExhausted("capped backend: " + std::to_string(bytes) + " bytes more would exceed " +
                             "the capacity of " + std::to_string(capacity_) + " bytes (" +
                             std::to_string(reserved_) + " held)");
  }
  TM_ASSIGN_OR_RETURN(void* p, below_.Reserve(bytes, alignment));
  reserved_ += bytes;
  return p;
}

Status CappedBackend::Release(void* region, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > reserved_)
    return Internal("capped backend: releasing " + std::to_string(bytes) + " bytes but only " +
                    std::to_string(reserved_) + " are held");
  TM_RETURN_IF_ERROR(below_.Release(region, bytes));
  reserved_ -= bytes;
  return Status::Ok();
}

std::uint64_t CappedBackend::reserved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

std::uint64_t CappedBackend::num_refusals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refusals_;
}

}  // namespace tensormem
