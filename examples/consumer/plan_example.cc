// SPDX-License-Identifier: Apache-2.0
// Plans an arena for a few tensors with the library API and checks the plan.
#include <cstdio>

#include <tensormem/tensormem.h>
#include <tensormem/version.h>

int main() {
  using namespace tensormem;
  // size in bytes, first task, last task (inclusive)
  const std::vector<UsageRecord> records = {
      {4096, 0, 1}, {1024, 1, 2}, {8192, 2, 3}, {4096, 3, 4}, {1024, 2, 4}};
  PlanParams params;
  params.alignment = 64;
  Result<OffsetsPlan> plan = PlanOffsets(records, OffsetsStrategy::kBest, params);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.status().ToString().c_str());
    return 1;
  }
  for (std::size_t i = 0; i < records.size(); ++i)
    std::printf("tensor %zu -> offset %llu\n", i, static_cast<unsigned long long>(plan->offsets[i]));
  std::printf("tensormem %s: ", TENSORMEM_VERSION_STRING);
  std::printf("arena %llu bytes, lower bound %llu, ratio %.3f (%s)\n",
              static_cast<unsigned long long>(plan->total),
              static_cast<unsigned long long>(plan->lower_bound),
              Ratio(plan->total, plan->lower_bound), plan->strategy.c_str());
  return 0;
}
