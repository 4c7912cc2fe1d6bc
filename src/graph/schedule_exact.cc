// SPDX-License-Identifier: Apache-2.0
// The exact search for a minimum-peak order (SERENITY's dynamic programming):
// breadth first over the sets of nodes already run, one level per node
// count. A state is the set run (plus the in-place sharing decisions, see
// schedule_model.h); of the paths reaching it only the lowest peak so far is
// kept (memoisation, a hash of the bit set). Pruning:
// - bound: a state whose peak, or whose live bytes with nodes still to run,
//   reaches the best known peak is dropped (only strictly better orders are
//   searched for, so a search that runs out of states proves the bound);
// - dominance: a ready node that raises neither the peak nor the live bytes
//   (OrderModel::Step::dominant) is run at once, the only successor.
// Anytime: stopped by the time limit or the state budget at level k, every
// order still passes through a kept level-k state, so the smallest
// max(peak, live, co-live bound) over them is a proved lower bound (the
// co-live bound of a state: the bytes some node still to run will surely
// see live, OrderModel::CoLive, tensors of hubs already run included;
// too slow to prune every state with, it tightens the anytime bound).
// A beam search (the same levels, only the states of lowest peak kept) runs
// first: its order, often well below the heuristics', is the bound.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/deadline.h"
#include "graph/schedule_model.h"

namespace tensormem::internal {
namespace {

std::uint64_t HashWords(const std::uint64_t* w, std::size_t n) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x = w[i] + h;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    h = x ^ (x >> 31);
  }
  return h;
}

// The states of one level: keys back to back, a hash set over them, and for
// each the best path's peak, live bytes, parent (in the level before) and
// last node.
class Level {
 public:
  explicit Level(std::size_t words) : words_(words) { slots_.assign(1024, kEmpty); }

  std::size_t size() const { return peak.size(); }
  const std::uint64_t* key(std::size_t i) const { return keys_.data() + i * words_; }

  // Adds the state, or lowers its peak (and takes the new path) when known.
  void Offer(const std::uint64_t* k, std::uint64_t p, std::uint64_t l, std::uint32_t from, int node) {
    if (2 * (size() + 1) > slots_.size()) Grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = HashWords(k, words_) & mask;; s = (s + 1) & mask) {
      if (slots_[s] == kEmpty) {
        slots_[s] = static_cast<std::uint32_t>(size());
        keys_.insert(keys_.end(), k, k + words_);
        peak.push_back(p);
        live.push_back(l);
        parent.push_back(from);
        last.push_back(node);
        return;
      }
      const std::size_t i = slots_[s];
      if (std::memcmp(key(i), k, words_ * sizeof(std::uint64_t)) != 0) continue;
      if (p < peak[i]) peak[i] = p, parent[i] = from, last[i] = node;
      return;
    }
  }

  std::vector<std::uint64_t> peak, live;
  std::vector<std::uint32_t> parent;
  std::vector<int> last;

 private:
  static constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();
  void Grow() {
    slots_.assign(slots_.size() * 2, kEmpty);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = 0; i < size(); ++i) {
      std::size_t s = HashWords(key(i), words_) & mask;
      while (slots_[s] != kEmpty) s = (s + 1) & mask;
      slots_[s] = static_cast<std::uint32_t>(i);
    }
  }
  std::size_t words_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> slots_;
};

struct Path {  // per level after the first: each state's parent and last node
  std::vector<std::uint32_t> parent;
  std::vector<int> last;
};

class Search {
 public:
  Search(const OrderModel& model, std::uint64_t upper, std::uint64_t lower, const ScheduleParams& params)
      : m_(model), upper_(upper), lower_(lower), deadline_(params.time_limit_seconds),
        max_states_(std::min(params.max_states,
                             params.max_state_bytes / (model.words() * sizeof(std::uint64_t) + kStateBytes))),
        beam_width_(std::max<std::size_t>(params.beam_width, 1)), colive_(model.ComputeCoLive()) {
    // The nodes by the most bytes they could see live, most first.
    for (int v = 0; v < m_.nodes(); ++v) {
      std::uint64_t most = colive_.fixed[static_cast<std::size_t>(v)];
      for (const auto& [w, b] : colive_.concurrent[static_cast<std::size_t>(v)]) most += b;
      if (most > colive_.fixed[static_cast<std::size_t>(v)]) by_most_.push_back({most, v});
    }
    std::sort(by_most_.rbegin(), by_most_.rend());
  }

  ExactResult Run() {
    ExactResult r;
    r.peak = upper_;
    r.lower_bound = std::min(lower_, upper_);
    // A beam first: its order, when below the heuristics', tightens the
    // bound the exact search prunes with.
    if (r.lower_bound >= upper_) {  // the heuristics' order is optimal
      r.complete = true;
      return r;
    }
    Walked beam = Walk(false);
    if (!beam.order.empty()) r.order = std::move(beam.order), r.peak = upper_ = beam.peak;
    if (r.lower_bound < upper_) {
      Walked exact = Walk(true);
      if (!exact.order.empty()) r.order = std::move(exact.order), r.peak = exact.peak;
      r.lower_bound = std::max(r.lower_bound, exact.complete ? r.peak : std::min(r.peak, exact.bound));
    }
    r.complete = r.lower_bound == r.peak;
    r.states = states_;
    return r;
  }

 private:
  struct Walked {
    std::vector<int> order;  // empty: none below the bound
    std::uint64_t peak = 0;
    bool complete = false;   // every state was searched
    std::uint64_t bound = 0; // when not complete: what the level stopped at proves
  };

  // Level by level from the empty set: every state (`proving`, until a
  // limit stops it) or the beam's.
  Walked Walk(bool proving) {
    Walked w;
    Level cur(m_.words());
    const std::vector<std::uint64_t> zero(m_.words(), 0);
    cur.Offer(zero.data(), m_.initial_live(), m_.initial_live(), 0, -1);
    std::vector<Path> paths;
    const int n = m_.nodes();
    for (int k = 0; k < n && cur.size() > 0; ++k) {
      Level next(m_.words());
      if (!proving) {
        cur = Beam(cur);
        if (!paths.empty()) paths.back() = {cur.parent, cur.last};
        if (!Expand(cur, next, k + 1 < n, false)) return w;
      } else if (!Expand(cur, next, k + 1 < n, true)) {
        w.bound = LevelBound(cur);
        return w;
      }
      paths.push_back({next.parent, next.last});
      cur = std::move(next);
    }
    w.complete = proving;
    if (cur.size() == 0 || n == 0) return w;
    std::size_t best = 0;
    for (std::size_t i = 1; i < cur.size(); ++i)
      if (cur.peak[i] < cur.peak[best]) best = i;
    w.peak = cur.peak[best];
    w.order.resize(static_cast<std::size_t>(n));
    std::size_t at = best;
    for (std::size_t k = paths.size(); k-- > 0;) {
      w.order[k] = paths[k].last[at];
      at = paths[k].parent[at];
    }
    return w;
  }

  // Every state of `cur` into `next`; false when stopped by the time limit
  // or (`budget`) the state budget.
  bool Expand(const Level& cur, Level& next, bool more_after, bool budget) {
    std::vector<std::uint64_t> key(m_.words());
    for (std::size_t i = 0; i < cur.size(); ++i) {
      const std::uint64_t* k = cur.key(i);
      const std::uint64_t peak = cur.peak[i], live = cur.live[i];
      ready_.clear();
      for (int v = 0; v < m_.nodes(); ++v)
        if (m_.Ready(k, v)) ready_.push_back(v);
      steps_.clear();
      for (int v : ready_) {
        const OrderModel::Step s = m_.Run(k, live, peak, v);
        if (s.dominant) {
          steps_.assign(1, {v, s});
          break;
        }
        steps_.push_back({v, s});
      }
      for (const auto& [v, s] : steps_) {
        const std::uint64_t p = std::max(peak, s.during);
        if (p >= upper_ || (more_after && s.after >= upper_)) continue;
        std::copy(k, k + m_.words(), key.begin());
        m_.Apply(key.data(), v, s.shares);
        next.Offer(key.data(), p, s.after, static_cast<std::uint32_t>(i), v);
      }
      if (!deadline_.Tick(ready_.size() + 1) || (budget && states_ + next.size() > max_states_))
        return false;
    }
    states_ += next.size();
    return true;
  }

  // The beam_width_ states of the lowest peak, then live bytes (the beam
  // keeps their paths: parents are re-indexed into the level before).
  Level Beam(const Level& level) const {
    std::vector<std::size_t> keep(level.size());
    for (std::size_t i = 0; i < keep.size(); ++i) keep[i] = i;
    const std::size_t width = std::min(keep.size(), beam_width_);
    std::partial_sort(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(width), keep.end(),
                      [&](std::size_t a, std::size_t b) {
                        return std::pair(level.peak[a], level.live[a]) < std::pair(level.peak[b], level.live[b]);
                      });
    keep.resize(width);
    Level out(m_.words());
    for (std::size_t i : keep) out.Offer(level.key(i), level.peak[i], level.live[i], level.parent[i], level.last[i]);
    return out;
  }

  // Every order passes a state of the level: the smallest bound over them.
  std::uint64_t LevelBound(const Level& level) const {
    std::uint64_t b = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t i = 0; i < level.size(); ++i) {
      const std::uint64_t here = std::max(level.peak[i], level.live[i]);
      if (here < b) b = std::max(here, StateBound(level.key(i), b));
    }
    return b;
  }

  // The bytes some node not yet run will surely see live (CoLive: its
  // fixed bytes and the concurrent tensors already written), or `enough`
  // once that is reached.
  std::uint64_t StateBound(const std::uint64_t* key, std::uint64_t enough) const {
    std::uint64_t b = 0;
    for (const auto& [most, v] : by_most_) {
      if (most <= b) break;
      if (OrderModel::Has(key, v)) continue;
      std::uint64_t live = colive_.fixed[static_cast<std::size_t>(v)];
      for (const auto& [w, bytes] : colive_.concurrent[static_cast<std::size_t>(v)])
        if (OrderModel::Has(key, w)) live += bytes;
      b = std::max(b, live);
      if (b >= enough) break;
    }
    return b;
  }

  // A state's bytes besides its key (bounds, path, hash slot), for
  // ScheduleParams::max_state_bytes.
  static constexpr std::size_t kStateBytes = 40;
  const OrderModel& m_;
  std::uint64_t upper_, lower_;
  Deadline deadline_;
  std::size_t max_states_;
  std::size_t beam_width_;
  OrderModel::CoLive colive_;
  std::vector<std::pair<std::uint64_t, int>> by_most_;  // (most bytes, node), most first
  std::size_t states_ = 0;
  std::vector<int> ready_;
  std::vector<std::pair<int, OrderModel::Step>> steps_;
};

}  // namespace

ExactResult ExactOrder(const OrderModel& model, std::uint64_t upper_bound,
                       std::uint64_t lower_bound, const ScheduleParams& params) {
  return Search(model, upper_bound, lower_bound, params).Run();
}

}  // namespace tensormem::internal
