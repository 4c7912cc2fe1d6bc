// SPDX-License-Identifier: Apache-2.0
#include <sstream>

#include <gtest/gtest.h>

#include "tensormem/io.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

TEST(Svg, OneRectanglePerSegmentWithTooltipAndBoundLine) {
  Problem p;
  p.buffers = {{"conv<1>", 64, 0, 3}, {"relu", 32, 2, 5}, {"empty", 0, 0, 1}};
  p.buffers[1].gaps = {{3, 3, true, 0, 16}};
  Result<OffsetsPlan> plan = PlanOffsets(p, OffsetsStrategy::kGreedyBySize);
  ASSERT_TRUE(plan.ok());
  SvgOptions o;
  o.title = "test";
  o.lower_bound = plan->lower_bound;
  std::ostringstream out;
  ASSERT_TRUE(WriteSvg(out, p, *plan, o).ok());
  const std::string svg = out.str();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  std::size_t rects = 0;
  for (std::size_t at = svg.find("<rect x="); at != std::string::npos; at = svg.find("<rect x=", at + 1))
    ++rects;
  EXPECT_EQ(rects, 4u);  // 1 + 3 segments; the zero-byte buffer draws nothing
  EXPECT_NE(svg.find("conv&lt;1&gt;: 64 bytes"), std::string::npos);
  EXPECT_NE(svg.find("tasks [2, 5]"), std::string::npos);
  EXPECT_NE(svg.find("lower bound"), std::string::npos);
}

}  // namespace
}  // namespace tensormem
