// SPDX-License-Identifier: Apache-2.0
// LoggingAdaptor: one RAPIDS replay-log line per successful allocate and
// free, written under a mutex (so lines never interleave). Threads are
// numbered 0, 1, ... in order of first appearance; Time is microseconds
// since the adaptor was made; Stream is always 0.
#include <ostream>
#include <thread>

#include <mutex>

#include "allocators/adaptor_util.h"
#include "tensormem/allocators/adaptors.h"

namespace tensormem {

LoggingAdaptor::LoggingAdaptor(MemoryResource& upstream, std::ostream& out)
    : upstream_(upstream), out_(out), sizes_(std::make_unique<internal::LiveSizes>()) {
  out_ << "Thread,Time,Action,Pointer,Size,Stream\n";
}
LoggingAdaptor::~LoggingAdaptor() = default;

void LoggingAdaptor::Log(const char* action, const void* pointer, std::uint64_t bytes) {
  const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  const std::size_t thread = thread_numbers_.emplace(tid, thread_numbers_.size()).first->second;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start_)
                      .count();
  out_ << thread << ',' << us << ',' << action << ',' << PointerToString(pointer) << ',' << bytes
       << ",0\n";
}

Result<void*> LoggingAdaptor::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  Result<void*> p = upstream_.Allocate(bytes, alignment);
  if (!p.ok()) return p;
  std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
  sizes_->Insert(*p, bytes);
  Log("allocate", *p, bytes);
  return p;
}

Status LoggingAdaptor::DoDeallocate(void* pointer) {
  // Free and log under one lock, so that a concurrent allocation reusing
  // the address is always logged after this free.
  std::lock_guard<internal::AdaptiveMutex> lock(sizes_->mutex);
  TM_RETURN_IF_ERROR(upstream_.Deallocate(pointer));
  const std::uint64_t* known = sizes_->Find(pointer);
  const std::uint64_t bytes = known == nullptr ? 0 : *known;
  if (known != nullptr) sizes_->Erase(pointer);
  Log("free", pointer, bytes);
  return Status::Ok();
}

}  // namespace tensormem
