// SPDX-License-Identifier: Apache-2.0
#include "harness/perfect_packing.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace tensormem::solver {
namespace {

struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t Next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform in [lo, hi] (lo <= hi).
  std::uint64_t Between(std::uint64_t lo, std::uint64_t hi) {
    return lo + Next() % (hi - lo + 1);
  }
};

struct Rect {
  std::uint64_t t0, t1;  // tasks [t0, t1)
  std::uint64_t b0, b1;  // bytes [b0, b1), in granules
};

// A cut position in (lo, hi) within [balance, 1 - balance] of the side.
std::uint64_t CutAt(SplitMix64& rng, std::uint64_t lo, std::uint64_t hi, double balance) {
  const std::uint64_t len = hi - lo;
  auto from = static_cast<std::uint64_t>(static_cast<double>(len) * balance);
  auto to = static_cast<std::uint64_t>(static_cast<double>(len) * (1.0 - balance));
  from = std::clamp<std::uint64_t>(from, 1, len - 1);
  to = std::clamp<std::uint64_t>(to, from, len - 1);
  return lo + rng.Between(from, to);
}

// The open piece to cut next: the newest, or with probability 1 - depth the
// largest (an index into `open`).
std::size_t PickPiece(SplitMix64& rng, const std::vector<Rect>& rects, const std::vector<std::size_t>& open,
                      double depth) {
  std::size_t pick = open.size() - 1;  // newest
  if (rng.Unit() >= depth) {
    std::uint64_t best = 0;  // largest area
    for (std::size_t k = 0; k < open.size(); ++k) {
      const Rect& r = rects[open[k]];
      const std::uint64_t area = (r.t1 - r.t0) * (r.b1 - r.b0);
      if (area > best) {
        best = area;
        pick = k;
      }
    }
  }
  return pick;
}

// The pieces as buffers named by their position, filling `units` granules.
Problem ToProblem(const std::vector<Rect>& rects, std::uint64_t units, std::uint64_t granule) {
  Problem p;
  p.capacity = units * granule;
  p.buffers.reserve(rects.size());
  for (std::size_t i = 0; i < rects.size(); ++i) {
    const Rect& r = rects[i];
    Buffer buf;
    buf.id = std::to_string(i);
    buf.size = (r.b1 - r.b0) * granule;
    buf.first_task = static_cast<TaskIndex>(r.t0);
    buf.last_task = static_cast<TaskIndex>(r.t1 - 1);
    p.buffers.push_back(std::move(buf));
  }
  return p;
}

}  // namespace

Problem PerfectPacking(const PerfectPackingOptions& o) {
  SplitMix64 rng{o.seed * 0x2545F4914F6CDD1Dull + 0x1234567ull};
  const std::uint64_t granule = std::max<std::uint64_t>(o.byte_granule, 1);
  const std::uint64_t units = std::max<std::uint64_t>(o.bytes / granule, 1);
  const double balance = std::clamp(o.balance, 0.0, 0.49);
  const std::uint64_t tasks = o.tasks > 0 ? static_cast<std::uint64_t>(o.tasks) : 1;
  std::vector<Rect> rects{{0, tasks, 0, units}};
  // Pieces that can still be cut, newest last.
  std::vector<std::size_t> open{0};
  while (rects.size() < std::max<std::size_t>(o.buffers, 1) && !open.empty()) {
    const std::size_t pick = PickPiece(rng, rects, open, o.depth);
    const std::size_t idx = open[pick];
    Rect r = rects[idx];
    const bool can_time = r.t1 - r.t0 >= 2;
    const bool can_bytes = r.b1 - r.b0 >= 2;
    if (!can_time && !can_bytes) {
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(pick));
      continue;
    }
    bool time_cut = rng.Unit() < o.time_cut_share;
    if (!can_time) time_cut = false;
    if (!can_bytes) time_cut = true;
    Rect a = r, b = r;
    if (time_cut) {
      a.t1 = b.t0 = CutAt(rng, r.t0, r.t1, balance);
    } else {
      a.b1 = b.b0 = CutAt(rng, r.b0, r.b1, balance);
    }
    // One half stays at idx, the other is new; which is "newest" is random
    // so deep trees go either way.
    if (rng.Next() & 1) std::swap(a, b);
    rects[idx] = a;
    rects.push_back(b);
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(pick));
    open.push_back(idx);
    open.push_back(rects.size() - 1);
  }
  // Shuffle (Fisher-Yates) so the input order says nothing.
  for (std::size_t i = rects.size(); i > 1; --i)
    std::swap(rects[i - 1], rects[static_cast<std::size_t>(rng.Next() % i)]);
  return ToProblem(rects, units, granule);
}

PerfectPackingOptions PerfectPackingVariant(std::size_t buffers, std::uint64_t seed) {
  static constexpr double kDepth[] = {0.0, 0.5, 0.9, 0.3, 0.7};
  static constexpr double kTimeShare[] = {0.5, 0.3, 0.5, 0.7, 0.5};
  static constexpr double kBalance[] = {0.2, 0.1, 0.1, 0.05, 0.3};
  PerfectPackingOptions o;
  o.buffers = buffers;
  o.seed = seed;
  const std::size_t v = static_cast<std::size_t>(seed % 5);
  o.depth = kDepth[v];
  o.time_cut_share = kTimeShare[v];
  o.balance = kBalance[v];
  return o;
}

}  // namespace tensormem::solver
