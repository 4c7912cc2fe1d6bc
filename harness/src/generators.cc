// SPDX-License-Identifier: Apache-2.0
#include "harness/generators.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tensormem::internal {

std::vector<UsageRecord> GenerateNetworkRecords(std::size_t n, std::uint64_t seed, int max_skip,
                                                double skip_probability) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> skip(2, std::max(2, max_skip));
  std::vector<UsageRecord> records(n);
  const TaskIndex last_task = static_cast<TaskIndex>(n);  // one past the last writer
  for (std::size_t t = 0; t < n; ++t) {
    // log-uniform in [256 B, 8 MiB], rounded up to 64 bytes
    const double bytes = std::exp(std::log(256.0) + unit(rng) * (std::log(8.0 * 1048576) - std::log(256.0)));
    std::uint64_t size = (static_cast<std::uint64_t>(bytes) + 63) / 64 * 64;
    TaskIndex first = static_cast<TaskIndex>(t);
    TaskIndex last = std::min(last_task, first + 1);
    if (unit(rng) < skip_probability) last = std::min(last_task, first + skip(rng));
    records[t] = {size, first, last};
  }
  // A few tensors (state, outputs kept for the caller) live to the end,
  // as in real graphs: a handful, not a fraction of n.
  for (int k = 0; k < 8 && n > 0; ++k) records[rng() % n].last_task = last_task;
  // A graph input alive from task 0 to the end.
  if (n > 0) records[0].last_task = last_task;
  return records;
}

std::vector<UsageRecord> GenerateChainRecords(std::size_t n, std::uint64_t size) {
  std::vector<UsageRecord> records(n);
  for (std::size_t i = 0; i < n; ++i)
    records[i] = {size, static_cast<TaskIndex>(i), static_cast<TaskIndex>(i + 1)};
  return records;
}

std::vector<UsageRecord> GenerateRandomRecords(std::size_t n, std::uint64_t seed,
                                               TaskIndex num_tasks, std::uint64_t max_size,
                                               bool zeros) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<TaskIndex> task(0, std::max<TaskIndex>(0, num_tasks - 1));
  std::uniform_int_distribution<std::uint64_t> size(1, std::max<std::uint64_t>(1, max_size));
  std::vector<UsageRecord> records(n);
  for (UsageRecord& r : records) {
    TaskIndex a = task(rng), b = task(rng);
    if (a > b) std::swap(a, b);
    r = {size(rng), a, b};
    if (zeros && rng() % 10 == 0) r.size = 0;
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const UsageRecord& x, const UsageRecord& y) { return x.first_task < y.first_task; });
  return records;
}

std::vector<UsageRecord> GenerateGrowAndCopyRecords(int weights, int steps, int growth, int rounds) {
  constexpr std::uint64_t kUnit = 4096;
  constexpr std::uint64_t kWeightUnits[] = {2, 4, 8, 12, 16};
  constexpr std::uint64_t kActivationUnits[] = {1, 2, 3, 5};
  std::vector<UsageRecord> records;
  TaskIndex task = 0;
  // Live tensors: index into records; last_task is set on their free.
  auto alloc = [&](std::uint64_t size) {
    records.push_back({size, task++, -1});
    return records.size() - 1;
  };
  auto release = [&](std::size_t r) { records[r].last_task = task++; };
  std::vector<std::size_t> loaded;
  for (int i = 0; i < weights; ++i)
    loaded.push_back(alloc(kUnit * (i == 0 ? 64 : kWeightUnits[(i * 3) % 5])));
  for (int i = 0; i < weights; ++i) {
    alloc(records[loaded[i]].size / 2);  // the copy, freed never
    release(loaded[i]);
  }
  for (int r = 0; r < rounds; ++r) {
    std::size_t cache = alloc(kUnit * growth);
    for (int s = 1; s <= steps; ++s) {
      const std::size_t activation = alloc(kUnit * kActivationUnits[(s + r) % 4]);
      const std::size_t grown = alloc(kUnit * growth * (s + 1));
      release(cache);
      release(activation);
      cache = grown;
    }
    release(cache);
  }
  for (UsageRecord& rec : records)
    if (rec.last_task < 0) rec.last_task = task - 1;  // never freed: to the end
  return records;
}

}  // namespace tensormem::internal
