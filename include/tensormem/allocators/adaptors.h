// SPDX-License-Identifier: Apache-2.0
// Adaptors: wrap any MemoryResource to add statistics, a limit, or a log.
// Each keeps a reference to the resource below (which must outlive it) and
// is thread-safe when that resource is.
//
// - StatisticsAdaptor counts what its callers asked for: allocations, bytes
//   requested in use and their peak, the largest request (whatever the
//   allocator below rounds to); reserved bytes come from below.
// - LimitingAdaptor refuses allocations that would take the requested bytes
//   in use above a limit (ResourceExhausted), without touching the resource
//   below.
// - LoggingAdaptor writes every allocation and free as a RAPIDS replay-log
//   CSV line (Thread,Time,Action,Pointer,Size,Stream), so a run can be
//   replayed (the benchmark harness, harness/replay.h) or planned ahead
//   (trace.h) later.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <unordered_map>

#include "tensormem/allocators/resource.h"

namespace tensormem {
namespace internal {
class LiveSizes;  // requested bytes per live pointer, and the adaptor's lock (src/allocators/adaptor_util.h)
}  // namespace internal

class StatisticsAdaptor final : public MemoryResource {
 public:
  explicit StatisticsAdaptor(MemoryResource& upstream);
  ~StatisticsAdaptor() override;

 private:
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override;
  std::string_view DoName() const override { return "statistics"; }

  MemoryResource& upstream_;
  std::unique_ptr<internal::LiveSizes> sizes_;
  AllocatorStats stats_;
};

class LimitingAdaptor final : public MemoryResource {
 public:
  LimitingAdaptor(MemoryResource& upstream, std::uint64_t limit);
  ~LimitingAdaptor() override;

 private:
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override;
  std::string_view DoName() const override { return "limiting"; }

  MemoryResource& upstream_;
  const std::uint64_t limit_;
  std::unique_ptr<internal::LiveSizes> sizes_;
  std::uint64_t in_use_ = 0;
  std::uint64_t failed_ = 0;
};

class LoggingAdaptor final : public MemoryResource {
 public:
  // Writes the header line at once. `out` must outlive the adaptor.
  LoggingAdaptor(MemoryResource& upstream, std::ostream& out);
  ~LoggingAdaptor() override;

 private:
  Result<void*> DoAllocate(std::uint64_t bytes, std::uint64_t alignment) override;
  Status DoDeallocate(void* pointer) override;
  AllocatorStats DoGetStats() const override { return upstream_.GetStats(); }
  std::string_view DoName() const override { return "logging"; }
  void Log(const char* action, const void* pointer, std::uint64_t bytes);

  MemoryResource& upstream_;
  std::ostream& out_;
  std::unique_ptr<internal::LiveSizes> sizes_;
  std::unordered_map<std::size_t, std::size_t> thread_numbers_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace tensormem
