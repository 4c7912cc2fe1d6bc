// SPDX-License-Identifier: Apache-2.0
#include "solver/relay.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace tensormem::solver {

namespace {

bool Chains(const Buffer& b) { return b.size > 0 && b.gaps.empty() && !b.fixed_offset; }

// What MergeRelays's steps share. The plain buffers sorted by (first task,
// size, alignment, index): a buffer's successors are one run of it. Within
// a run they are claimed lowest index first, all before any of them is
// reached as a head (a claim comes from a chain whose head starts earlier),
// so the claimed ones are a prefix of the run: one counter per run (at its
// first position).
struct RelayLinks {
  explicit RelayLinks(const Problem& p) : problem(p), claimed(p.buffers.size(), false) {}
  using Key = std::tuple<TaskIndex, std::uint64_t, std::uint64_t>;
  Key KeyOf(std::size_t i) const {
    const Buffer& b = problem.buffers[i];
    return {b.first_task, b.size, b.alignment};
  }
  const Problem& problem;
  std::vector<std::size_t> cands;
  std::vector<TaskIndex> starts;  // every task where bytes start to be used, sorted
  std::vector<std::uint32_t> claimed_in_run;
  std::vector<bool> claimed;
};

void SortCandidates(RelayLinks& r) {
  for (std::size_t i = 0; i < r.problem.buffers.size(); ++i)
    if (Chains(r.problem.buffers[i])) r.cands.push_back(i);
  std::sort(r.cands.begin(), r.cands.end(), [&r](std::size_t x, std::size_t y) {
    return std::make_pair(r.KeyOf(x), x) < std::make_pair(r.KeyOf(y), y);
  });
  r.claimed_in_run.assign(r.cands.size(), 0);
}

// First tasks, and the task after each gap, where the buffer's bytes come back.
void CollectStarts(RelayLinks& r) {
  for (const Buffer& b : r.problem.buffers) {
    if (b.size == 0) continue;
    r.starts.push_back(b.first_task);
    for (const Gap& g : b.gaps)
      if (g.last_task < b.last_task) r.starts.push_back(g.last_task + 1);
  }
  std::sort(r.starts.begin(), r.starts.end());
  r.starts.erase(std::unique(r.starts.begin(), r.starts.end()), r.starts.end());
}

// The buffer that relays `last` (claimed now), or nullopt: a plain one of
// the same size and alignment starting at the first start after `last`
// ends (no buffer starts between them), the first unclaimed of its run.
std::optional<std::size_t> ClaimSuccessor(RelayLinks& r, std::size_t last) {
  const Buffer& b = r.problem.buffers[last];
  if (!Chains(b)) return std::nullopt;
  const auto next_start = std::upper_bound(r.starts.begin(), r.starts.end(), b.last_task);
  if (next_start == r.starts.end()) return std::nullopt;
  const RelayLinks::Key want{*next_start, b.size, b.alignment};
  const auto run = std::lower_bound(r.cands.begin(), r.cands.end(), want,
                                    [&r](std::size_t x, const RelayLinks::Key& w) { return r.KeyOf(x) < w; });
  if (run == r.cands.end() || r.KeyOf(*run) != want) return std::nullopt;
  const std::size_t at = static_cast<std::size_t>(run - r.cands.begin());
  const std::size_t next = at + r.claimed_in_run[at];
  if (next == r.cands.size() || r.KeyOf(r.cands[next]) != want) return std::nullopt;
  ++r.claimed_in_run[at];
  r.claimed[r.cands[next]] = true;
  return r.cands[next];
}

}  // namespace

RelayChains MergeRelays(const Problem& problem) {
  const std::size_t n = problem.buffers.size();
  RelayChains out;
  out.merged.capacity = problem.capacity;
  out.chain_of.assign(n, SIZE_MAX);
  RelayLinks links(problem);
  SortCandidates(links);
  CollectStarts(links);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return problem.buffers[x].first_task < problem.buffers[y].first_task;
  });
  // Each unclaimed buffer heads a chain, in order of first task.
  for (const std::size_t head : order) {
    if (links.claimed[head]) continue;
    const std::size_t k = out.merged.buffers.size();
    Buffer merged = problem.buffers[head];
    merged.id = "relay" + std::to_string(head);
    out.chain_of[head] = k;
    std::size_t last = head;
    while (const std::optional<std::size_t> next = ClaimSuccessor(links, last)) {
      last = *next;
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
