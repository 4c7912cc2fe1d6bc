// SPDX-License-Identifier: Apache-2.0
#include "solver/instance.h"

#include <algorithm>
#include <bit>
#include <deque>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "core/checked_math.h"
#include "solver/canonical_order.h"
#include "tensormem/lower_bounds.h"

namespace tensormem::solver {
namespace {

// One unit of presolve work: false once the deadline has passed (no
// deadline: never).
bool Tick(internal::Deadline* d, std::uint64_t steps = 1) { return !d || d->Tick(steps); }
bool Expired(internal::Deadline* d) { return d && d->Expired(); }

// Occupancy(b) without its allocation for the common buffer without gaps.
template <typename F>
void ForEachSegment(const Buffer& b, F&& f) {
  if (b.size == 0) return;
  if (b.gaps.empty()) {
    f(Segment{b.first_task, b.last_task, 0, b.size});
    return;
  }
  for (const Segment& s : Occupancy(b)) f(s);
}

// The buffer restricted to tasks [first, last] (gaps clipped too); false
// when it is not live there.
bool ClipBuffer(const Buffer& b, TaskIndex first, TaskIndex last, Buffer* out) {
  if (b.last_task < first || b.first_task > last) return false;
  *out = b;
  out->first_task = std::max(b.first_task, first);
  out->last_task = std::min(b.last_task, last);
  out->gaps.clear();
  for (const Gap& g : b.gaps) {
    if (g.last_task < out->first_task || g.first_task > out->last_task) continue;
    Gap c = g;
    c.first_task = std::max(g.first_task, out->first_task);
    c.last_task = std::min(g.last_task, out->last_task);
    out->gaps.push_back(c);
  }
  out->fixed_offset.reset();
  return true;
}

// Maximal groups of buffers whose lifetimes chain together; `buffers` and
// each group's buffers in index order. False when the deadline passes.
bool TimeGroups(const Problem& problem, const std::vector<std::size_t>& buffers,
                internal::Deadline* deadline, std::vector<std::vector<std::size_t>>* groups) {
  std::vector<std::uint32_t> order(buffers.size());  // positions by first task
  std::iota(order.begin(), order.end(), 0u);
  if (!internal::StableSortUntil(
          order,
          [&](std::uint32_t a, std::uint32_t b) {
            return problem.buffers[buffers[a]].first_task < problem.buffers[buffers[b]].first_task;
          },
          deadline))
    return false;
  std::vector<std::uint32_t> group_of(buffers.size());
  std::vector<std::size_t> sizes;
  TaskIndex end = -1;
  for (std::uint32_t k : order) {
    if (!Tick(deadline)) return false;
    const Buffer& b = problem.buffers[buffers[k]];
    if (sizes.empty() || b.first_task > end) {
      sizes.push_back(0);
      end = b.last_task;
    } else {
      end = std::max(end, b.last_task);
    }
    group_of[k] = static_cast<std::uint32_t>(sizes.size() - 1);
    ++sizes.back();
  }
  groups->assign(sizes.size(), {});
  for (std::size_t gi = 0; gi < sizes.size(); ++gi) (*groups)[gi].reserve(sizes[gi]);
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    if (!Tick(deadline)) return false;
    (*groups)[group_of[k]].push_back(buffers[k]);
  }
  return true;
}

struct Group {
  std::vector<std::size_t> buffers;  // index order
  std::uint64_t base = 0;
};

}  // namespace

bool RankItems(const Instance& inst, CanonicalOrder order, internal::Deadline* deadline,
               std::vector<std::uint32_t>* ranks) {
  std::vector<std::uint32_t> idx(inst.items.size());
  std::iota(idx.begin(), idx.end(), 0u);
  auto key = [&](std::uint32_t i) {
    const Item& it = inst.items[i];
    switch (order) {
      case CanonicalOrder::kLongestFirst:
        return std::make_tuple(-static_cast<double>(it.lifetime), -static_cast<double>(it.Area()),
                               -static_cast<double>(it.height));
      case CanonicalOrder::kLargestFirst:
        return std::make_tuple(-static_cast<double>(it.height), -static_cast<double>(it.lifetime),
                               -static_cast<double>(it.Area()));
      case CanonicalOrder::kAreaFirst:
        return std::make_tuple(-static_cast<double>(it.Area()), -static_cast<double>(it.lifetime),
                               -static_cast<double>(it.height));
      case CanonicalOrder::kTotalFirst:
        return std::make_tuple(-static_cast<double>(it.total), -static_cast<double>(it.lifetime),
                               -static_cast<double>(it.height));
    }
    return std::make_tuple(0.0, 0.0, 0.0);
  };
  if (!internal::StableSortUntil(
          idx, [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); }, deadline))
    return false;
  ranks->resize(idx.size());
  for (std::uint32_t r = 0; r < idx.size(); ++r) (*ranks)[idx[r]] = r;
  return true;
}

bool AssignRanks(Instance& inst, CanonicalOrder order, internal::Deadline* deadline) {
  std::vector<std::uint32_t> ranks;
  if (!RankItems(inst, order, deadline, &ranks)) return false;
  for (std::size_t i = 0; i < ranks.size(); ++i) inst.items[i].rank = ranks[i];
  return true;
}


namespace {

// Peak live bytes of a partition, the way PeakLiveBytes counts them (sizes
// rounded up to g, minus the largest padding live), over its sections: the
// live set is constant within a section, so no sort is needed. `g` is the
// gcd of the alignments of the buffers behind the pieces and obstacles (1
// with windows or a base).
bool SectionPeak(const Instance& inst, std::uint64_t g, internal::Deadline* deadline,
                 std::uint64_t* peak) {
  const std::uint32_t S = inst.num_sections;
  std::vector<internal::Uint128> diff(S + 1, 0);
  std::vector<std::uint64_t> pad_tag;  // max pad over ranges: tags of a bottom-up segment tree
  auto add = [&](std::uint32_t begin, std::uint32_t end, std::uint64_t bytes) {
    if (bytes == 0 || begin >= end) return;
    std::uint64_t rounded;
    if (g == 1 || !internal::CheckedAlignUp(bytes, g, &rounded)) rounded = bytes;
    diff[begin] += rounded;
    diff[end] -= rounded;
    const std::uint64_t pad = rounded - bytes;
    if (pad == 0) return;
    if (pad_tag.empty()) pad_tag.assign(2 * std::size_t{S}, 0);
    for (std::size_t l = begin + std::size_t{S}, r = end + std::size_t{S}; l < r; l >>= 1, r >>= 1) {
      if (l & 1) { pad_tag[l] = std::max(pad_tag[l], pad); ++l; }
      if (r & 1) { --r; pad_tag[r] = std::max(pad_tag[r], pad); }
    }
  };
  for (const Piece& pc : inst.pieces) {
    if (!Tick(deadline)) return false;
    add(pc.begin, pc.end, pc.hi - pc.lo);
  }
  for (const Obstacle& ob : inst.obstacles) add(ob.begin, ob.end, ob.hi - ob.lo);
  if (inst.base > 0) add(0, S, inst.base);
  internal::Uint128 live = 0, best = 0;
  for (std::uint32_t q = 0; q < S; ++q) {
    if (!Tick(deadline)) return false;
    live += diff[q];
    std::uint64_t pad = 0;
    if (!pad_tag.empty())
      for (std::size_t v = q + std::size_t{S}; v >= 1; v >>= 1) pad = std::max(pad, pad_tag[v]);
    if (live > 0) best = std::max(best, live - pad);
  }
  *peak = best > internal::kMaxU64 ? internal::kMaxU64 : static_cast<std::uint64_t>(best);
  return true;
}

// The gcd of the alignments behind PeakLiveBytes (1 with a window gap); 0
// when the deadline passes.
std::uint64_t PeakAlignment(const Problem& problem, internal::Deadline* deadline) {
  std::uint64_t g = 0;
  for (const Buffer& b : problem.buffers) {
    if (!Tick(deadline)) return 0;
    if (b.size == 0) continue;
    for (const Gap& gap : b.gaps)
      if (gap.has_window) g = 1;
    std::uint64_t e;
    if (!internal::CheckedLcm(1, std::max<std::uint64_t>(b.alignment, 1), &e)) e = 1;
    g = std::gcd(g, e);
  }
  return g == 0 ? 1 : g;
}

// 24 bytes and reserved exactly: at 3 x 10^5 buffers this array and the
// sort's merge buffer were the presolve's peak (55 MB with 32-byte events
// grown by doubling).
struct PeakEvent {
  // 2 x task + kind: 0 = starts at task, 1 = ends after task. Unsigned:
  // a task may be kMaxTaskIndex = 2^62, and 2^63 + 1 overflows TaskIndex.
  std::uint64_t key;
  std::uint64_t bytes, pad;
  std::uint32_t kind() const { return static_cast<std::uint32_t>(key & 1); }
};

// The start and end of every segment, its bytes rounded up to g (and the
// padding that adds), sorted by task; `any_pad` whether some is padded.
// False when the deadline passes.
bool PeakEvents(const Problem& problem, std::uint64_t g, internal::Deadline* deadline,
                std::vector<PeakEvent>* events, bool* any_pad) {
  std::size_t num_events = 0;
  for (const Buffer& b : problem.buffers) {
    if (!Tick(deadline)) return false;
    ForEachSegment(b, [&](const Segment&) { num_events += 2; });
  }
  events->reserve(num_events);
  *any_pad = false;
  for (const Buffer& b : problem.buffers) {
    if (!Tick(deadline)) return false;
    ForEachSegment(b, [&](const Segment& s) {
      std::uint64_t rounded;
      if (g == 1 || !internal::CheckedAlignUp(s.hi - s.lo, g, &rounded)) rounded = s.hi - s.lo;
      if (rounded == 0) return;
      const std::uint64_t pad = rounded - (s.hi - s.lo);
      events->push_back({2 * static_cast<std::uint64_t>(s.first_task), rounded, pad});
      events->push_back({2 * static_cast<std::uint64_t>(s.last_task) + 1, rounded, pad});
      *any_pad |= pad > 0;
    });
  }
  return internal::StableSortUntil(
      *events, [](const PeakEvent& a, const PeakEvent& b) { return a.key < b.key; }, deadline);
}

// PeakLiveBytes(problem) (alignment 1), its sort split so that the deadline
// is honoured on 10^6 buffers: the highest live bytes over the events, less
// the largest padding live.
bool WholePeak(const Problem& problem, internal::Deadline* deadline, std::uint64_t* peak) {
  const std::uint64_t g = PeakAlignment(problem, deadline);
  std::vector<PeakEvent> events;
  bool any_pad = false;
  if (g == 0 || !PeakEvents(problem, g, deadline, &events, &any_pad)) return false;
  internal::Uint128 live = 0, best = 0;
  std::multiset<std::uint64_t> pads;  // only used when some span is padded
  for (const PeakEvent& e : events) {
    if (!Tick(deadline)) return false;
    if (e.kind() == 0) {
      live += e.bytes;
      if (any_pad) pads.insert(e.pad);
      best = std::max(best, any_pad ? live - *pads.rbegin() : live);
    } else {
      live -= e.bytes;
      if (any_pad) pads.erase(pads.find(e.pad));
    }
  }
  *peak = best > internal::kMaxU64 ? internal::kMaxU64 : static_cast<std::uint64_t>(best);
  return true;
}

// What BuildInstance's steps share: the inputs, the instance being built
// and the partition's section boundaries.
struct InstanceBuild {
  const Problem& problem;
  const Group& group;
  const std::vector<std::size_t>& fixed;
  const std::vector<std::uint64_t>& alignment;
  internal::Deadline* deadline;
  Instance& inst;
  TaskIndex first = 0, last = 0;  // the partition's tasks
  // The gcd of the alignments behind the peak (as PeakLiveBytes of the
  // partition's buffers, its clipped obstacles and the base would count).
  std::uint64_t peak_g = 0;
  std::vector<Buffer> clipped_fixed;  // the fixed buffers live in [first, last], clipped to it
  std::vector<std::uint64_t> fixed_offset;
  std::vector<TaskIndex> bounds;  // section boundaries, sorted

  std::uint32_t Section(TaskIndex t) const {
    return static_cast<std::uint32_t>(std::lower_bound(bounds.begin(), bounds.end(), t) - bounds.begin());
  }
};

bool FindTasks(InstanceBuild& b) {
  const std::vector<Buffer>& buffers = b.problem.buffers;
  b.first = b.last = buffers[b.group.buffers.front()].first_task;
  for (std::size_t i : b.group.buffers) {
    if (!Tick(b.deadline)) return false;
    b.first = std::min(b.first, buffers[i].first_task);
    b.last = std::max(b.last, buffers[i].last_task);
  }
  return true;
}

// Folds a buffer's alignment (1 with a window gap) into peak_g.
void AddPeakAlignment(InstanceBuild& b, const Buffer& buffer) {
  b.peak_g = std::gcd(b.peak_g, std::max<std::uint64_t>(buffer.alignment, 1));
  for (const Gap& gap : buffer.gaps) b.peak_g = gap.has_window ? 1 : b.peak_g;
}

bool ClipFixed(InstanceBuild& b) {
  b.peak_g = b.inst.base > 0 ? 1 : 0;
  for (std::size_t f : b.fixed) {
    if (!Tick(b.deadline)) return false;
    Buffer c;
    if (ClipBuffer(b.problem.buffers[f], b.first, b.last, &c)) {
      b.inst.obstacle_buffers.push_back(f);
      AddPeakAlignment(b, c);
      b.clipped_fixed.push_back(std::move(c));
      b.fixed_offset.push_back(*b.problem.buffers[f].fixed_offset);
    }
  }
  return true;
}

// Sections: the spans between consecutive lifetime and segment boundaries.
bool CutSections(InstanceBuild& b) {
  b.bounds = {b.first, b.last + 1};
  b.bounds.reserve(2 * b.group.buffers.size() + 2);
  auto add_bounds = [&](const Segment& s) {
    b.bounds.push_back(s.first_task);
    b.bounds.push_back(s.last_task + 1);
  };
  for (std::size_t i : b.group.buffers) {
    if (!Tick(b.deadline)) return false;
    const Buffer& buffer = b.problem.buffers[i];
    b.bounds.push_back(buffer.first_task);
    b.bounds.push_back(buffer.last_task + 1);
    if (!buffer.gaps.empty()) ForEachSegment(buffer, add_bounds);
  }
  for (const Buffer& c : b.clipped_fixed) ForEachSegment(c, add_bounds);
  if (!internal::StableSortUntil(b.bounds, std::less<TaskIndex>(), b.deadline)) return false;
  b.bounds.erase(std::unique(b.bounds.begin(), b.bounds.end()), b.bounds.end());
  if (Expired(b.deadline)) return false;
  b.inst.section_start.assign(b.bounds.begin(), b.bounds.end() - 1);
  b.inst.num_sections = static_cast<std::uint32_t>(b.bounds.size() - 1);
  return true;
}

void AddObstacles(InstanceBuild& b) {
  for (std::size_t k = 0; k < b.clipped_fixed.size(); ++k)
    ForEachSegment(b.clipped_fixed[k], [&](const Segment& s) {
      b.inst.obstacles.push_back({b.Section(s.first_task), b.Section(s.last_task + 1), b.fixed_offset[k] + s.lo,
                                  b.fixed_offset[k] + s.hi});
    });
  BuildSectionObstacles(b.inst);
}

// The obstacles sharing a section with the item, each with the highest top
// of the item's pieces there, sorted by (lo, hi, obstacle).
void LinkObstacles(Instance& inst, Item& it) {
  it.obstacle_begin = static_cast<std::uint32_t>(inst.obstacle_refs.size());
  for (std::uint32_t o = 0; o < inst.obstacles.size(); ++o) {
    const Obstacle& ob = inst.obstacles[o];
    std::uint64_t reach = 0;
    bool shares = false;
    for (std::uint32_t p = it.piece_begin; p < it.piece_end; ++p) {
      const Piece& pc = inst.pieces[p];
      if (pc.begin < ob.end && ob.begin < pc.end) {
        shares = true;
        reach = std::max(reach, pc.hi);
      }
    }
    if (shares) inst.obstacle_refs.push_back({ob.lo, ob.hi, reach, o});
  }
  it.obstacle_end = static_cast<std::uint32_t>(inst.obstacle_refs.size());
  std::sort(inst.obstacle_refs.begin() + it.obstacle_begin, inst.obstacle_refs.end(),
            [](const ObstacleRef& l, const ObstacleRef& r) {
              return std::tie(l.lo, l.hi, l.obstacle) < std::tie(r.lo, r.hi, r.obstacle);
            });
}

// Buffer i as an item, its segments as pieces.
void AddItem(InstanceBuild& b, std::size_t i) {
  Instance& inst = b.inst;
  const Buffer& buffer = b.problem.buffers[i];
  AddPeakAlignment(b, buffer);
  Item it;
  it.buffer = i;
  it.alignment = b.alignment[i];
  inst.unit_alignment &= it.alignment == 1;
  it.first_section = b.Section(buffer.first_task);
  it.end_section = b.Section(buffer.last_task + 1);
  it.piece_begin = static_cast<std::uint32_t>(inst.pieces.size());
  ForEachSegment(buffer, [&](const Segment& s) {
    inst.pieces.push_back({b.Section(s.first_task), b.Section(s.last_task + 1), s.lo, s.hi});
    it.height = std::max(it.height, s.hi);
    inst.needs_general |= s.lo > 0;
  });
  it.piece_end = static_cast<std::uint32_t>(inst.pieces.size());
  const Piece& p0 = inst.pieces[it.piece_begin];
  it.plain = it.piece_end - it.piece_begin == 1 && p0.begin == it.first_section && p0.end == it.end_section &&
             p0.lo == 0;
  it.lifetime = buffer.last_task - buffer.first_task + 1;
  LinkObstacles(inst, it);
  inst.items.push_back(it);
}

bool AddItems(InstanceBuild& b) {
  b.inst.items.reserve(b.group.buffers.size());
  b.inst.pieces.reserve(b.group.buffers.size());  // exact without gaps
  for (std::size_t i : b.group.buffers) {
    if (!Tick(b.deadline, 1 + b.inst.obstacles.size())) return false;
    AddItem(b, i);
  }
  if (b.peak_g == 0) b.peak_g = 1;
  std::vector<TaskIndex>().swap(b.bounds);  // no longer needed
  return true;
}

// Identical items (same pieces and alignment) are interchangeable: each is
// placed only after the previous one, which removes their permutations.
// Items sorted by that key (ties in index order): an item's twin is the
// one before it in that order when their keys are equal.
bool FindTwins(Instance& inst, internal::Deadline* deadline) {
  auto cmp = [&](std::uint32_t a, std::uint32_t b) {  // <0, 0, >0
    const Item& x = inst.items[a];
    const Item& y = inst.items[b];
    const auto kx = std::make_tuple(x.alignment, x.first_section, x.end_section, x.piece_end - x.piece_begin);
    const auto ky = std::make_tuple(y.alignment, y.first_section, y.end_section, y.piece_end - y.piece_begin);
    if (kx != ky) return kx < ky ? -1 : 1;
    for (std::uint32_t p = x.piece_begin, q = y.piece_begin; p < x.piece_end; ++p, ++q) {
      const Piece& u = inst.pieces[p];
      const Piece& v = inst.pieces[q];
      const auto ku = std::make_tuple(u.begin, u.end, u.lo, u.hi);
      const auto kv = std::make_tuple(v.begin, v.end, v.lo, v.hi);
      if (ku != kv) return ku < kv ? -1 : 1;
    }
    return 0;
  };
  std::vector<std::uint32_t> idx(inst.items.size());
  std::iota(idx.begin(), idx.end(), 0u);
  if (!internal::StableSortUntil(idx, [&](std::uint32_t a, std::uint32_t b) { return cmp(a, b) < 0; }, deadline))
    return false;
  for (std::size_t k = 1; k < idx.size(); ++k) {
    if (!Tick(deadline)) return false;
    if (cmp(idx[k - 1], idx[k]) == 0) inst.items[idx[k]].twin = static_cast<std::int32_t>(idx[k - 1]);
  }
  return true;
}

// "Total": the highest live bytes during each item's lifetime. Loads by a
// difference array, maxima over spans by a bottom-up segment tree (2 x
// sections words, where a sparse table took log2(sections) x sections).
bool ComputeTotals(Instance& inst, internal::Deadline* deadline) {
  const std::uint32_t S = inst.num_sections;
  std::vector<internal::Uint128> diff(S + 1, 0);
  for (const Item& it : inst.items) {
    if (!Tick(deadline)) return false;
    for (std::uint32_t p = it.piece_begin; p < it.piece_end; ++p) {
      diff[inst.pieces[p].begin] += inst.pieces[p].hi;
      diff[inst.pieces[p].end] -= inst.pieces[p].hi;
    }
  }
  std::vector<std::uint64_t> tree(2 * std::size_t{S}, 0);
  internal::Uint128 run = 0;
  for (std::uint32_t q = 0; q < S; ++q) {
    run += diff[q];
    tree[S + q] = run > internal::kMaxU64 ? internal::kMaxU64 : static_cast<std::uint64_t>(run);
  }
  std::vector<internal::Uint128>().swap(diff);
  for (std::size_t v = S; v-- > 1;) tree[v] = std::max(tree[2 * v], tree[2 * v + 1]);
  for (Item& it : inst.items) {
    if (!Tick(deadline)) return false;
    std::uint64_t m = 0;
    for (std::size_t l = it.first_section + std::size_t{S}, r = it.end_section + std::size_t{S}; l < r;
         l >>= 1, r >>= 1) {
      if (l & 1) m = std::max(m, tree[l++]);
      if (r & 1) m = std::max(m, tree[--r]);
    }
    it.total = m;
  }
  return true;
}

// Lower bound: peak live bytes of the partition (with its obstacles and the
// base as one buffer under everything), and the lowest top of each item,
// rounded up to the granule (the minimum is a multiple of it; a saturated
// bound stays as it is).
bool BoundInstance(Instance& inst, std::uint64_t peak_g, internal::Deadline* deadline) {
  if (!SectionPeak(inst, peak_g, deadline, &inst.lower_bound)) return false;
  if (!inst.needs_general)
    for (const Item& it : inst.items) {
      if (!Tick(deadline, 1 + it.obstacle_end - it.obstacle_begin)) return false;
      inst.lower_bound =
          std::max(inst.lower_bound, internal::SaturatingAdd(LowestFreeOffset(inst, it, inst.base), it.height));
    }
  inst.granule = Granule(inst);
  inst.lower_bound = RoundUpTo(inst.lower_bound, inst.granule);
  return true;
}

// One partition's instance; false when the deadline passes.
bool BuildInstance(const Problem& problem, const Group& group, const std::vector<std::size_t>& fixed,
                   const std::vector<std::uint64_t>& alignment, CanonicalOrder order, internal::Deadline* deadline,
                   Instance* out) {
  *out = Instance{};
  out->base = group.base;
  InstanceBuild b{problem, group, fixed, alignment, deadline, *out};
  if (!FindTasks(b) || !ClipFixed(b) || !CutSections(b)) return false;
  AddObstacles(b);
  if (!AddItems(b) || !FindTwins(*out, deadline) || !ComputeTotals(*out, deadline) ||
      !AssignRanks(*out, order, deadline) || !BoundInstance(*out, b.peak_g, deadline))
    return false;
  return !Expired(deadline);
}

}  // namespace

void BuildSectionObstacles(Instance& inst) {
  inst.section_obstacle_begin.clear();
  inst.section_obstacle_lo.clear();
  inst.section_obstacle_hi.clear();
  std::uint64_t entries = 0;
  for (const Obstacle& ob : inst.obstacles) entries += ob.end - ob.begin;
  if (inst.obstacles.empty() || entries > (std::uint64_t{1} << 22)) return;
  const std::uint32_t S = inst.num_sections;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> per(S);
  for (const Obstacle& ob : inst.obstacles)
    for (std::uint32_t s = ob.begin; s < ob.end && s < S; ++s)
      if (ob.hi > ob.lo) per[s].push_back({ob.lo, ob.hi});
  inst.section_obstacle_begin.assign(S + 1, 0);
  std::vector<std::uint64_t>& lo = inst.section_obstacle_lo;
  std::vector<std::uint64_t>& hi = inst.section_obstacle_hi;
  for (std::uint32_t s = 0; s < S; ++s) {
    std::sort(per[s].begin(), per[s].end());
    for (const auto& [l, h] : per[s]) {
      if (lo.size() > inst.section_obstacle_begin[s] && l <= hi.back()) {
        hi.back() = std::max(hi.back(), h);  // merged: disjoint and sorted
      } else {
        lo.push_back(l);
        hi.push_back(h);
      }
    }
    inst.section_obstacle_begin[s + 1] = static_cast<std::uint32_t>(lo.size());
  }
}

std::uint64_t Granule(const Instance& inst) {
  if (inst.needs_general || inst.items.empty()) return 1;
  std::uint64_t g = inst.base;
  for (const Piece& p : inst.pieces) g = std::gcd(std::gcd(g, p.lo), p.hi);
  for (const Obstacle& o : inst.obstacles) g = std::gcd(std::gcd(g, o.lo), o.hi);
  if (g == 0) return 1;  // only zero bounds: cannot happen with items of positive size
  for (bool changed = true; changed;) {
    changed = false;
    for (const Item& it : inst.items) {
      const std::uint64_t a = it.alignment;
      if (a % g != 0 && g % a != 0) {
        g = std::gcd(g, a);
        changed = true;
      }
    }
  }
  return g;
}

std::uint64_t LowestFreeOffset(const Instance& inst, const Item& item, std::uint64_t from) {
  std::uint64_t p = AlignUpSat(from, item.alignment);
  for (std::uint32_t k = item.obstacle_begin; k < item.obstacle_end && p != UINT64_MAX; ++k) {
    const ObstacleRef& r = inst.obstacle_refs[k];
    if (p < r.hi && internal::SaturatingAdd(p, r.reach) > r.lo) p = AlignUpSat(r.hi, item.alignment);
  }
  return p;
}

namespace {

// What Presolve's steps share.
struct PresolveRun {
  const Problem& problem;
  const PresolveOptions& options;
  Presolved& out;
  std::vector<std::size_t> movable;  // neither fixed nor empty
  std::vector<std::size_t> fixed;    // fixed, with bytes
  std::deque<Group> work;            // partitions still to reduce or build
  internal::Deadline* deadline() const { return options.deadline; }
};

Status OutOfTime(const PresolveRun& run) {
  return DeadlineExceeded("the presolve of " + std::to_string(run.problem.buffers.size()) +
                          " buffers was stopped");
}

// Each buffer's effective alignment; fixed and empty buffers placed, the
// others movable.
Status SortBuffers(PresolveRun& run) {
  const Problem& problem = run.problem;
  Presolved& out = run.out;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (!Tick(run.deadline())) return OutOfTime(run);
    const Buffer& b = problem.buffers[i];
    std::uint64_t a;
    if (!internal::CheckedLcm(run.options.alignment, b.alignment, &a))
      return OutOfRange(BufferName(problem, i, run.options.caller_index) + ": the lcm of its alignment " +
                        std::to_string(b.alignment) + " and the global alignment " +
                        std::to_string(run.options.alignment) + " overflows 64 bits");
    out.effective_alignment[i] = a;
    if (b.fixed_offset && *b.fixed_offset % a != 0)
      return InvalidArgument(BufferName(problem, i, run.options.caller_index) + ": fixed offset " +
                             std::to_string(*b.fixed_offset) + " is not a multiple of the alignment " +
                             std::to_string(a));
    if (b.fixed_offset || b.size == 0) {
      const std::uint64_t off = b.fixed_offset.value_or(0);
      out.placed.push_back({i, off});
      if (b.size > 0) {
        run.fixed.push_back(i);
        out.placed_height = std::max(out.placed_height, off + b.size);  // checked by CheckProblem
      }
    } else {
      run.movable.push_back(i);
    }
  }
  return Status::Ok();
}

// Two fixed buffers that overlap make every plan invalid: sets out.conflict
// on the first pair. False when the deadline passes.
bool FindFixedConflict(PresolveRun& run) {
  struct Rect {
    TaskIndex first, last;
    std::uint64_t lo, hi;
    std::size_t buffer;
  };
  const Problem& problem = run.problem;
  std::vector<Rect> rects;
  for (std::size_t f : run.fixed) {
    if (!Tick(run.deadline())) return false;
    ForEachSegment(problem.buffers[f], [&](const Segment& s) {
      rects.push_back({s.first_task, s.last_task, *problem.buffers[f].fixed_offset + s.lo,
                       *problem.buffers[f].fixed_offset + s.hi, f});
    });
  }
  if (!internal::StableSortUntil(rects, [](const Rect& a, const Rect& b) { return a.first < b.first; },
                                 run.deadline()))
    return false;
  std::vector<const Rect*> active;
  for (const Rect& r : rects) {
    if (!Tick(run.deadline(), 1 + active.size())) return false;
    std::erase_if(active, [&](const Rect* a) { return a->last < r.first; });
    for (const Rect* a : active)
      if (a->buffer != r.buffer && a->lo < r.hi && r.lo < a->hi) {
        run.out.conflict = BufferName(problem, a->buffer, run.options.caller_index) + " and " +
                           BufferName(problem, r.buffer, run.options.caller_index) +
                           " have fixed offsets that overlap while both are live";
        run.out.conflict_buffers = {std::min(a->buffer, r.buffer), std::max(a->buffer, r.buffer)};
        return true;
      }
    active.push_back(&r);
  }
  return true;
}

// Queues `buffers` above `base`: each time group a partition when
// decomposing, else one. False when the deadline passes.
bool Queue(PresolveRun& run, std::vector<std::size_t> buffers, std::uint64_t base) {
  if (!run.options.decompose) {
    run.work.push_back({std::move(buffers), base});
    return true;
  }
  std::vector<std::vector<std::size_t>> groups;
  if (!TimeGroups(run.problem, buffers, run.deadline(), &groups)) return false;
  for (auto& g : groups) run.work.push_back({std::move(g), base});
  return true;
}

// The full-span reduction: puts the buffers spanning the whole partition
// (tasks [first, last]) at its bottom and queues the rest above them. The
// reduction moves whole buffers past each other: with a window that starts
// above its offset a buffer can be below another at one time and above it
// at another, so such partitions keep everything. Whether it took any
// buffer (the partition is then done); nullopt when the deadline passes.
std::optional<bool> ReduceFullSpans(PresolveRun& run, const Group& g, TaskIndex first, TaskIndex last) {
  const Problem& problem = run.problem;
  bool windows = false;
  for (std::size_t i : g.buffers)
    for (const Gap& gap : problem.buffers[i].gaps) windows |= gap.has_window && gap.window_lo > 0;
  if (windows) return false;
  std::uint64_t lcm = 1;
  bool ok = true;
  for (std::size_t i : g.buffers) ok = ok && internal::CheckedLcm(lcm, run.out.effective_alignment[i], &lcm);
  std::vector<std::size_t> rest;
  std::uint64_t base = g.base;
  for (std::size_t i : g.buffers) {
    const Buffer& b = problem.buffers[i];
    std::uint64_t top;
    if (ok && b.gaps.empty() && b.first_task <= first && b.last_task >= last && b.size % lcm == 0 &&
        internal::CheckedAdd(base, b.size, &top)) {
      run.out.placed.push_back({i, base});
      base = top;
      run.out.placed_height = std::max(run.out.placed_height, base);
    } else {
      rest.push_back(i);
    }
  }
  if (rest.size() == g.buffers.size()) return false;
  if (!rest.empty() && !Queue(run, std::move(rest), base)) return std::nullopt;
  return true;
}

// Each queued partition: reduced, or built into an instance. False when the
// deadline passes.
bool BuildPartitions(PresolveRun& run) {
  const Problem& problem = run.problem;
  while (!run.work.empty()) {
    Group g = std::move(run.work.front());
    run.work.pop_front();
    if (Expired(run.deadline())) return false;
    TaskIndex first = problem.buffers[g.buffers.front()].first_task, last = first;
    for (std::size_t i : g.buffers) {
      first = std::min(first, problem.buffers[i].first_task);
      last = std::max(last, problem.buffers[i].last_task);
    }
    std::vector<std::size_t> obstacles;
    for (std::size_t f : run.fixed)
      if (LifetimesOverlap(problem.buffers[f].first_task, problem.buffers[f].last_task, first, last))
        obstacles.push_back(f);
    if (run.options.full_span_reduction && obstacles.empty()) {
      const std::optional<bool> reduced = ReduceFullSpans(run, g, first, last);
      if (!reduced) return false;
      if (*reduced) continue;
    }
    run.out.instances.emplace_back();
    if (!BuildInstance(problem, g, obstacles, run.out.effective_alignment, run.options.order, run.deadline(),
                       &run.out.instances.back()))
      return false;
  }
  return true;
}

}  // namespace

Result<Presolved> Presolve(const Problem& problem, const PresolveOptions& options) {
  Presolved out;
  out.effective_alignment.resize(problem.buffers.size());
  PresolveRun run{problem, options, out};
  if (Expired(options.deadline)) return OutOfTime(run);
  TM_RETURN_IF_ERROR(SortBuffers(run));
  if (!FindFixedConflict(run)) return OutOfTime(run);
  if (!out.conflict.empty()) return out;
  if (!run.movable.empty() && !Queue(run, run.movable, 0)) return OutOfTime(run);
  if (!BuildPartitions(run) || !WholePeak(problem, options.deadline, &out.peak)) return OutOfTime(run);
  return out;
}

}  // namespace tensormem::solver
