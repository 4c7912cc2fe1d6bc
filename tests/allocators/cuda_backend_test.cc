// SPDX-License-Identifier: Apache-2.0
// The CUDA backend: built when a CUDA toolkit was found; run only where a
// device is present (skipped with the reason elsewhere).
#include <gtest/gtest.h>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"

namespace tensormem {
namespace {

TEST(CudaBackend, BfcOnDeviceMemory) {
  Result<std::unique_ptr<Backend>> backend = MakeCudaBackend(0);
  if (!CudaBackendCompiled()) {
    ASSERT_EQ(backend.status().code(), StatusCode::kUnimplemented);
    GTEST_SKIP() << backend.status().message();
  }
  if (!backend.ok()) {
    ASSERT_EQ(backend.status().code(), StatusCode::kFailedPrecondition);
    GTEST_SKIP() << "no CUDA device here: " << backend.status().message();
  }
  Backend& device = **backend;
  EXPECT_FALSE(device.host_accessible());
  EXPECT_EQ(device.Reserve(4096, 4096).status().code(), StatusCode::kInvalidArgument);
  BfcAllocator bfc(device);
  std::vector<void*> live;
  for (int i = 0; i < 100; ++i) {
    Result<void*> p = bfc.Allocate(1000 + static_cast<std::uint64_t>(i) * 4096, 256);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*p) % 256, 0u);
    live.push_back(*p);
  }
  for (void* p : live) ASSERT_TRUE(bfc.Deallocate(p).ok());
  EXPECT_EQ(bfc.GetStats().bytes_in_use, 0u);
  EXPECT_EQ(bfc.ReleaseFreeRegions(), bfc.GetStats().peak_bytes_reserved);
}

}  // namespace
}  // namespace tensormem
