// SPDX-License-Identifier: Apache-2.0
// The deadline-aware building blocks the strategies' set-ups use: each gives
// the plain routine's result when its deadline does not pass, and stops at
// its polls when it does (counted polls of a stop hook, not timing).
#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/deadline.h"
#include "core/positional_maximums.h"
#include "core/sort_until.h"
#include "harness/generators.h"
#include "tensormem/lower_bounds.h"

namespace tensormem {
namespace {

// std::stable_sort when the deadline does not pass; stops between runs and
// merges when it does.
TEST(StableSortUntil, IsAStableSort) {
  std::mt19937_64 rng(7);
  std::vector<std::pair<int, int>> v(100'000);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = {static_cast<int>(rng() % 1000), static_cast<int>(i)};
  auto by_first = [](const std::pair<int, int>& a, const std::pair<int, int>& b) {
    return a.first < b.first;
  };
  std::vector<std::pair<int, int>> expected = v;
  std::stable_sort(expected.begin(), expected.end(), by_first);
  std::vector<std::pair<int, int>> got = v;
  internal::Deadline never(0, [] { return false; });
  ASSERT_TRUE(internal::StableSortUntil(got, by_first, &never));
  EXPECT_EQ(got, expected);
  got = v;
  ASSERT_TRUE(internal::StableSortUntil(got, by_first, nullptr));
  EXPECT_EQ(got, expected);
  int polls = 0;
  internal::Deadline soon(0, [&] { return ++polls >= 4; });
  got = v;
  EXPECT_FALSE(internal::StableSortUntil(got, by_first, &soon));
  EXPECT_EQ(polls, 4);
}

TEST(PositionalMaximumsUntil, EqualsPositionalMaximumsAndStopsWhenAsked) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<UsageRecord> records =
        seed % 2 ? internal::GenerateNetworkRecords(60'000, seed)
                 : internal::GenerateRandomRecords(60'000, seed, 5'000, 1 << 20, /*zeros=*/true);
    const std::vector<std::uint64_t> expected = PositionalMaximums(records);
    std::vector<std::uint64_t> got;
    int polls = 0;
    internal::Deadline never(0, [&] { return ++polls < 0; });
    ASSERT_TRUE(internal::PositionalMaximumsUntil(records, &never, &got));
    EXPECT_EQ(got, expected);
    // Its three sorts and the tree's pass each poll more than once here.
    EXPECT_GT(polls, 12);
    // Stopped at each poll in turn: false at once, never a wrong result.
    for (const int stop_at : {1, 3, polls / 2, polls}) {
      int n = 0;
      internal::Deadline stop(0, [&] { return ++n >= stop_at; });
      EXPECT_FALSE(internal::PositionalMaximumsUntil(records, &stop, &got)) << stop_at;
      EXPECT_EQ(n, stop_at);
    }
  }
}

}  // namespace
}  // namespace tensormem
