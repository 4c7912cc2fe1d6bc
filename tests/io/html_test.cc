// SPDX-License-Identifier: Apache-2.0
// The interactive HTML map (io.h WriteHtmlMap) and the replay placements it
// draws for a replay (replay.h ReplayPlacements, WriteReplayHtmlMap). The
// page itself is checked in Chromium by html_chromium_test.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "harness/replay.h"
#include "tensormem/io.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

TEST(HtmlMap, SelfContainedWithTheData) {
  Problem p = FromRecords(std::vector<UsageRecord>{{4096, 0, 1}, {1024, 1, 2}, {8192, 2, 3}});
  p.buffers[1].id = "a\"</script><b>";
  Result<OffsetsPlan> plan = PlanOffsets(p, OffsetsStrategy::kBest);
  ASSERT_TRUE(plan.ok());
  HtmlMapOptions o;
  o.title = "t <x>";
  o.lower_bound = plan->lower_bound;
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlMap(out, p, *plan, o).ok());
  const std::string html = out.str();
  EXPECT_NE(html.find("<canvas id=\"map\">"), std::string::npos);
  EXPECT_NE(html.find("id=\"summary\""), std::string::npos);
  EXPECT_NE(html.find("const TOTAL=" + std::to_string(plan->total)), std::string::npos);
  EXPECT_NE(html.find("const S=[4096,1024,8192]"), std::string::npos);
  EXPECT_NE(html.find("t &lt;x&gt;"), std::string::npos);
  // The id cannot end the script: <, >, " are escaped.
  EXPECT_EQ(html.find("</script><b>"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script\\u003e"), std::string::npos);
  // No network: nothing is fetched.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
}

TEST(HtmlMap, GapsAreSegmentsAndPlainIdsAreLeftOut) {
  Problem p = FromRecords(std::vector<UsageRecord>{{100, 0, 9}, {50, 3, 4}});
  p.buffers[0].gaps.push_back({3, 4, false, 0, 0});
  Result<OffsetsPlan> plan = PlanOffsets(p, OffsetsStrategy::kGreedyBySize);
  ASSERT_TRUE(plan.ok());
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlMap(out, p, *plan).ok());
  EXPECT_NE(out.str().find("const I=null"), std::string::npos);
  EXPECT_NE(out.str().find("const G={0:[[0,2,0,100],[5,9,0,100]]}"), std::string::npos);
}

TEST(HtmlMap, PlanOfTheWrongSizeIsAnError) {
  Problem p = FromRecords(std::vector<UsageRecord>{{1, 0, 0}});
  OffsetsPlan plan;
  std::ostringstream out;
  EXPECT_EQ(WriteHtmlMap(out, p, plan).code(), StatusCode::kInvalidArgument);
}

Trace SmallTrace() {
  std::istringstream in(
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "0,1,allocate,0x1000,1000,0\n"
      "0,2,allocate,0x2000,3000000,0\n"
      "0,3,free,0x1000,1000,0\n"
      "0,4,allocate,0x3000,500,0\n"
      "0,5,free,0x2000,3000000,0\n");
  Result<Trace> t = ReadTrace(in, "small.csv");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(ReplayPlacements, AddressesPerAllocationAndReservedPerEvent) {
  const Trace trace = SmallTrace();
  for (ReplayAllocator a : {ReplayAllocator::kBfc, ReplayAllocator::kBfcCompact, ReplayAllocator::kVmm, ReplayAllocator::kPool,
                            ReplayAllocator::kSystem}) {
    Result<ReplayPlacement> r = ReplayPlacements(trace, a);
    ASSERT_TRUE(r.ok()) << Name(a) << ": " << r.status().ToString();
    ASSERT_EQ(r->offsets.size(), 3u);
    ASSERT_EQ(r->reserved.size(), trace.events.size());
    EXPECT_EQ(*std::min_element(r->offsets.begin(), r->offsets.end()), 0u) << Name(a);
    // Blocks live together do not overlap.
    EXPECT_TRUE(r->offsets[0] + 1000 <= r->offsets[1] || r->offsets[1] + 3000000 <= r->offsets[0]);
    EXPECT_TRUE(r->offsets[1] + 3000000 <= r->offsets[2] || r->offsets[2] + 500 <= r->offsets[1]);
    EXPECT_GE(r->top, 3000000u);
    if (a != ReplayAllocator::kSystem) {
      EXPECT_GE(r->reserved[1], 3000000u) << Name(a);
    }
    std::ostringstream out;
    ASSERT_TRUE(WriteReplayHtmlMap(out, trace, *r).ok());
    EXPECT_NE(out.str().find("const RK=[0"), std::string::npos);
    // The trace's ids line2, line3, line5 as a prefix and numbers.
    EXPECT_NE(out.str().find("const IP=\"line\",IN=[2,3,5]"), std::string::npos);
  }
  EXPECT_EQ(ReplayPlacements(trace, ReplayAllocator::kMalloc).status().code(), StatusCode::kUnimplemented);
}

// Refused memory part way (a limit below the 3 MB block): the placement and
// the map cover the events before the refusal, the block allocated before
// it and freed after it living to the end.
TEST(ReplayPlacements, UpToTheRefusal) {
  const Trace trace = SmallTrace();
  ReplayParams params;
  params.bfc.memory_limit = 2'000'000;
  params.vmm.memory_limit = 2u << 20;
  for (ReplayAllocator a : {ReplayAllocator::kBfc, ReplayAllocator::kVmm}) {
    Result<ReplayPlacement> r = ReplayPlacements(trace, a, params);
    ASSERT_TRUE(r.ok()) << Name(a) << ": " << r.status().ToString();
    EXPECT_EQ(r->refusal.code(), StatusCode::kResourceExhausted) << Name(a);
    EXPECT_TRUE(r->refusal.message().starts_with(std::string(Name(a)) + ": small.csv:3: ")) << r->refusal.message();
    EXPECT_EQ(r->replayed, 1u);
    ASSERT_EQ(r->offsets.size(), 1u);
    ASSERT_EQ(r->reserved.size(), 1u);
    std::ostringstream out;
    ASSERT_TRUE(WriteReplayHtmlMap(out, trace, *r).ok()) << Name(a);
    EXPECT_NE(out.str().find("const IP=\"line\",IN=[2]"), std::string::npos) << Name(a);
    EXPECT_NE(out.str().find("up to line 3, where it ran out of memory"), std::string::npos) << Name(a);
  }
  // Replayed whole: nothing refused.
  Result<ReplayPlacement> whole = ReplayPlacements(trace, ReplayAllocator::kPool);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->refusal.ok());
  EXPECT_EQ(whole->replayed, trace.events.size());
}

}  // namespace
}  // namespace tensormem
