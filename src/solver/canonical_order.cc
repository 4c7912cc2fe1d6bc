// SPDX-License-Identifier: Apache-2.0
#include "solver/canonical_order.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>

namespace tensormem::solver {
namespace {

// Every field but the id: buffers equal here are interchangeable.
bool DataLess(const Buffer& a, const Buffer& b) {
  const auto key = [](const Buffer& x) {
    return std::tie(x.first_task, x.last_task, x.size, x.alignment, x.fixed_offset);
  };
  if (key(a) != key(b)) return key(a) < key(b);
  const auto gap_key = [](const Gap& g) {
    return std::tie(g.first_task, g.last_task, g.has_window, g.window_lo, g.window_hi);
  };
  return std::lexicographical_compare(a.gaps.begin(), a.gaps.end(), b.gaps.begin(), b.gaps.end(),
                                      [&](const Gap& x, const Gap& y) { return gap_key(x) < gap_key(y); });
}

}  // namespace

std::vector<std::size_t> CanonicalBufferOrder(const Problem& problem) {
  std::vector<std::size_t> order(problem.buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Stable: among identical buffers the input's order decides, which only
  // says which of them takes which offset.
  std::stable_sort(order.begin(), order.end(), [&problem](std::size_t x, std::size_t y) {
    return DataLess(problem.buffers[x], problem.buffers[y]);
  });
  return order;
}

Problem Reordered(const Problem& problem, std::span<const std::size_t> order) {
  Problem out;
  out.capacity = problem.capacity;
  out.buffers.reserve(order.size());
  for (std::size_t i : order) out.buffers.push_back(problem.buffers[i]);
  return out;
}

std::vector<std::uint64_t> OffsetsInProblemOrder(std::span<const std::size_t> order,
                                                 const std::vector<std::uint64_t>& offsets) {
  std::vector<std::uint64_t> out(offsets.size(), 0);
  for (std::size_t i = 0; i < order.size() && i < offsets.size(); ++i) out[order[i]] = offsets[i];
  return out;
}

std::string BufferName(const Problem& problem, std::size_t i, std::span<const std::size_t> caller) {
  const std::size_t shown = i < caller.size() ? caller[i] : i;
  return "buffer " + std::to_string(shown) + " (id '" + problem.buffers[i].id + "')";
}

}  // namespace tensormem::solver
