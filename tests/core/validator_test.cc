// SPDX-License-Identifier: Apache-2.0
#include "tensormem/validator.h"

#include <random>

#include <gtest/gtest.h>

namespace tensormem {
namespace {

Problem Two(std::uint64_t a_size, std::uint64_t b_size, TaskIndex b_first) {
  Problem p;
  p.buffers = {{"a", a_size, 0, 4}, {"b", b_size, b_first, 6}};
  return p;
}

OffsetsPlan Plan(std::vector<std::uint64_t> offsets, std::uint64_t total) {
  OffsetsPlan p;
  p.offsets = std::move(offsets);
  p.total = total;
  return p;
}

TEST(ValidateOffsets, AcceptsDisjointAndReuse) {
  EXPECT_TRUE(ValidateOffsetsPlan(Two(8, 8, 2), Plan({0, 8}, 16)).ok());
  EXPECT_TRUE(ValidateOffsetsPlan(Two(8, 8, 5), Plan({0, 0}, 8)).ok());
}

TEST(ValidateOffsets, RejectsOverlapOfLiveBuffers) {
  Status s = ValidateOffsetsPlan(Two(8, 8, 4), Plan({0, 7}, 15));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'a'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'b'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("task 4"), std::string::npos) << s.message();
}

TEST(ValidateOffsets, RejectsWrongCountTotalAlignmentFixed) {
  EXPECT_FALSE(ValidateOffsetsPlan(Two(8, 8, 5), Plan({0}, 8)).ok());
  EXPECT_FALSE(ValidateOffsetsPlan(Two(8, 8, 5), Plan({0, 4}, 8)).ok());  // beyond total
  EXPECT_FALSE(ValidateOffsetsPlan(Two(8, 8, 2), Plan({0, 12}, 20), 8).ok());
  Problem p = Two(8, 8, 5);
  p.buffers[1].alignment = 16;
  EXPECT_FALSE(ValidateOffsetsPlan(p, Plan({0, 8}, 16)).ok());
  p.buffers[1].alignment = 1;
  p.buffers[1].fixed_offset = 8;
  EXPECT_FALSE(ValidateOffsetsPlan(p, Plan({0, 0}, 8)).ok());
  EXPECT_TRUE(ValidateOffsetsPlan(p, Plan({0, 8}, 16)).ok());
  p.capacity = 12;
  EXPECT_EQ(ValidateOffsetsPlan(p, Plan({0, 8}, 16)).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(ValidateOffsetsPlan(p, Plan({0, 8}, 16), 1, /*enforce_capacity=*/false).ok());
}

TEST(ValidateOffsets, ZeroByteBuffersOccupyNothing) {
  Problem p = Two(8, 0, 0);
  EXPECT_TRUE(ValidateOffsetsPlan(p, Plan({0, 0}, 8)).ok());
  EXPECT_TRUE(ValidateOffsetsPlan(Problem{}, Plan({}, 0)).ok());
}

TEST(ValidateOffsets, OverflowIsAnError) {
  Problem p;
  p.buffers = {{"a", 16, 0, 1}};
  EXPECT_EQ(ValidateOffsetsPlan(p, Plan({~std::uint64_t{0} - 4}, ~std::uint64_t{0})).code(),
            StatusCode::kOutOfRange);
}

TEST(ValidateOffsets, GapsAndWindows) {
  // Tetris: two 2-byte buffers over 10 tasks in 3 bytes.
  Problem p;
  p.buffers = {{"a", 2, 0, 9}, {"b", 2, 0, 9}};
  p.buffers[0].gaps = {{0, 4, true, 0, 1}};
  p.buffers[1].gaps = {{5, 9, true, 1, 2}};
  EXPECT_TRUE(ValidateOffsetsPlan(p, Plan({0, 1}, 3)).ok());
  EXPECT_FALSE(ValidateOffsetsPlan(p, Plan({0, 0}, 2)).ok());
  EXPECT_FALSE(ValidateOffsetsPlan(p, Plan({1, 0}, 3)).ok());
}

TEST(ValidateObjects, ChecksIdsSizesAndConflicts) {
  std::vector<UsageRecord> r = {{16, 0, 1}, {8, 1, 2}, {64, 2, 3}};
  ObjectsPlan ok;
  ok.object_of = {0, 1, 0};
  ok.object_sizes = {64, 8};
  EXPECT_TRUE(ValidateObjectsPlan(r, ok).ok());
  ObjectsPlan conflict = ok;
  conflict.object_of = {0, 0, 1};
  conflict.object_sizes = {16, 64};
  Status s = ValidateObjectsPlan(r, conflict);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("share object 0"), std::string::npos) << s.message();
  ObjectsPlan small = ok;
  small.object_sizes = {32, 8};
  EXPECT_FALSE(ValidateObjectsPlan(r, small).ok());
  ObjectsPlan bad_id = ok;
  bad_id.object_of = {0, 5, 0};
  EXPECT_FALSE(ValidateObjectsPlan(r, bad_id).ok());
}

// Conflicts found by sorting (object, first task) against every pair, on
// records in random order with random objects (zero-byte tensors occupy
// nothing); sizes always fit, so only conflicts decide.
TEST(ValidateObjects, ConflictsMatchEveryPair) {
  std::mt19937_64 rng(29);
  int invalid = 0;
  for (int round = 0; round < 400; ++round) {
    const std::size_t n = 2 + rng() % 30, objects = 1 + rng() % 6;
    std::vector<UsageRecord> r;
    ObjectsPlan plan;
    plan.object_sizes.assign(objects, 100);
    for (std::size_t i = 0; i < n; ++i) {
      const auto first = static_cast<TaskIndex>(rng() % 40);
      const std::uint64_t size = rng() % 8 == 0 ? 0 : 1 + rng() % 100;
      r.push_back({size, first, first + static_cast<TaskIndex>(rng() % 6)});
      plan.object_of.push_back(rng() % objects);
    }
    bool conflict = false;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j)
        conflict |= plan.object_of[i] == plan.object_of[j] && r[i].size > 0 && r[j].size > 0 &&
                    r[i].ConflictsWith(r[j]);
    invalid += conflict;
    EXPECT_EQ(ValidateObjectsPlan(r, plan).ok(), !conflict) << "round " << round;
  }
  EXPECT_GT(invalid, 50);
  EXPECT_LT(invalid, 350);
}

TEST(ValidateObjects, ExtentsMustCoverEveryDimension) {
  std::vector<ExtentRecord> r = {{Extent{2, 8}, 0, 1}, {Extent{8, 2}, 2, 3}};
  ExtentObjectsPlan p;
  p.object_of = {0, 0};
  p.object_sizes = {Extent{2, 8}};
  EXPECT_FALSE(ValidateObjectsPlan(r, p).ok());
  p.object_sizes = {Extent{8, 8}};
  EXPECT_TRUE(ValidateObjectsPlan(r, p).ok());
}

}  // namespace
}  // namespace tensormem
