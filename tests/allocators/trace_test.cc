// SPDX-License-Identifier: Apache-2.0
// The trace reader (RAPIDS replay-log CSV): pairing, tolerant parsing,
// errors that name file, line and field, and traces as planning problems.
#include <gtest/gtest.h>

#include <sstream>

#include "test_util.h"
#include "tensormem/trace.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/validator.h"

namespace tensormem {
namespace {

Result<Trace> Read(const std::string& text) {
  std::istringstream in(text);
  return ReadTrace(in, "t.csv");
}

std::string ErrorOf(const std::string& text) {
  Result<Trace> r = Read(text);
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  return r.ok() ? "" : r.status().message();
}

const char* kHeader = "Thread,Time,Action,Pointer,Size,Stream\n";

TEST(Trace, PairsFreesWithTheirAllocations) {
  Result<Trace> t = Read(std::string(kHeader) +
                         "0,10,allocate,0x1000,64,0\n"
                         "0,11,allocate,0x2000,128,0\n"
                         "\n"
                         "0,12,free,0x1000,64,0\n"
                         "1,13,allocate,4096,32,0\n"   // decimal pointer, the freed address
                         "0,14,allocate failure,0x0,999999,0\n"
                         "0,15,free,0x2000,0,0\n");  // size 0 on a free: take the allocation's
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->events.size(), 5u);
  EXPECT_EQ(t->num_allocations, 3u);
  EXPECT_EQ(t->num_frees, 2u);
  EXPECT_EQ(t->num_failed_allocations, 1u);
  EXPECT_EQ(t->num_never_freed, 1u);
  EXPECT_EQ(t->events[0].partner, 2u);
  EXPECT_EQ(t->events[2].partner, 0u);
  EXPECT_EQ(t->events[1].partner, 4u);
  EXPECT_EQ(t->events[4].size, 128u);
  EXPECT_EQ(t->events[3].partner, kNoTraceEvent);
  EXPECT_EQ(t->events[3].pointer, 4096u);
  EXPECT_EQ(t->events[3].thread, 1u);
  EXPECT_EQ(t->events[2].line, 5u);
}

// Also: names and actions in any case, and a byte-order mark before the
// header (a spreadsheet's export).
TEST(Trace, ColumnsInAnyOrderRmmTimesAndCrlf) {
  Result<Trace> t = Read("\xef\xbb\xbf" "action,SIZE,pointer,time,thread\r\n"
                         "allocate,10,0xA0,08:47:21:486325,0\r\n"
                         "FREE,10,0xa0,08:47:21:486400,0\r\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->events[0].time_us, ((8 * 60 + 47) * 60 + 21) * 1000000ull + 486325);
  EXPECT_EQ(t->events[1].action, TraceAction::kFree);
}

TEST(Trace, ErrorsNameFileLineAndField) {
  EXPECT_NE(ErrorOf("").find("t.csv: empty file"), std::string::npos);
  EXPECT_NE(ErrorOf("Thread,Time,Action,Size\n").find("t.csv:1: missing column 'Pointer'"), std::string::npos);
  EXPECT_NE(ErrorOf("Thread,Time,Action,Pointer,Size,Color\n").find("unknown column 'Color'"), std::string::npos);
  std::string e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x10,8,0\n0,2,relocate,0x10,8,0\n");
  EXPECT_NE(e.find("t.csv:3: field 'Action': unknown action 'relocate'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,free,0x10,8,0\n");
  EXPECT_NE(e.find("t.csv:2: field 'Pointer': free of 0x10, which is not live"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x10,8,0\n0,2,free,0x10,8,0\n0,3,free,0x10,8,0\n");
  EXPECT_NE(e.find("t.csv:4: field 'Pointer': free of 0x10"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x10,8,0\n0,2,allocate,0x10,8,0\n");
  EXPECT_NE(e.find("t.csv:3: field 'Pointer': 0x10 is allocated again while still live (allocated on line 2"),
            std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x10,8,0\n0,2,free,0x10,16,0\n");
  EXPECT_NE(e.find("t.csv:3: field 'Size': free of 16 bytes, but the allocation on line 2 was 8 bytes"),
            std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0xZZ,8,0\n");
  EXPECT_NE(e.find("t.csv:2: field 'Pointer': not a hexadecimal number: '0xZZ'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x10,-8,0\n");
  EXPECT_NE(e.find("t.csv:2: field 'Size': negative"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,yesterday,allocate,0x10,8,0\n");
  EXPECT_NE(e.find("t.csv:2: field 'Time'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x10,8\n");
  EXPECT_NE(e.find("t.csv:2: expected 6 fields"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "0,1,allocate,0x0,8,0\n");
  EXPECT_NE(e.find("null pointer"), std::string::npos) << e;
  std::istringstream in(std::string(kHeader) + "0,1,allocate,0x10,8,0\n0,1,allocate,0x20,8,0\n");
  ReadLimits limits;
  limits.max_buffers = 1;
  Result<Trace> limited = ReadTrace(in, "t.csv", limits);
  ASSERT_FALSE(limited.ok());
  EXPECT_NE(limited.status().message().find("more than 1 events"), std::string::npos);
}

TEST(Trace, IsAPlanningProblem) {
  Result<Trace> t = Read(std::string(kHeader) +
                         "0,1,allocate,0x10,100,0\n"  // line 2, event 0
                         "0,2,allocate,0x20,200,0\n"  // line 3, event 1
                         "0,3,free,0x10,100,0\n"      // event 2
                         "0,4,allocate,0x30,50,0\n");  // line 5, event 3, never freed
  ASSERT_TRUE(t.ok());
  const Problem p = TraceToProblem(*t);
  ASSERT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(p.buffers[0].id, "line2");
  EXPECT_EQ(p.buffers[0].first_task, 0);
  EXPECT_EQ(p.buffers[0].last_task, 2);
  EXPECT_EQ(p.buffers[1].id, "line3");
  EXPECT_EQ(p.buffers[1].last_task, 3);  // never freed: to the last event
  EXPECT_EQ(p.buffers[2].first_task, 3);
  EXPECT_EQ(p.buffers[2].last_task, 3);
  EXPECT_TRUE(CheckProblem(p).ok());
  EXPECT_EQ(PeakLiveBytes(p), 300u);
}

TEST(Trace, LoadProblemReadsTheBundledTrace) {
  const std::string path = std::string(TENSORMEM_SOURCE_DIR) + "/tests/allocators/data/small_step.csv";
  Result<InputFormat> format = DetectInputFormat(path);
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, InputFormat::kTrace);
  Result<Problem> p = LoadProblem(path);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->buffers.size(), 14u);
  EXPECT_EQ(PeakLiveBytes(*p), 336448u);  // worked out by hand in the file's order
  Result<OffsetsPlan> plan = PlanOffsets(*p, OffsetsStrategy::kGreedyBySize);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(ValidateOffsetsPlan(*p, *plan).ok());
  EXPECT_GE(plan->total, 336448u);
}

TEST(Trace, EverySharedTraceReads) {
  TM_REQUIRE_SHARED("traces");
  for (const auto& entry : std::filesystem::directory_iterator(testing::SharedDir() / "traces")) {
    if (entry.path().extension() != ".csv") continue;
    Result<Trace> t = LoadTrace(entry.path().string());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_GT(t->num_allocations, 1000u) << entry.path();
    EXPECT_EQ(t->events.size(), t->num_allocations + t->num_frees);
    EXPECT_EQ(t->num_never_freed, t->num_allocations - t->num_frees);
  }
}

}  // namespace
}  // namespace tensormem
