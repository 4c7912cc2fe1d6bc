// SPDX-License-Identifier: Apache-2.0
#include "tensormem/lower_bounds.h"

#include <algorithm>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "core/positional_maximums.h"
#include "harness/generators.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

// Brute force over every task, straight from the definitions.
std::uint64_t BrutePeak(const std::vector<UsageRecord>& r) {
  std::uint64_t peak = 0;
  for (TaskIndex t = 0; t < 200; ++t) {
    std::uint64_t live = 0;
    for (const auto& x : r)
      if (x.first_task <= t && t <= x.last_task) live += x.size;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<std::uint64_t> BrutePositional(const std::vector<UsageRecord>& r) {
  std::vector<std::uint64_t> pm;
  for (TaskIndex t = 0; t < 200; ++t) {
    std::vector<std::uint64_t> live;
    for (const auto& x : r)
      if (x.first_task <= t && t <= x.last_task) live.push_back(x.size);
    std::sort(live.begin(), live.end(), std::greater<>());
    for (std::size_t k = 0; k < live.size(); ++k) {
      if (k >= pm.size()) pm.push_back(0);
      pm[k] = std::max(pm[k], live[k]);
    }
  }
  return pm;
}

TEST(LowerBounds, Empty) {
  EXPECT_EQ(PeakLiveBytes(std::vector<UsageRecord>{}), 0u);
  EXPECT_TRUE(PositionalMaximums({}).empty());
  EXPECT_EQ(MaxLiveTensors({}), 0u);
  EXPECT_EQ(ObjectsLowerBound({}), 0u);
}

TEST(LowerBounds, InclusiveLifetimesTouchingAtATaskConflict) {
  std::vector<UsageRecord> r = {{10, 0, 2}, {20, 2, 4}, {5, 5, 6}};
  EXPECT_EQ(PeakLiveBytes(r), 30u);
  EXPECT_EQ(PeakTask(r), 2);
  EXPECT_EQ(PositionalMaximums(r), (std::vector<std::uint64_t>{20, 10}));
  EXPECT_EQ(MaxLiveTensors(r), 2u);
}

TEST(LowerBounds, MatchBruteForceOnRandomRecords) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    auto r = internal::GenerateRandomRecords(1 + seed % 40, seed, 60, 100, /*zeros=*/true);
    ASSERT_EQ(PeakLiveBytes(r), BrutePeak(r)) << "seed " << seed;
    ASSERT_EQ(PositionalMaximums(r), BrutePositional(r)) << "seed " << seed;
    ASSERT_EQ(MaxLiveTensors(r), BrutePositional(r).size()) << "seed " << seed;  // zero sizes count
  }
}

// The 64-bit counts (2^31 records and more) run the same code as the 32-bit
// ones; too many records to test there, so they are forced here.
TEST(LowerBounds, PositionalMaximumsWithWideCountsMatch) {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    auto r = internal::GenerateRandomRecords(1 + seed % 40, seed, 60, 100, /*zeros=*/true);
    ASSERT_EQ(internal::PositionalMaximumsWithWideCounts(r), BrutePositional(r)) << "seed " << seed;
  }
  for (std::uint64_t seed = 1; seed <= 2; ++seed) {
    auto r = internal::GenerateNetworkRecords(20'000, seed);
    ASSERT_EQ(internal::PositionalMaximumsWithWideCounts(r), PositionalMaximums(r)) << "seed " << seed;
  }
}

TEST(LowerBounds, PeakSaturatesInsteadOfOverflowing) {
  const std::uint64_t big = ~std::uint64_t{0} / 2 + 1;
  std::vector<UsageRecord> r = {{big, 0, 1}, {big, 0, 1}, {big, 0, 1}};
  EXPECT_EQ(PeakLiveBytes(r), ~std::uint64_t{0});
  EXPECT_EQ(ObjectsLowerBound(r), ~std::uint64_t{0});
}

TEST(LowerBounds, GapsCountOnlyTheirWindow) {
  Problem p;
  p.buffers = {{"a", 2, 0, 9}, {"b", 2, 0, 9}};
  p.buffers[0].gaps = {{0, 4, true, 0, 1}};
  p.buffers[1].gaps = {{5, 9, true, 1, 2}};
  EXPECT_EQ(PeakLiveBytes(p), 3u);
  p.buffers[0].gaps[0].has_window = false;
  EXPECT_EQ(PeakLiveBytes(p), 3u);  // tasks 5..9: 2 + 1
}

}  // namespace
}  // namespace tensormem

namespace tensormem {
namespace {

TEST(LowerBounds, AlignmentPaddingBetweenLiveBuffersCounts) {
  // Three 10-byte buffers live together at alignment 16: offsets 0, 16, 32 at
  // best, so the arena needs 42 bytes, not 30.
  Problem p = FromRecords(std::vector<UsageRecord>{{10, 0, 1}, {10, 0, 1}, {10, 1, 2}});
  EXPECT_EQ(PeakLiveBytes(p), 30u);
  EXPECT_EQ(PeakLiveBytes(p, 16), 42u);
  // The buffers' own alignments count the same way (gcd of them all).
  for (Buffer& b : p.buffers) b.alignment = 16;
  EXPECT_EQ(PeakLiveBytes(p), 42u);
  p.buffers[0].alignment = 8;  // g = 8: still 16 + 16 + 10
  EXPECT_EQ(PeakLiveBytes(p), 42u);
  p.buffers[0].alignment = 1;  // g = 1: no padding is forced
  EXPECT_EQ(PeakLiveBytes(p), 30u);
}

// The aligned bound from its definition: at each task, the live sizes
// rounded up to the alignment, less the largest rounding among them.
std::uint64_t BruteAlignedPeak(const std::vector<UsageRecord>& r, std::uint64_t align, TaskIndex tasks) {
  std::uint64_t peak = 0;
  for (TaskIndex t = 0; t < tasks; ++t) {
    std::uint64_t live = 0, largest_pad = 0;
    for (const auto& x : r)
      if (x.size > 0 && x.first_task <= t && t <= x.last_task) {
        const std::uint64_t rounded = (x.size + align - 1) / align * align;
        live += rounded;
        largest_pad = std::max(largest_pad, rounded - x.size);
      }
    peak = std::max(peak, live - largest_pad);
  }
  return peak;
}

// Records in any order (the sweep sorts only what is out of order), pads
// below 2^16 (counted per value) and above (a multiset), and more than 2^16
// spans live at once (past which the sweep sorts the ends it has yet to see).
TEST(LowerBounds, PeakMatchesBruteForceInAnyOrderAlignmentAndDensity) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const std::uint64_t align = std::uint64_t{1} << (seed % 4 == 0 ? 20 : seed % 10);
    auto r = internal::GenerateRandomRecords(1 + seed % 50, seed, 40, 3 << 20, /*zeros=*/true);
    if (seed % 2 == 0) std::shuffle(r.begin(), r.end(), std::mt19937_64(seed));
    const Problem p = FromRecords(r);
    ASSERT_EQ(PeakLiveBytes(p, align), BruteAlignedPeak(r, align, 40)) << "seed " << seed;
    ASSERT_EQ(PeakLiveBytes(r), BrutePeak(r)) << "seed " << seed;
  }
  for (const std::uint64_t align : {std::uint64_t{1}, std::uint64_t{64}, std::uint64_t{1} << 20}) {
    auto r = internal::GenerateRandomRecords(140'000, 7, 30, 1 << 21);  // about half live at once
    ASSERT_GT(MaxLiveTensors(r), std::size_t{1} << 16);
    std::shuffle(r.begin(), r.end(), std::mt19937_64(3));
    EXPECT_EQ(PeakLiveBytes(FromRecords(r), align), BruteAlignedPeak(r, align, 30)) << align;
  }
}

TEST(LowerBounds, AlignedBoundNeverExceedsAPlan) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const std::uint64_t align = std::uint64_t{1} << (seed % 8);
    Problem p = FromRecords(internal::GenerateRandomRecords(1 + seed % 30, seed, 20, 300, true));
    for (OffsetsStrategy s : {OffsetsStrategy::kGreedyBySize, OffsetsStrategy::kNaive}) {
      PlanParams params;
      params.alignment = align;
      Result<OffsetsPlan> plan = PlanOffsets(p, s, params);
      ASSERT_TRUE(plan.ok());
      ASSERT_LE(PeakLiveBytes(p, align), plan->total) << "seed " << seed;
      ASSERT_GE(PeakLiveBytes(p, align), PeakLiveBytes(p));
      ASSERT_EQ(plan->lower_bound, PeakLiveBytes(p, align));
    }
  }
}

}  // namespace
}  // namespace tensormem
