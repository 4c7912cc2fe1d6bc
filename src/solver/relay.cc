// SPDX-License-Identifier: Apache-2.0
#include "solver/relay.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

namespace tensormem::solver {

namespace {

bool Chains(const Buffer& b) { return b.size > 0 && b.gaps.empty() && !b.fixed_offset; }

}  // namespace

RelayChains MergeRelays(const Problem& problem) {
  const std::size_t n = problem.buffers.size();
  RelayChains out;
  out.merged.capacity = problem.capacity;
  out.chain_of.assign(n, SIZE_MAX);
  // The plain buffers by (first task, size, alignment, index): a buffer's
  // successors are one run of it. Within a run they are claimed lowest
  // index first, all before any of them is reached as a head (a claim
  // comes from a chain whose head starts earlier), so the claimed ones are
  // a prefix of the run: one counter per run (at its first position).
  auto key = [&problem](std::size_t i) {
    const Buffer& b = problem.buffers[i];
    return std::make_tuple(b.first_task, b.size, b.alignment);
  };
  std::vector<std::size_t> cands;
  for (std::size_t i = 0; i < n; ++i)
    if (Chains(problem.buffers[i])) cands.push_back(i);
  std::sort(cands.begin(), cands.end(), [&key](std::size_t x, std::size_t y) {
    return std::make_pair(key(x), x) < std::make_pair(key(y), y);
  });
  // Every task where bytes start to be used: first tasks, and the task
  // after each gap, where the buffer's bytes come back.
  std::vector<TaskIndex> starts;
  for (const Buffer& b : problem.buffers) {
    if (b.size == 0) continue;
    starts.push_back(b.first_task);
    for (const Gap& g : b.gaps)
      if (g.last_task < b.last_task) starts.push_back(g.last_task + 1);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<std::uint32_t> claimed_in_run(cands.size(), 0);
  std::vector<bool> claimed(n, false);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return problem.buffers[x].first_task < problem.buffers[y].first_task;
  });
  for (const std::size_t head : order) {
    if (claimed[head]) continue;
    const std::size_t k = out.merged.buffers.size();
    Buffer merged = problem.buffers[head];
    merged.id = "relay" + std::to_string(head);
    out.chain_of[head] = k;
    std::size_t last = head;
    while (Chains(problem.buffers[last])) {
      const Buffer& b = problem.buffers[last];
      // The first start after b ends: no buffer starts between them.
      const auto next_start = std::upper_bound(starts.begin(), starts.end(), b.last_task);
      if (next_start == starts.end()) break;
      const auto want = std::make_tuple(*next_start, b.size, b.alignment);
      const auto run = std::lower_bound(cands.begin(), cands.end(), want,
                                        [&key](std::size_t x, const auto& w) { return key(x) < w; });
      if (run == cands.end() || key(*run) != want) break;
      const std::size_t at = static_cast<std::size_t>(run - cands.begin());
      const std::size_t next = at + claimed_in_run[at];
      if (next == cands.size() || key(cands[next]) != want) break;
      ++claimed_in_run[at];
      last = cands[next];
      claimed[last] = true;
      out.chain_of[last] = k;
    }
    merged.last_task = problem.buffers[last].last_task;
    out.merged.buffers.push_back(std::move(merged));
  }
  return out;
}

std::vector<std::uint64_t> SplitRelays(const RelayChains& chains,
                                       const std::vector<std::uint64_t>& merged_offsets) {
  std::vector<std::uint64_t> offsets(chains.chain_of.size());
  for (std::size_t i = 0; i < offsets.size(); ++i) offsets[i] = merged_offsets[chains.chain_of[i]];
  return offsets;
}

}  // namespace tensormem::solver
