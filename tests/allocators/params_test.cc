// SPDX-License-Identifier: Apache-2.0
// Every allocator's parameters are checked once (Validate), by the Create
// factory up front and by the constructor (every allocation then fails with
// the reason): a typed test feeds each allocator every invalid value.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "tensormem/allocators/system_allocator.h"

namespace tensormem {
namespace {

struct BfcCase {
  using Params = BfcParams;
  static std::vector<Params> Invalid() {
    std::vector<Params> v;
    Params p;
    p.initial_region_bytes = 0;  // doubled forever
    v.push_back(p);
    p = {};
    p.initial_region_bytes = std::numeric_limits<std::uint64_t>::max();  // wraps when rounded
    v.push_back(p);
    p = {};
    p.memory_limit = 0;
    v.push_back(p);
    p = {};
    p.memory_limit = 255;
    v.push_back(p);
    p = {};
    p.growth = BfcGrowth::kReserveAll;  // without a finite limit
    v.push_back(p);
    p = {};
    p.growth = static_cast<BfcGrowth>(42);
    v.push_back(p);
    return v;
  }
  static std::vector<Params> Valid() {
    Params reserve;
    reserve.growth = BfcGrowth::kReserveAll;
    reserve.memory_limit = 1 << 20;
    Params tiny;
    tiny.initial_region_bytes = 1;
    return {Params{}, CompactBfcParams(), reserve, tiny};
  }
  static Result<std::unique_ptr<BfcAllocator>> Create(const Params& p) {
    return BfcAllocator::Create(HostBackend(), p);
  }
  static std::unique_ptr<MemoryResource> Construct(const Params& p) {
    return std::make_unique<BfcAllocator>(HostBackend(), p);
  }
};

struct PoolCase {
  using Params = BufferPoolParams;
  static std::vector<Params> Invalid() {
    std::vector<Params> v;
    for (std::uint64_t a : {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{48},
                            kMaxAllocationAlignment * 2, std::numeric_limits<std::uint64_t>::max()}) {
      Params p;
      p.split_granularity = a;
      v.push_back(p);
    }
    Params p;
    p.defer_strategy = static_cast<OffsetsStrategy>(1000);
    v.push_back(p);
    return v;
  }
  static std::vector<Params> Valid() {
    Params one;
    one.split_granularity = 1;
    return {Params{}, one};
  }
  static Result<std::unique_ptr<BufferPool>> Create(const Params& p) {
    return BufferPool::Create(HostBackend(), p);
  }
  static std::unique_ptr<MemoryResource> Construct(const Params& p) {
    return std::make_unique<BufferPool>(HostBackend(), p);
  }
};

struct SystemCase {
  using Params = SystemAllocatorParams;
  static std::vector<Params> Invalid() { return {}; }  // every value of its one bool is valid
  static std::vector<Params> Valid() {
    Params untracked;
    untracked.track_pointers = false;
    return {Params{}, untracked};
  }
  static Result<std::unique_ptr<SystemAllocator>> Create(const Params& p) {
    return SystemAllocator::Create(p);
  }
  static std::unique_ptr<MemoryResource> Construct(const Params& p) {
    return std::make_unique<SystemAllocator>(p);
  }
};

template <typename T>
class ParamsTest : public ::testing::Test {};
using Cases = ::testing::Types<BfcCase, PoolCase, SystemCase>;
TYPED_TEST_SUITE(ParamsTest, Cases);

TYPED_TEST(ParamsTest, EveryInvalidValueIsRefusedByValidateCreateAndAllocate) {
  for (const auto& p : TypeParam::Invalid()) {
    const Status v = Validate(p);
    EXPECT_EQ(v.code(), StatusCode::kInvalidArgument) << v.message();
    auto created = TypeParam::Create(p);
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.status().message(), v.message());
    // The constructor never crashes or loops; every allocation reports why.
    std::unique_ptr<MemoryResource> r = TypeParam::Construct(p);
    Result<void*> a = r->Allocate(100);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().message(), v.message());
  }
}

TYPED_TEST(ParamsTest, ValidValuesServeDistinctLiveAllocations) {
  for (const auto& p : TypeParam::Valid()) {
    ASSERT_TRUE(Validate(p).ok()) << Validate(p).message();
    auto created = TypeParam::Create(p);
    ASSERT_TRUE(created.ok()) << created.status().message();
    MemoryResource& r = **created;
    Result<void*> a = r.Allocate(100);
    Result<void*> b = r.Allocate(100);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE(*a, *b);
    EXPECT_TRUE(r.Deallocate(*a).ok());
    EXPECT_TRUE(r.Deallocate(*b).ok());
  }
}

TEST(BufferPoolParams, ZeroSplitGranularityNoLongerHandsOutOneAddressTwice) {
  BufferPoolParams p;
  p.split_granularity = 0;
  BufferPool pool(HostBackend(), p);
  EXPECT_FALSE(pool.Allocate(64).ok());
  EXPECT_FALSE(pool.DeferAllocate(64).ok());
  EXPECT_FALSE(pool.DeferCompute().ok());
}

}  // namespace
}  // namespace tensormem
