// SPDX-License-Identifier: Apache-2.0
#include "tensormem/problem.h"

#include <gtest/gtest.h>

namespace tensormem {
namespace {

TEST(Occupancy, PlainBufferIsOneSegment) {
  Buffer b{"a", 10, 2, 5};
  auto segs = Occupancy(b);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].first_task, 2);
  EXPECT_EQ(segs[0].last_task, 5);
  EXPECT_EQ(segs[0].lo, 0u);
  EXPECT_EQ(segs[0].hi, 10u);
}

TEST(Occupancy, GapsAndWindowsSplitTheLifetime) {
  Buffer b{"a", 30, 0, 107};
  b.gaps = {{36, 71, true, 10, 30}, {72, 107, true, 20, 30}};
  auto segs = Occupancy(b);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].last_task, 35);
  EXPECT_EQ(segs[1].lo, 10u);
  EXPECT_EQ(segs[2].first_task, 72);
  EXPECT_EQ(segs[2].lo, 20u);
  Buffer empty_gap{"b", 4, 0, 9};
  empty_gap.gaps = {{3, 5, false, 0, 0}};
  segs = Occupancy(empty_gap);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].last_task, 2);
  EXPECT_EQ(segs[1].first_task, 6);
  EXPECT_TRUE(Occupancy(Buffer{"z", 0, 0, 3}).empty());
}

TEST(CheckProblem, NamesTheBufferAtFault) {
  Problem p;
  p.buffers = {{"a", 1, 0, 1}, {"b", 1, 3, 2}};
  Status s = CheckProblem(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'b'"), std::string::npos) << s.message();

  p.buffers = {{"a", 8, 0, 4}};
  p.buffers[0].gaps = {{2, 3, true, 0, 9}};
  EXPECT_NE(CheckProblem(p).message().find("window"), std::string::npos);

  p.buffers[0].gaps = {{3, 4, false, 0, 0}, {2, 2, false, 0, 0}};
  EXPECT_NE(CheckProblem(p).message().find("sorted"), std::string::npos);

  p.buffers = {{"a", 8, 0, 4}};
  p.buffers[0].alignment = 4;
  p.buffers[0].fixed_offset = 6;
  EXPECT_NE(CheckProblem(p).message().find("alignment"), std::string::npos);

  p.buffers = {{"a", 8, 0, kMaxTaskIndex + 1}};
  EXPECT_EQ(CheckProblem(p).code(), StatusCode::kOutOfRange);
}

TEST(Problem, RecordsRoundTrip) {
  std::vector<UsageRecord> r = {{4, 0, 1}, {8, 1, 3}};
  Problem p = FromRecords(r);
  EXPECT_EQ(p.buffers[1].id, "1");
  EXPECT_EQ(ToRecords(p), r);
  EXPECT_FALSE(HasExtendedFeatures(p));
  p.buffers[0].alignment = 2;
  EXPECT_TRUE(HasExtendedFeatures(p));
}


// Issue 12 item 17: "alignment" means one thing, a power of two, checked in
// one place that names what is at fault.
TEST(ValidateAlignment, OnePowerOfTwoMeaningNamedInTheError) {
  for (std::uint64_t a : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{64}, kMaxAlignment})
    EXPECT_TRUE(ValidateAlignment(a, "x").ok()) << a;
  for (std::uint64_t a : {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{24}, kMaxAlignment * 2,
                          ~std::uint64_t{0}}) {
    const Status st = ValidateAlignment(a, "PlanParams::alignment");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << a;
    EXPECT_EQ(st.message(), "PlanParams::alignment: alignment " + std::to_string(a) +
                                " is not a power of two between 1 and " +
                                std::to_string(kMaxAlignment));
  }
  EXPECT_FALSE(ValidateAlignment(4096, "pool", 2048).ok());
}

TEST(CheckProblem, ABufferAlignmentThatIsNotAPowerOfTwoIsRejected) {
  Problem p = FromRecords(std::vector<UsageRecord>{{8, 0, 1}, {8, 0, 1}});
  p.buffers[1].alignment = 24;
  const Status st = CheckProblem(p);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("buffer 1 (id '1'): alignment 24 is not a power of two"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace tensormem
