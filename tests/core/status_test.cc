// SPDX-License-Identifier: Apache-2.0
#include "tensormem/status.h"

#include <gtest/gtest.h>

namespace tensormem {
namespace {

Result<int> Half(int v) {
  if (v % 2) return InvalidArgument("odd: " + std::to_string(v));
  return v / 2;
}

Result<int> Quarter(int v) {
  TM_ASSIGN_OR_RETURN(int h, Half(v));
  TM_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = OutOfRange("too big");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.ToString(), "out of range: too big");
  EXPECT_EQ(s.WithContext("file.csv").message(), "file.csv: too big");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
  // Said once: a message that already names the context keeps it once.
  const Status named = DeadlineExceeded("min_cost_flow: the time limit of 1 s was reached");
  EXPECT_EQ(named.WithContext("min_cost_flow").message(), named.message());
  EXPECT_EQ(named.WithContext("min_cost").message(), "min_cost: " + named.message());
  EXPECT_EQ(Internal("min_cost_flow").WithContext("min_cost_flow").message(), "min_cost_flow: min_cost_flow");
}

TEST(Result, PropagatesErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd: 3");
}

TEST(Result, OkStatusWithoutValueBecomesInternal) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(CutLongWords, CutsOnlyWordsOver256BytesKeepingTheirEnds) {
  const std::string word = "<" + std::string(1000, 'x') + ">";
  const std::string cut = CutLongWords("no file " + word + " here");
  EXPECT_EQ(cut, "no file " + word.substr(0, 160) + "...(762 bytes cut)..." + word.substr(word.size() - 80) +
                     " here");
  const std::string fits(256, 'y');
  EXPECT_EQ(CutLongWords(fits + " " + fits), fits + " " + fits);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> r = InvalidArgument("nope");
  EXPECT_DEATH((void)r.value(), "nope");
}

}  // namespace
}  // namespace tensormem
