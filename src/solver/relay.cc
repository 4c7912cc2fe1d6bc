#include "solver/relay.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace tensormem::solver {

namespace {

bool Chains(const Buffer& b) { return b.size > 0 && b.gaps.empty() && !b.fixed_offset; }

}  // namespace

RelayChains MergeRelays(const Problem& problem) {
  const std::size_t n = problem.buffers.size();
  RelayChains out;
  out.merged.capacity = problem.capacity;
  out.chain_of.assign(n, SIZE_MAX);
  // Unclaimed successors by (first task, size, alignment), lowest index
  // first (the lists are built in index order and consumed from the front).
  using Key = std::tuple<TaskIndex, std::uint64_t, std::uint64_t>;
  std::map<Key, std::vector<std::size_t>> starts;
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (Chains(b)) starts[{b.first_task, b.size, b.alignment}].push_back(i);
  }
  std::map<Key, std::size_t> taken;  // how many of each list are claimed
  std::vector<bool> claimed(n, false);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return problem.buffers[x].first_task < problem.buffers[y].first_task;
  });
  // A buffer is claimed by its predecessor before it is reached (its
  // predecessor ends before it starts), so the heads come in order.
  for (const std::size_t head : order) {
    if (claimed[head]) continue;
    const std::size_t k = out.merged.buffers.size();
    Buffer merged = problem.buffers[head];
    merged.id = "relay" + std::to_string(head);
    out.chain_of[head] = k;
    std::size_t last = head;
    while (Chains(problem.buffers[last])) {  // tasks < 2^62 (CheckProblem): no overflow
      const Buffer& b = problem.buffers[last];
      const Key key{b.last_task + 1, b.size, b.alignment};
      auto it = starts.find(key);
      if (it == starts.end()) break;
      std::size_t& used = taken[key];
      while (used < it->second.size() && claimed[it->second[used]]) ++used;
      if (used == it->second.size()) break;
      last = it->second[used++];
      claimed[last] = true;
      out.chain_of[last] = k;
    }
    merged.last_task = problem.buffers[last].last_task;
    out.merged.buffers.push_back(std::move(merged));
  }
  return out;
}

OffsetsPlan SplitRelays(const RelayChains& chains, const Problem& problem,
                        const OffsetsPlan& merged_plan) {
  OffsetsPlan plan;
  plan.offsets.resize(problem.buffers.size());
  plan.total = 0;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    plan.offsets[i] = merged_plan.offsets[chains.chain_of[i]];
    if (problem.buffers[i].size > 0)
      plan.total = std::max(plan.total, plan.offsets[i] + problem.buffers[i].size);
  }
  plan.strategy = "relay";
  return plan;
}

}  // namespace tensormem::solver
