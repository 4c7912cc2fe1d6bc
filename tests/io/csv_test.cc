// SPDX-License-Identifier: Apache-2.0
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tensormem/io.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

Result<Problem> Read(const std::string& text) {
  std::istringstream in(text);
  return ReadProblemCsv(in, "t.csv");
}

std::string ErrorOf(const std::string& text) {
  Result<Problem> r = Read(text);
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  return r.ok() ? "" : r.status().message();
}

TEST(Csv, ReadsHalfOpenSpansAsInclusive) {
  Result<Problem> p = Read("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->buffers.size(), 2u);
  EXPECT_EQ(p->buffers[0].id, "b1");
  EXPECT_EQ(p->buffers[0].first_task, 0);
  EXPECT_EQ(p->buffers[0].last_task, 2);
  EXPECT_EQ(p->buffers[1].first_task, 3);
}

// A byte-order mark before the header, names in any case, Begin for lower;
// a BOM elsewhere is text (here: part of an id).
TEST(Csv, ByteOrderMarkAndAnyCase) {
  Result<Problem> p = Read("\xef\xbb\xbfID,Begin,UPPER,Size\n\xef\xbb\xbf" "a,0,2,8\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->buffers.size(), 1u);
  EXPECT_EQ(p->buffers[0].id, "\xef\xbb\xbf" "a");
  EXPECT_EQ(p->buffers[0].last_task, 1);
}

TEST(Csv, AcceptsBeginEndAnyOrderAndOptionalColumns) {
  Result<Problem> p = Read(
      "size,end,begin,id,alignment,offset,gaps\r\n"
      "8,9,0,x,4,16,2-4 5-7@1:3\r\n"
      "8,3,1,y,,,\r\n\r\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const Buffer& x = p->buffers[0];
  EXPECT_EQ(x.last_task, 9);
  EXPECT_EQ(x.alignment, 4u);
  EXPECT_EQ(x.fixed_offset, 16u);
  ASSERT_EQ(x.gaps.size(), 2u);
  EXPECT_EQ(x.gaps[0], (Gap{2, 3, false, 0, 0}));
  EXPECT_EQ(x.gaps[1], (Gap{5, 6, true, 1, 3}));
  EXPECT_FALSE(p->buffers[1].fixed_offset);
  EXPECT_EQ(p->buffers[1].alignment, 1u);
}

TEST(Csv, ErrorsNameFileLineAndField) {
  EXPECT_NE(ErrorOf("").find("empty file"), std::string::npos);
  EXPECT_NE(ErrorOf("id,lower,size\n").find("missing column 'upper'"), std::string::npos);
  EXPECT_NE(ErrorOf("id,lower,upper,size,color\n").find("unknown column 'color'"), std::string::npos);
  EXPECT_NE(ErrorOf("id,lower,upper,size,size\n").find("appears twice"), std::string::npos);
  std::string e = ErrorOf("id,lower,upper,size\na,0,1,4\nb,0,1,abc\n");
  EXPECT_NE(e.find("t.csv:3: field 'size': not a number: 'abc'"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size\na,0,1,-4\n");
  EXPECT_NE(e.find("field 'size': negative"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size\na,5,5,4\n");
  EXPECT_NE(e.find("t.csv:2: field 'upper'"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size\na,0,1,4\na,1,2,4\n");
  EXPECT_NE(e.find("t.csv:3: field 'id': duplicate id 'a' (first on line 2)"), std::string::npos) << e;
  // Of several duplicated ids, the row met first in file order is named
  // (here 'b' on line 5, though 'a' sorts first and repeats later).
  e = ErrorOf("id,lower,upper,size\nb,0,1,4\na,0,1,4\nc,0,1,4\nb,1,2,4\na,1,2,4\nb,2,3,4\n");
  EXPECT_NE(e.find("t.csv:5: field 'id': duplicate id 'b' (first on line 2)"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size\na,0,1\n");
  EXPECT_NE(e.find("expected 4 fields"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size\na,0,1,99999999999999999999\n");
  EXPECT_NE(e.find("too large"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size,gaps\na,0,10,4,3\n");
  EXPECT_NE(e.find("field 'gaps'"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size,gaps\na,0,10,4,2-12\n");
  EXPECT_NE(e.find("outside the buffer's lifetime"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size,gaps\na,0,10,4,2-3@0:5\n");
  EXPECT_NE(e.find("window"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size,alignment\na,0,10,4,0\n");
  EXPECT_NE(e.find("field 'alignment'"), std::string::npos) << e;
  // Issue 12 item 17: an alignment is a power of two everywhere (3 used to
  // be combined by LCM).
  e = ErrorOf("id,lower,upper,size,alignment\na,0,10,4,3\n");
  EXPECT_NE(e.find("t.csv:2: field 'alignment'"), std::string::npos) << e;
  EXPECT_NE(e.find("power of two"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size,offset\na,0,10,4,18446744073709551615\n");
  EXPECT_NE(e.find("overflows"), std::string::npos) << e;
  e = ErrorOf("id,lower,upper,size\n\"a,0,1,4\n");
  EXPECT_NE(e.find("unterminated"), std::string::npos) << e;
}

TEST(Csv, HeaderOnlyIsAnEmptyProblem) {
  Result<Problem> p = Read("id,lower,upper,size\n");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->buffers.empty());
}

TEST(Csv, LimitOnBuffers) {
  std::istringstream in("id,lower,upper,size\na,0,1,1\nb,0,1,1\n");
  ReadLimits limits;
  limits.max_buffers = 1;
  EXPECT_FALSE(ReadProblemCsv(in, "t", limits).ok());
}

TEST(Csv, WriteThenReadRoundTrips) {
  Result<Problem> p = Read(
      "id,lower,upper,size,alignment,gaps\n\"a,b\",0,10,8,4,2-4 5-7@1:3\nc,1,3,16,1,\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  OffsetsPlan plan;
  plan.offsets = {0, 8};
  plan.total = 24;
  std::ostringstream out;
  ASSERT_TRUE(WriteProblemCsv(out, *p, &plan).ok());
  EXPECT_EQ(out.str(),
            "id,lower,upper,size,alignment,gaps,offset\n\"a,b\",0,10,8,4,2-4 5-7@1:3,0\nc,1,3,16,1,,8\n");
  Result<Problem> again = Read(out.str());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->buffers.size(), 2u);
  EXPECT_EQ(again->buffers[0].id, "a,b");
  EXPECT_EQ(again->buffers[0].gaps, p->buffers[0].gaps);
  EXPECT_EQ(again->buffers[1].fixed_offset, 8u);  // the answer becomes a fixed offset
}

TEST(Csv, WritesObjectsColumn) {
  Result<Problem> p = Read("id,lower,upper,size\na,0,2,8\nb,2,3,4\n");
  ObjectsPlan plan;
  plan.object_of = {0, 0};
  plan.object_sizes = {8};
  std::ostringstream out;
  ASSERT_TRUE(WriteObjectsCsv(out, *p, plan).ok());
  EXPECT_EQ(out.str(), "id,lower,upper,size,object,object_size\na,0,2,8,0,8\nb,2,3,4,0,8\n");
}

}  // namespace
}  // namespace tensormem

namespace tensormem {
namespace {

// Found by csv_reader_fuzzer (300k runs) while the conflict check sat in
// CheckProblem: every accepted problem is well formed; conflicting pins are
// the planner's bad input (the solver's "infeasible").
TEST(CsvHardening, ConflictingFixedOffsetsAreThePlannersBadInput) {
  std::istringstream in("id,lower,upper,size,offset\na,0,2,8,0\n\"b\nc\",1,3,8,4\n");
  Result<Problem> p = ReadProblemCsv(in, "pins.csv");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(CheckProblem(*p).ok());
  Result<OffsetsPlan> plan = PlanOffsets(*p, OffsetsStrategy::kBest);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("fixed offsets conflict"), std::string::npos)
      << plan.status().message();
}

// The duplicate reported is the first row, in file order, whose id an
// earlier row has, against a scan with a set, over random ids with repeats.
TEST(Csv, NamesTheFirstDuplicateInFileOrder) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; ++round) {
    const int rows = 1 + static_cast<int>(rng() % 60), distinct = 1 + static_cast<int>(rng() % 80);
    std::ostringstream csv, want;  // (+ on std::string trips GCC 12's -Wrestrict here)
    csv << "id,lower,upper,size\n";
    std::map<std::string, int> first_line;
    for (int r = 0; r < rows; ++r) {
      std::string id("x");
      id.append(std::to_string(rng() % static_cast<std::uint64_t>(distinct)));
      csv << id << ",0,1,4\n";
      const int line = r + 2;
      if (want.str().empty() && first_line.count(id))
        want << "t.csv:" << line << ": field 'id': duplicate id '" << id << "' (first on line "
             << first_line[id] << ")";
      first_line.emplace(id, line);
    }
    const std::string text = csv.str(), expected = want.str();
    if (expected.empty()) {
      EXPECT_TRUE(Read(text).ok()) << text;
    } else {
      EXPECT_NE(ErrorOf(text).find(expected), std::string::npos) << expected << "\n" << text;
    }
  }
}

}  // namespace
}  // namespace tensormem
