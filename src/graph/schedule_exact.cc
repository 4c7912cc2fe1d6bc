// SPDX-License-Identifier: Apache-2.0
// The exact search for a minimum-peak order (SERENITY's dynamic programming),
// one segment of the graph at a time (OrderModel::Segments: the nodes
// between two chokepoints; an order's peak is the largest of its
// segments'), the segment of the highest peak first: once its optimum is
// proved, a segment whose best order so far is at or under it needs no
// search (on RandWire graphs, the later stages).
// In a segment, over the sets of nodes already run, one level per node. A
// state is the set run (plus the in-place sharing decisions, see
// schedule_model.h); of the paths reaching it only the lowest peak is kept
// (memoisation, a hash of the bit set). A beam search (breadth first, only
// the states of lowest peak kept) runs first: its order, often optimal, is
// the first upper bound. Then passes, each asking whether some order's
// peak is under a bound:
// - bound: a step whose peak, or whose live bytes with nodes still to run,
//   reaches the bound is dropped, so a pass that runs out of states proves
//   that no order is under it;
// - dominance: a ready node that raises neither the peak nor the live bytes
//   (OrderModel::Step::dominant) is run at once, the only successor. Peaks
//   count from just under the bound (every peak under it is as good), so
//   every step under it that does not raise the live bytes is dominant.
// A segment without in-place nodes is searched from the bound proved up
// (Rise): each pass goes forward from the segment's start and backward from
// its end, where the set of nodes run is the whole segment whatever the
// order, until the two sides meet (Meet); it probes a quarter of the way
// from the bound to the best peak known: a pass that finds no order raises
// the bound to the lowest peak it dropped, one that finds an order lowers
// the best peak, until the two meet. A pass under the optimum often ends
// within a few levels of the end (a RandWire stage's sinks feed its output
// node, so their outputs pile up there and few orders of its last nodes
// stay under the bound). A segment with in-place nodes (whose state at the end would
// depend on the order) is searched forward, breadth first, from the best
// order known down (Descend).
// Stopped by the time limit or the state budget, the search keeps the best
// order found and the lower bound proved before it (the co-live bound, the
// passes completed, the segments proved).
#include <algorithm>
#include <limits>
#include <span>

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

  // The state's index, or size() when it is not here.
  std::size_t Find(const std::uint64_t* k) const {
    const std::uint64_t h = HashWords(k, words_);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = h & mask; slots_[s] != kEmpty; s = (s + 1) & mask)
      if ((slots_[s] & ~kIndex) == (h & ~kIndex) && std::equal(k, k + words_, key(slots_[s] & kIndex)))
        return slots_[s] & kIndex;
    return size();
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

struct Frame {  // a state of the depth-first search and the steps from it
  std::vector<std::uint64_t> key;
  std::vector<std::pair<int, OrderModel::Step>> steps;  // by live bytes after, the fewest first
  std::size_t next = 0;                                 // the next step to take
};

// A segment of the graph (OrderModel::Segments) as the search orders it.
struct Segment {
  std::vector<int> nodes;             // a topological order
  std::vector<int> order;             // the best order of `nodes` known
  std::vector<int> beam;              // the best one after the beam (none: not searched)
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
    segs.push_back({std::move(nodes), {}, {}, 0, {}, 0});
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
  Search(const OrderModel& model, std::uint64_t lower, const ScheduleParams& params, std::size_t meet_width)
      : m_(model), lower_(lower), deadline_(params.time_limit_seconds), meet_width_(meet_width),
        max_states_(std::min(params.max_states,
                             params.max_state_bytes / (model.words() * sizeof(std::uint64_t) + kStateBytes))),
        beam_width_(std::max<std::size_t>(params.beam_width, 1)) {
    MaskPredecessors();
    MaskSuccessors();
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
    for (const Segment& seg : segs) {
      r.order.insert(r.order.end(), seg.order.begin(), seg.order.end());
      const std::vector<int>& beam = seg.beam.empty() ? seg.order : seg.beam;
      r.beam_order.insert(r.beam_order.end(), beam.begin(), beam.end());
    }
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
  // anyway), or the bound it proved (at least `floor`) when stopped; the
  // segment keeps the best order found. A beam first: its order, often
  // optimal, is the bound to prove or beat. Each pass of the exact search
  // asks whether some order's peak is under a bound: every such peak is as
  // good, so the dominance rule runs a node at once whenever it stays under
  // the bound and does not raise the live bytes (far more often than with
  // the peak so far).
  std::uint64_t Solve(Segment& seg, std::uint64_t floor) {
    Walked beam = Walk(seg, 0, false);
    if (!beam.order.empty() && beam.peak < seg.peak) seg.order = std::move(beam.order), seg.peak = beam.peak;
    seg.beam = seg.order;
    return InPlace(seg) ? Descend(seg, floor) : Rise(seg, floor);
  }

  // Some node of the segment may write in place: its sharing is part of
  // the state, and the state at the segment's end depends on the order.
  bool InPlace(const Segment& seg) const {
    return std::any_of(seg.nodes.begin(), seg.nodes.end(), [&](int v) { return m_.InPlaceCapable(v); });
  }

  // From the bound proved up: is some order's peak at most a probe a
  // quarter of the way from the bound (`lower`) to the best peak known?
  // When none is, every order passed through a step the pass dropped, so
  // the lowest peak dropped (next_) is the new bound; an order found is the
  // new best. The two meet at the optimum. A pass under the optimum often
  // ends after a few levels at the segment's end (Meet), so raising the
  // bound costs little even when the best order known is far above it;
  // probing past the bound, rather than just at it, keeps the passes few
  // where the peaks that can be dropped are many and close together
  // (arbitrary tensor sizes).
  std::uint64_t Rise(Segment& seg, std::uint64_t floor) {
    std::uint64_t lower = floor;
    while (seg.peak > lower) {
      Walked exact = Meet(seg, lower + (seg.peak - lower) / 4 + 1);
      if (!exact.order.empty()) {
        seg.order = std::move(exact.order), seg.peak = exact.peak;
      } else {
        if (!exact.complete) return lower;
        lower = std::min(next_, seg.peak);
      }
    }
    return std::max(floor, seg.peak);
  }

  // From the best order known down: is some order's peak under it? Each
  // order found is the next bound, until a pass finds none (proved).
  std::uint64_t Descend(Segment& seg, std::uint64_t floor) {
    for (;;) {
      if (seg.peak <= floor) return floor;
      Walked exact = Walk(seg, seg.peak - 1, true);
      if (exact.order.empty()) return exact.complete ? seg.peak : floor;
      seg.order = std::move(exact.order), seg.peak = exact.peak;
    }
  }

  // Whether some order of the segment has a peak under `upper` (then the
  // first one found). Forward from the segment's start and backward from
  // its end (every node run), a level at a time on the side of fewer
  // states, until both reach the same level: an order under the bound
  // passes through a state both sides keep there. The dominance rule
  // prunes the forward side only; the backward side keeps every state from
  // which the end is reached under the bound. Often one side runs out of
  // states early (a stage's end, where its sinks' outputs pile up, admits
  // few orders). Past meet_width_ states a side, depth first (Dive).
  Walked Meet(const Segment& seg, std::uint64_t upper) {
    Walked w;
    upper_ = upper;
    next_ = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t floor = upper - 1;
    const std::size_t n = seg.nodes.size();
    Level fwd(m_.words(), 1), bwd(m_.words(), 1);
    fwd.Offer(seg.start.data(), std::max(floor, seg.live), seg.live, seg.live, 0, -1);
    const Ran all = RunOrder(seg, seg.order);  // the same end state for every order
    const std::vector<std::uint64_t>& end = all.state;
    const std::uint64_t end_live = all.live;
    bwd.Offer(end.data(), floor, 0, end_live, 0, -1);
    std::vector<Path> ahead, behind;  // each level's paths, forward and backward
    std::size_t kf = 0, kb = n;
    while (kf < kb) {
      if (fwd.size() == 0 || bwd.size() == 0) break;
      const bool forward = fwd.size() <= bwd.size();
      if (forward && fwd.size() > meet_width_) break;  // the rest depth first
      Level& from = forward ? fwd : bwd;
      Level next(m_.words(), from.size() + from.size() / 2);
      if (!(forward ? Expand(fwd, next, seg.nodes, kf + 1 < n, true) : ExpandBack(bwd, next, seg.nodes, floor)))
        return w;
      (forward ? ahead : behind).push_back({std::move(next.parent), std::move(next.last)});
      from = std::move(next);
      forward ? ++kf : --kb;
    }
    w.complete = true;
    if (fwd.size() == 0 || bwd.size() == 0) return w;
    if (kf == kb) return Join(seg, fwd, bwd, ahead, behind);
    return Dive(seg, fwd, bwd, ahead, behind, kf, kb);
  }

  // Depth first from each forward state (the fewest live bytes first) to
  // the backward side's level: the first state it holds ends the search,
  // so an order under the bound is found without every state before it.
  // A state searched once is not searched again (nothing below it reached
  // the backward side).
  Walked Dive(const Segment& seg, const Level& fwd, const Level& bwd, const std::vector<Path>& ahead,
              const std::vector<Path>& behind, std::size_t kf, std::size_t kb) {
    Level seen(m_.words(), fwd.size());
    Walked w = DiveFrom(seg, fwd, bwd, ahead, behind, kf, kb, seen);
    states_ += seen.size();
    return w;
  }

  Walked DiveFrom(const Segment& seg, const Level& fwd, const Level& bwd, const std::vector<Path>& ahead,
                  const std::vector<Path>& behind, std::size_t kf, std::size_t kb, Level& seen) {
    const std::size_t n = seg.nodes.size();
    std::vector<Frame> stack;  // [0, depth) in use, the others kept for their memory
    std::size_t depth = 0;
    std::vector<std::uint64_t> child(m_.words());
    for (std::size_t r : ByLive(fwd)) {
      Push(stack, depth, fwd.key(r), fwd.live[r], seg.nodes, kf + 1 < n);
      while (depth > 0) {
        Frame& f = stack[depth - 1];
        if (f.next == f.steps.size()) {
          --depth;
          continue;
        }
        const auto [v, s] = f.steps[f.next++];
        child.assign(f.key.begin(), f.key.end());
        m_.Apply(child.data(), v, s.shares);
        if (kf + depth == kb) {
          const std::size_t j = bwd.Find(child.data());
          if (j < bwd.size()) return Found(seg, ahead, r, std::span(stack).first(depth), behind, j);
          continue;
        }
        if (seen.Find(child.data()) < seen.size()) continue;
        seen.Offer(child.data(), 0, 0, 0, 0, v);
        if (!deadline_.Tick(n) || states_ + seen.size() > max_states_) return {};
        Push(stack, depth, child.data(), s.after, seg.nodes, kf + depth + 1 < n);
      }
    }
    Walked w;
    w.complete = true;
    return w;
  }

  // The states of `level` by live bytes, the fewest first.
  static std::vector<std::size_t> ByLive(const Level& level) {
    std::vector<std::size_t> order(level.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return level.live[a] < level.live[b]; });
    return order;
  }

  // The state `key` (`live` bytes live) on top of the depth-first stack,
  // with its steps under the bound, the fewest live bytes after first.
  void Push(std::vector<Frame>& stack, std::size_t& depth, const std::uint64_t* key, std::uint64_t live,
            const std::vector<int>& nodes, bool more_after) {
    Steps(key, live, upper_ - 1, nodes, more_after);
    std::stable_sort(steps_.begin(), steps_.end(), [](const auto& a, const auto& b) { return a.second.after < b.second.after; });
    if (depth == stack.size()) stack.emplace_back();
    Frame& f = stack[depth++];
    f.key.assign(key, key + m_.words());
    f.steps.assign(steps_.begin(), steps_.end());
    f.next = 0;
  }

  // The order through forward state `root`, the nodes `stack` chose and
  // backward state `j`; its peak from the model.
  Walked Found(const Segment& seg, const std::vector<Path>& ahead, std::size_t root, std::span<const Frame> stack,
               const std::vector<Path>& behind, std::size_t j) const {
    Walked w;
    w.complete = true;
    w.order = NodesTo(ahead, root);
    for (const auto& f : stack) w.order.push_back(f.steps[f.next - 1].first);
    const std::vector<int> back = NodesTo(behind, j);  // from the end backward
    w.order.insert(w.order.end(), back.rbegin(), back.rend());
    w.peak = RunOrder(seg, w.order).peak;
    return w;
  }

  // The nodes of the path to state `at` of the last level of `paths`, in
  // the order the levels added them.
  static std::vector<int> NodesTo(const std::vector<Path>& paths, std::size_t at) {
    std::vector<int> nodes(paths.size());
    for (std::size_t k = paths.size(); k-- > 0;) {
      nodes[k] = paths[k].last[at];
      at = paths[k].parent[at];
    }
    return nodes;
  }

  // The segment's nodes run in `order` from its start: the state and the
  // live bytes after them, and the peak on the way.
  struct Ran {
    std::vector<std::uint64_t> state;
    std::uint64_t live = 0, peak = 0;
  };
  Ran RunOrder(const Segment& seg, const std::vector<int>& order) const {
    Ran r{seg.start, seg.live, seg.live};
    for (int v : order) {
      const OrderModel::Step s = m_.Run(r.state.data(), r.live, r.live, v);
      r.peak = std::max(r.peak, s.during);
      r.live = s.after;
      m_.Apply(r.state.data(), v, s.shares);
    }
    return r;
  }

  // The lowest-peak order through a state both `fwd` and `bwd` (the same
  // level) hold, from their paths; none when they hold none in common.
  Walked Join(const Segment& seg, const Level& fwd, const Level& bwd, const std::vector<Path>& ahead,
              const std::vector<Path>& behind) const {
    std::size_t fi = fwd.size(), bi = 0;
    std::uint64_t best = 0;
    for (std::size_t i = 0; i < fwd.size(); ++i) {
      const std::size_t j = bwd.Find(fwd.key(i));
      if (j == bwd.size()) continue;
      const std::uint64_t peak = std::max(fwd.real[i], bwd.real[j]);
      if (fi == fwd.size() || peak < best) fi = i, bi = j, best = peak;
    }
    if (fi < fwd.size()) return Found(seg, ahead, fi, {}, behind, bi);
    Walked w;
    w.complete = true;
    return w;
  }

  // Every state of `cur` (sets of nodes run) into `next` with one node of
  // `nodes` less: a node nothing run reads from, whose step from the
  // smaller set stays under the bound. The step's bytes do not depend on
  // the bytes live before it, so the live bytes there are those after it
  // less what it adds. Each state keeps the lowest peak of the steps after
  // it. False when stopped by the time limit or the state budget.
  bool ExpandBack(const Level& cur, Level& next, const std::vector<int>& nodes, std::uint64_t floor) {
    std::vector<std::uint64_t> key(m_.words());
    for (std::size_t i = 0; i < cur.size(); ++i) {
      const std::uint64_t* k = cur.key(i);
      for (int v : nodes) {
        if (!Last(k, v)) continue;
        std::copy(k, k + m_.words(), key.begin());
        key[static_cast<unsigned>(v) >> 6] &= ~(std::uint64_t{1} << (static_cast<unsigned>(v) & 63));
        const OrderModel::Step s = m_.Run(key.data(), 0, 0, v);  // from 0 live: what it adds (mod 2^64)
        const std::uint64_t live = cur.live[i] - s.after, during = live + s.during;
        if (during >= upper_) {
          next_ = std::min(next_, during);
          continue;
        }
        next.Offer(key.data(), floor, std::max(cur.real[i], during), live, static_cast<std::uint32_t>(i), v);
      }
      if (!deadline_.Tick(nodes.size()) || states_ + next.size() > max_states_) return false;
    }
    states_ += next.size();
    return true;
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
    w.order = NodesTo(paths, best);
    return w;
  }

  // Every state of `cur` into `next` (a node of `nodes` more); false when
  // stopped by the time limit or (`budget`) the state budget.
  bool Expand(const Level& cur, Level& next, const std::vector<int>& nodes, bool more_after, bool budget) {
    std::vector<std::uint64_t> key(m_.words());
    for (std::size_t i = 0; i < cur.size(); ++i) {
      const std::uint64_t* k = cur.key(i);
      const std::uint64_t peak = cur.peak[i], real = cur.real[i];
      Steps(k, cur.live[i], peak, nodes, more_after);
      for (const auto& [v, s] : steps_) {
        std::copy(k, k + m_.words(), key.begin());
        m_.Apply(key.data(), v, s.shares);
        next.Offer(key.data(), std::max(peak, s.during), std::max(real, s.during), s.after,
                   static_cast<std::uint32_t>(i), v);
      }
      if (!deadline_.Tick(ready_.size() + 1) || (budget && states_ + next.size() > max_states_))
        return false;
    }
    states_ += next.size();
    return true;
  }

  // The steps from the state `k` (`live` bytes live, a peak of `peak`)
  // into steps_: the dominant one alone when there is one, and only those
  // under the bound (next_ keeps the lowest peak of those dropped).
  void Steps(const std::uint64_t* k, std::uint64_t live, std::uint64_t peak, const std::vector<int>& nodes,
             bool more_after) {
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
    std::erase_if(steps_, [&](const std::pair<int, OrderModel::Step>& step) {
      const std::uint64_t p = std::max(peak, step.second.during);
      if (p < upper_ && !(more_after && step.second.after >= upper_)) return false;
      next_ = std::min(next_, p >= upper_ ? p : step.second.after);
      return true;
    });
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

  // Each node's successors as masks, for Last.
  void MaskSuccessors() {
    std::vector<std::vector<int>> succs(static_cast<std::size_t>(m_.nodes()));
    for (int v = 0; v < m_.nodes(); ++v)
      for (int p : m_.preds(v)) succs[static_cast<std::size_t>(p)].push_back(v);
    succ_begin_.push_back(0);
    for (const std::vector<int>& s : succs) {
      for (int r : s) succ_.push_back({static_cast<std::uint32_t>(r) >> 6, std::uint64_t{1} << (static_cast<unsigned>(r) & 63)});
      succ_begin_.push_back(succ_.size());
    }
  }

  // v has run and nothing run reads from it: it may have run last.
  bool Last(const std::uint64_t* key, int v) const {
    if (!OrderModel::Has(key, v)) return false;
    const std::size_t i = static_cast<std::size_t>(v);
    for (std::size_t j = succ_begin_[i]; j < succ_begin_[i + 1]; ++j)
      if (key[succ_[j].first] & succ_[j].second) return false;
    return true;
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
  std::uint64_t next_ = 0;   // the walk's: the lowest peak of a step it dropped
  Deadline deadline_;
  std::size_t meet_width_;  // a side's states past which Meet goes on depth first
  std::size_t max_states_;
  std::size_t beam_width_;
  std::size_t states_ = 0;
  std::vector<int> ready_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> need_;  // (word, predecessors' bits there)
  std::vector<std::size_t> need_begin_;                        // per node, into need_
  std::vector<std::pair<std::uint32_t, std::uint64_t>> succ_;  // (word, a successor's bit there)
  std::vector<std::size_t> succ_begin_;                        // per node, into succ_
  std::vector<std::pair<int, OrderModel::Step>> steps_;
};

}  // namespace

ExactResult ExactOrder(const OrderModel& model, const std::vector<std::vector<int>>& starts,
                       std::uint64_t lower_bound, const ScheduleParams& params, std::size_t meet_width) {
  if (starts.empty() || model.nodes() == 0) return {};
  return Search(model, lower_bound, params, meet_width).Run(starts);
}

}  // namespace tensormem::internal
