// SPDX-License-Identifier: Apache-2.0
// The exact search for a minimum-peak order (SERENITY's dynamic programming),
// one segment of the graph at a time (OrderModel::Segments: the nodes
// between two chokepoints; an order's peak is the largest of its
// segments'), the segment of the highest peak first: once its optimum is
// proved, a segment whose best order so far is at or under it needs no
// search (on RandWire graphs, the later stages).
// In a segment, breadth first over the sets of nodes already run, one
// level per node. A state is the set run (plus the in-place sharing
// decisions, see schedule_model.h); of the paths reaching it only the
// lowest peak is kept (memoisation, a hash of the bit set). Pruning:
// - bound: a state whose peak, or whose live bytes with nodes still to run,
//   reaches the best known peak is dropped (only strictly better orders are
//   searched for, so a search that runs out of states proves the bound);
// - dominance: a ready node that raises neither the peak nor the live bytes
//   (OrderModel::Step::dominant) is run at once, the only successor. The
//   search asks whether some order is under the best known peak, so peaks
//   count from just under it: every step under the bound that does not
//   raise the live bytes is dominant. An order found becomes the new
//   bound, and the search runs again until none is found (proved).
// A beam search (the same levels, only the states of lowest peak kept) runs
// first: its order, often optimal, is the first bound.
// Stopped by the time limit or the state budget, the search keeps the best
// order found and the lower bound proved before it (the co-live bound, the
// segments proved).
#include <algorithm>
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
// last node. A slot holds a state's index and its hash's high half, so that
// most probes compare no key.
class Level {
 public:
  // Room for about `expected` states without growing.
  Level(std::size_t words, std::size_t expected) : words_(words) {
    std::size_t slots = 1024;
    while (slots < 2 * expected) slots *= 2;
    slots_.assign(slots, kEmpty);
    keys_.reserve(expected * words);
    for (auto* v : {&peak, &real, &live}) v->reserve(expected);
    parent.reserve(expected);
    last.reserve(expected);
  }

  std::size_t size() const { return peak.size(); }
  const std::uint64_t* key(std::size_t i) const { return keys_.data() + i * words_; }

  // Adds the state, or lowers its peak (then its real peak: see Walk) and
  // takes the new path, when known.
  void Offer(const std::uint64_t* k, std::uint64_t p, std::uint64_t r, std::uint64_t l, std::uint32_t from, int node) {
    if (2 * (size() + 1) > slots_.size()) Grow();
    const std::uint64_t h = HashWords(k, words_);
    const std::uint64_t tag = h & ~kIndex;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = h & mask;; s = (s + 1) & mask) {
      if (slots_[s] == kEmpty) {
        slots_[s] = tag | size();
        keys_.insert(keys_.end(), k, k + words_);
        peak.push_back(p);
        real.push_back(r);
        live.push_back(l);
        parent.push_back(from);
        last.push_back(node);
        return;
      }
      if ((slots_[s] & ~kIndex) != tag) continue;
      const std::size_t i = slots_[s] & kIndex;
      if (!std::equal(k, k + words_, key(i))) continue;
      if (p < peak[i] || (p == peak[i] && r < real[i])) peak[i] = p, real[i] = r, parent[i] = from, last[i] = node;
      return;
    }
  }

  std::vector<std::uint64_t> peak, real, live;
  std::vector<std::uint32_t> parent;
  std::vector<int> last;

 private:
  static constexpr std::uint64_t kIndex = 0xffffffffULL;  // the low half: the state's index
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  void Grow() {
    slots_.assign(slots_.size() * 2, kEmpty);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = 0; i < size(); ++i) {
      const std::uint64_t h = HashWords(key(i), words_);
      std::size_t s = h & mask;
      while (slots_[s] != kEmpty) s = (s + 1) & mask;
      slots_[s] = (h & ~kIndex) | i;
    }
  }
  std::size_t words_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint64_t> slots_;
};

struct Path {  // per level after the first: each state's parent and last node
  std::vector<std::uint32_t> parent;
  std::vector<int> last;
};

// A segment of the graph (OrderModel::Segments) as the search orders it.
struct Segment {
  std::vector<int> nodes;             // a topological order
  std::vector<int> order;             // the best order of `nodes` known
  std::uint64_t peak = 0;             // its peak (in the search: at least the floor)
  std::vector<std::uint64_t> start;   // the state with every earlier segment run
  std::uint64_t live = 0;             // the live bytes then
};

// The peak of each segment's piece of `order` (one piece after the other,
// each in the order's order).
std::vector<std::uint64_t> PiecePeaks(const OrderModel& m, const std::vector<std::vector<int>>& pieces) {
  std::vector<std::uint64_t> peaks(pieces.size(), 0);
  std::vector<std::uint64_t> state(m.words(), 0);
  std::uint64_t live = m.initial_live();
  for (std::size_t k = 0; k < pieces.size(); ++k)
    for (int v : pieces[k]) {
      const OrderModel::Step s = m.Run(state.data(), live, live, v);
      peaks[k] = std::max(peaks[k], s.during);
      live = s.after;
      m.Apply(state.data(), v, s.shares);
    }
  return peaks;
}

// The segments, each with the lowest-peak piece of the `starts` orders (a
// segment's peak does not depend on the order of the others) and the
// state it starts from.
std::vector<Segment> SplitSegments(const OrderModel& m, const std::vector<std::vector<int>>& starts,
                                   std::uint64_t floor) {
  std::vector<Segment> segs;
  std::vector<std::size_t> seg_of(static_cast<std::size_t>(m.nodes()));
  for (std::vector<int>& nodes : m.Segments(floor)) {
    for (int v : nodes) seg_of[static_cast<std::size_t>(v)] = segs.size();
    segs.push_back({std::move(nodes), {}, 0, {}, 0});
  }
  for (const std::vector<int>& order : starts) {
    std::vector<std::vector<int>> pieces(segs.size());
    for (int v : order) pieces[seg_of[static_cast<std::size_t>(v)]].push_back(v);
    const std::vector<std::uint64_t> peaks = PiecePeaks(m, pieces);
    for (std::size_t k = 0; k < segs.size(); ++k)
      if (segs[k].order.empty() || peaks[k] < segs[k].peak) segs[k].order = std::move(pieces[k]), segs[k].peak = peaks[k];
  }
  std::vector<std::uint64_t> state(m.words(), 0);
  std::uint64_t live = m.initial_live();
  for (Segment& seg : segs) {
    seg.start = state, seg.live = live;
    for (int v : seg.order) {
      const OrderModel::Step s = m.Run(state.data(), live, live, v);
      live = s.after;
      m.Apply(state.data(), v, s.shares);
    }
  }
  return segs;
}

class Search {
 public:
  Search(const OrderModel& model, std::uint64_t lower, const ScheduleParams& params)
      : m_(model), lower_(lower), deadline_(params.time_limit_seconds),
        max_states_(std::min(params.max_states,
                             params.max_state_bytes / (model.words() * sizeof(std::uint64_t) + kStateBytes))),
        beam_width_(std::max<std::size_t>(params.beam_width, 1)) {
    MaskPredecessors();
  }

  // The segments of the highest peak first: once one is solved, the
  // others need only an order at or under its peak (the floor).
  ExactResult Run(const std::vector<std::vector<int>>& starts) {
    std::vector<Segment> segs = SplitSegments(m_, starts, lower_);
    std::vector<std::size_t> by_peak(segs.size());
    for (std::size_t i = 0; i < by_peak.size(); ++i) by_peak[i] = i;
    std::stable_sort(by_peak.begin(), by_peak.end(), [&](std::size_t a, std::size_t b) { return segs[a].peak > segs[b].peak; });
    std::uint64_t floor = lower_;
    for (std::size_t i : by_peak)
      if (segs[i].peak > floor) floor = std::max(floor, Solve(segs[i], floor));
    ExactResult r;
    for (const Segment& seg : segs) r.order.insert(r.order.end(), seg.order.begin(), seg.order.end());
    r.peak = m_.Peak(r.order);
    r.lower_bound = std::min(floor, r.peak);
    r.complete = r.lower_bound == r.peak;
    r.states = states_;
    return r;
  }

 private:
  struct Walked {
    std::vector<int> order;  // empty: none below the bound
    std::uint64_t peak = 0;  // its real peak
    bool complete = false;   // every state was searched
  };

  // The segment's lowest peak over `floor` (the peak an order must reach
  // anyway), or `floor` when stopped; the segment keeps the best order
  // found. A beam first: its order, often optimal, is the bound the exact
  // search proves or beats. The exact search asks whether some order's
  // peak is under the bound: every such peak is as good, so the dominance
  // rule runs a node at once whenever it stays under the bound and does not
  // raise the live bytes (far more often than with the peak so far).
  std::uint64_t Solve(Segment& seg, std::uint64_t floor) {
    Walked beam = Walk(seg, 0, false);
    if (!beam.order.empty() && beam.peak < seg.peak) seg.order = std::move(beam.order), seg.peak = beam.peak;
    for (;;) {
      if (seg.peak <= floor) return floor;
      Walked exact = Walk(seg, seg.peak - 1, true);
      if (exact.order.empty()) return exact.complete ? seg.peak : floor;
      seg.order = std::move(exact.order), seg.peak = exact.peak;
    }
  }

  // Level by level from the segment's start, every state with a peak under
  // the segment's (`proving`, until a limit stops it) or the beam's. Peaks
  // count from `floor` (all peaks under it alike); each state also keeps
  // the real peak of its path, the lowest among equals.
  Walked Walk(const Segment& seg, std::uint64_t floor, bool proving) {
    Walked w;
    upper_ = seg.peak;
    Level cur(m_.words(), 1);
    cur.Offer(seg.start.data(), std::max(floor, seg.live), seg.live, seg.live, 0, -1);
    std::vector<Path> paths;
    const std::size_t n = seg.nodes.size();
    for (std::size_t k = 0; k < n && cur.size() > 0; ++k) {
      // A level has up to about 1.5 times the states of the one before.
      Level next(m_.words(), proving ? cur.size() + cur.size() / 2 : 0);
      if (!proving) {
        cur = Beam(cur);
        if (!paths.empty()) paths.back() = {cur.parent, cur.last};
      }
      if (!Expand(cur, next, seg.nodes, k + 1 < n, proving)) return w;
      if (proving)  // the beam re-indexes them (Beam)
        paths.push_back({std::move(next.parent), std::move(next.last)});
      else
        paths.push_back({next.parent, next.last});
      cur = std::move(next);
    }
    w.complete = proving;
    if (cur.size() == 0 || n == 0) return w;
    std::size_t best = 0;
    for (std::size_t i = 1; i < cur.size(); ++i)
      if (cur.real[i] < cur.real[best]) best = i;
    w.peak = cur.real[best];
    w.order.resize(n);
    std::size_t at = best;
    for (std::size_t k = paths.size(); k-- > 0;) {
      w.order[k] = paths[k].last[at];
      at = paths[k].parent[at];
    }
    return w;
  }

  // Every state of `cur` into `next` (a node of `nodes` more); false when
  // stopped by the time limit or (`budget`) the state budget.
  bool Expand(const Level& cur, Level& next, const std::vector<int>& nodes, bool more_after, bool budget) {
    std::vector<std::uint64_t> key(m_.words());
    for (std::size_t i = 0; i < cur.size(); ++i) {
      const std::uint64_t* k = cur.key(i);
      const std::uint64_t peak = cur.peak[i], real = cur.real[i], live = cur.live[i];
      ready_.clear();
      for (int v : nodes)
        if (Ready(k, v)) ready_.push_back(v);
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
        next.Offer(key.data(), p, std::max(real, s.during), s.after, static_cast<std::uint32_t>(i), v);
      }
      if (!deadline_.Tick(ready_.size() + 1) || (budget && states_ + next.size() > max_states_))
        return false;
    }
    states_ += next.size();
    return true;
  }

  // Each node's predecessors as masks of the state's words, for Ready.
  void MaskPredecessors() {
    need_begin_.push_back(0);
    for (int v = 0; v < m_.nodes(); ++v) {
      const std::size_t first = need_.size();
      for (int p : m_.preds(v)) {
        const std::uint32_t w = static_cast<std::uint32_t>(p) >> 6;
        const std::uint64_t bit = std::uint64_t{1} << (static_cast<unsigned>(p) & 63);
        auto it = std::find_if(need_.begin() + static_cast<std::ptrdiff_t>(first), need_.end(),
                               [&](const auto& n) { return n.first == w; });
        if (it == need_.end()) need_.push_back({w, bit});
        else it->second |= bit;
      }
      need_begin_.push_back(need_.size());
    }
  }

  // OrderModel::Ready, on masks.
  bool Ready(const std::uint64_t* key, int v) const {
    if (OrderModel::Has(key, v)) return false;
    const std::size_t i = static_cast<std::size_t>(v);
    for (std::size_t j = need_begin_[i]; j < need_begin_[i + 1]; ++j)
      if ((key[need_[j].first] & need_[j].second) != need_[j].second) return false;
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
    Level out(m_.words(), width);
    for (std::size_t i : keep)
      out.Offer(level.key(i), level.peak[i], level.real[i], level.live[i], level.parent[i], level.last[i]);
    return out;
  }

  // A state's bytes besides its key (bounds, path, hash slot), for
  // ScheduleParams::max_state_bytes.
  static constexpr std::size_t kStateBytes = 48;
  const OrderModel& m_;
  std::uint64_t lower_;
  std::uint64_t upper_ = 0;  // the walk's: only peaks under it are kept
  Deadline deadline_;
  std::size_t max_states_;
  std::size_t beam_width_;
  std::size_t states_ = 0;
  std::vector<int> ready_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> need_;  // (word, predecessors' bits there)
  std::vector<std::size_t> need_begin_;                        // per node, into need_
  std::vector<std::pair<int, OrderModel::Step>> steps_;
};

}  // namespace

ExactResult ExactOrder(const OrderModel& model, const std::vector<std::vector<int>>& starts,
                       std::uint64_t lower_bound, const ScheduleParams& params) {
  if (starts.empty() || model.nodes() == 0) return {};
  return Search(model, lower_bound, params).Run(starts);
}

}  // namespace tensormem::internal
