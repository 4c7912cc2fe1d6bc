#include "solver/instance.h"

#include <algorithm>
#include <bit>
#include <deque>
#include <map>
#include <numeric>
#include <tuple>

#include "core/checked_math.h"
#include "tensormem/lower_bounds.h"

namespace tensormem::solver {
namespace {

std::string Name(const Problem& p, std::size_t i) {
  return "buffer " + std::to_string(i) + " (id '" + p.buffers[i].id + "')";
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

// Maximal groups of buffers whose lifetimes chain together (sorted input by
// first task); each group's buffers stay in index order.
std::vector<std::vector<std::size_t>> TimeGroups(const Problem& problem,
                                                 std::vector<std::size_t> buffers) {
  std::sort(buffers.begin(), buffers.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(problem.buffers[a].first_task, a) < std::tie(problem.buffers[b].first_task, b);
  });
  std::vector<std::vector<std::size_t>> groups;
  TaskIndex end = -1;
  for (std::size_t i : buffers) {
    const Buffer& b = problem.buffers[i];
    if (groups.empty() || b.first_task > end) {
      groups.emplace_back();
      end = b.last_task;
    } else {
      end = std::max(end, b.last_task);
    }
    groups.back().push_back(i);
  }
  for (auto& g : groups) std::sort(g.begin(), g.end());
  return groups;
}

struct Group {
  std::vector<std::size_t> buffers;  // index order
  std::uint64_t base = 0;
};

}  // namespace

void AssignRanks(Instance& inst, CanonicalOrder order) {
  std::vector<std::uint32_t> idx(inst.items.size());
  std::iota(idx.begin(), idx.end(), 0u);
  auto key = [&](std::uint32_t i) {
    const Item& it = inst.items[i];
    switch (order) {
      case CanonicalOrder::kLongestFirst:
        return std::make_tuple(-static_cast<double>(it.lifetime), -static_cast<double>(it.area),
                               -static_cast<double>(it.height));
      case CanonicalOrder::kLargestFirst:
        return std::make_tuple(-static_cast<double>(it.height), -static_cast<double>(it.lifetime),
                               -static_cast<double>(it.area));
      case CanonicalOrder::kAreaFirst:
        return std::make_tuple(-static_cast<double>(it.area), -static_cast<double>(it.lifetime),
                               -static_cast<double>(it.height));
      case CanonicalOrder::kTotalFirst:
        return std::make_tuple(-static_cast<double>(it.total), -static_cast<double>(it.lifetime),
                               -static_cast<double>(it.height));
    }
    return std::make_tuple(0.0, 0.0, 0.0);
  };
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  for (std::uint32_t r = 0; r < idx.size(); ++r) inst.items[idx[r]].rank = r;
}

namespace {

Instance BuildInstance(const Problem& problem, const Group& group,
                       const std::vector<std::size_t>& fixed,
                       const std::vector<std::uint64_t>& alignment, CanonicalOrder order) {
  Instance inst;
  inst.base = group.base;
  TaskIndex gfirst = problem.buffers[group.buffers.front()].first_task, glast = gfirst;
  for (std::size_t i : group.buffers) {
    gfirst = std::min(gfirst, problem.buffers[i].first_task);
    glast = std::max(glast, problem.buffers[i].last_task);
  }
  std::vector<Buffer> clipped_fixed;
  std::vector<std::uint64_t> fixed_offset;
  for (std::size_t f : fixed) {
    Buffer c;
    if (ClipBuffer(problem.buffers[f], gfirst, glast, &c)) {
      inst.obstacle_buffers.push_back(f);
      clipped_fixed.push_back(std::move(c));
      fixed_offset.push_back(*problem.buffers[f].fixed_offset);
    }
  }

  std::vector<TaskIndex> bounds{gfirst, glast + 1};
  for (std::size_t i : group.buffers) {
    const Buffer& b = problem.buffers[i];
    bounds.push_back(b.first_task);
    bounds.push_back(b.last_task + 1);
    for (const Segment& s : Occupancy(b)) {
      bounds.push_back(s.first_task);
      bounds.push_back(s.last_task + 1);
    }
  }
  for (const Buffer& c : clipped_fixed)
    for (const Segment& s : Occupancy(c)) {
      bounds.push_back(s.first_task);
      bounds.push_back(s.last_task + 1);
    }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  inst.section_start.assign(bounds.begin(), bounds.end() - 1);
  inst.num_sections = static_cast<std::uint32_t>(bounds.size() - 1);
  auto sec = [&](TaskIndex t) {
    return static_cast<std::uint32_t>(std::lower_bound(bounds.begin(), bounds.end(), t) -
                                      bounds.begin());
  };

  for (std::size_t k = 0; k < clipped_fixed.size(); ++k)
    for (const Segment& s : Occupancy(clipped_fixed[k]))
      inst.obstacles.push_back(
          {sec(s.first_task), sec(s.last_task + 1), fixed_offset[k] + s.lo, fixed_offset[k] + s.hi});

  for (std::size_t i : group.buffers) {
    const Buffer& b = problem.buffers[i];
    Item it;
    it.buffer = i;
    it.alignment = alignment[i];
    inst.unit_alignment &= it.alignment == 1;
    it.first_section = sec(b.first_task);
    it.end_section = sec(b.last_task + 1);
    it.piece_begin = static_cast<std::uint32_t>(inst.pieces.size());
    for (const Segment& s : Occupancy(b)) {
      inst.pieces.push_back({sec(s.first_task), sec(s.last_task + 1), s.lo, s.hi});
      it.height = std::max(it.height, s.hi);
      inst.needs_general |= s.lo > 0;
    }
    it.piece_end = static_cast<std::uint32_t>(inst.pieces.size());
    const Piece& p0 = inst.pieces[it.piece_begin];
    it.plain = it.piece_end - it.piece_begin == 1 && p0.begin == it.first_section &&
               p0.end == it.end_section && p0.lo == 0;
    it.lifetime = b.last_task - b.first_task + 1;
    it.area = internal::SaturatingMul(it.height, static_cast<std::uint64_t>(it.lifetime));
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
              [](const ObstacleRef& l, const ObstacleRef& r) { return l.lo < r.lo; });
    inst.items.push_back(it);
  }

  // Identical items (same pieces and alignment) are interchangeable: each is
  // placed only after the previous one, which removes their permutations.
  std::map<std::vector<std::uint64_t>, std::int32_t> seen;
  for (std::size_t k = 0; k < inst.items.size(); ++k) {
    Item& it = inst.items[k];
    std::vector<std::uint64_t> key{it.alignment, it.first_section, it.end_section};
    for (std::uint32_t p = it.piece_begin; p < it.piece_end; ++p) {
      const Piece& pc = inst.pieces[p];
      key.insert(key.end(), {pc.begin, pc.end, pc.lo, pc.hi});
    }
    auto [pos, inserted] = seen.try_emplace(std::move(key), static_cast<std::int32_t>(k));
    if (!inserted) {
      it.twin = pos->second;
      pos->second = static_cast<std::int32_t>(k);
    }
  }
  // "Total": the highest live bytes during each item's lifetime. Loads by a
  // difference array, maxima over spans by a sparse table: O((n + S) log S)
  // even when lifetimes are long.
  {
    const std::uint32_t S = inst.num_sections;
    std::vector<internal::Uint128> diff(S + 1, 0);
    for (const Item& it : inst.items)
      for (std::uint32_t p = it.piece_begin; p < it.piece_end; ++p) {
        diff[inst.pieces[p].begin] += inst.pieces[p].hi;
        diff[inst.pieces[p].end] -= inst.pieces[p].hi;
      }
    std::vector<std::vector<std::uint64_t>> table(1, std::vector<std::uint64_t>(S));
    internal::Uint128 run = 0;
    for (std::uint32_t q = 0; q < S; ++q) {
      run += diff[q];
      table[0][q] = run > internal::kMaxU64 ? internal::kMaxU64 : static_cast<std::uint64_t>(run);
    }
    for (std::uint32_t w = 1; (std::uint32_t{1} << w) <= S; ++w) {
      const std::vector<std::uint64_t>& prev = table.back();
      std::vector<std::uint64_t> next(S - (std::uint32_t{1} << w) + 1);
      for (std::uint32_t q = 0; q < next.size(); ++q)
        next[q] = std::max(prev[q], prev[q + (std::uint32_t{1} << (w - 1))]);
      table.push_back(std::move(next));
    }
    for (Item& it : inst.items) {
      const std::uint32_t len = it.end_section - it.first_section;
      const std::uint32_t w = static_cast<std::uint32_t>(std::bit_width(len) - 1);
      it.total = std::max(table[w][it.first_section], table[w][it.end_section - (std::uint32_t{1} << w)]);
    }
  }
  AssignRanks(inst, order);

  // Lower bound: peak live bytes of the partition (with its obstacles and
  // the base as one buffer under everything), and the lowest top of each item.
  Problem sub;
  for (std::size_t i : group.buffers) sub.buffers.push_back(problem.buffers[i]);
  for (Buffer& c : clipped_fixed) sub.buffers.push_back(std::move(c));
  if (inst.base > 0) {
    Buffer base;
    base.size = inst.base;
    base.first_task = gfirst;
    base.last_task = glast;
    sub.buffers.push_back(std::move(base));
  }
  for (Buffer& b : sub.buffers) b.fixed_offset.reset();
  inst.lower_bound = PeakLiveBytes(sub);
  if (!inst.needs_general)
    for (const Item& it : inst.items)
      inst.lower_bound = std::max(
          inst.lower_bound,
          internal::SaturatingAdd(LowestFreeOffset(inst, it, inst.base), it.height));
  inst.granule = Granule(inst);
  // The minimum is a multiple of the granule (when the bound saturated, it
  // stays as it is).
  inst.lower_bound = RoundUpTo(inst.lower_bound, inst.granule);
  return inst;
}

}  // namespace

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

Result<Presolved> Presolve(const Problem& problem, const PresolveOptions& options) {
  Presolved out;
  const std::size_t n = problem.buffers.size();
  out.effective_alignment.resize(n);
  std::vector<std::size_t> movable, fixed;
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    std::uint64_t a;
    if (!internal::CheckedLcm(options.alignment, b.alignment, &a))
      return OutOfRange(Name(problem, i) + ": the lcm of its alignment " +
                        std::to_string(b.alignment) + " and the global alignment " +
                        std::to_string(options.alignment) + " overflows 64 bits");
    out.effective_alignment[i] = a;
    if (b.fixed_offset && *b.fixed_offset % a != 0)
      return InvalidArgument(Name(problem, i) + ": fixed offset " +
                             std::to_string(*b.fixed_offset) +
                             " is not a multiple of the alignment " + std::to_string(a));
    if (b.fixed_offset || b.size == 0) {
      const std::uint64_t off = b.fixed_offset.value_or(0);
      out.placed.push_back({i, off});
      if (b.size > 0) {
        fixed.push_back(i);
        out.placed_height = std::max(out.placed_height, off + b.size);  // checked by CheckProblem
      }
    } else {
      movable.push_back(i);
    }
  }

  // Two fixed buffers that overlap make every plan invalid.
  {
    struct Rect {
      TaskIndex first, last;
      std::uint64_t lo, hi;
      std::size_t buffer;
    };
    std::vector<Rect> rects;
    for (std::size_t f : fixed)
      for (const Segment& s : Occupancy(problem.buffers[f]))
        rects.push_back({s.first_task, s.last_task, *problem.buffers[f].fixed_offset + s.lo,
                         *problem.buffers[f].fixed_offset + s.hi, f});
    std::sort(rects.begin(), rects.end(),
              [](const Rect& a, const Rect& b) { return a.first < b.first; });
    std::vector<const Rect*> active;
    for (const Rect& r : rects) {
      std::erase_if(active, [&](const Rect* a) { return a->last < r.first; });
      for (const Rect* a : active)
        if (a->buffer != r.buffer && a->lo < r.hi && r.lo < a->hi) {
          out.conflict = Name(problem, a->buffer) + " and " + Name(problem, r.buffer) +
                         " have fixed offsets that overlap while both are live";
          out.conflict_buffers = {std::min(a->buffer, r.buffer), std::max(a->buffer, r.buffer)};
          return out;
        }
      active.push_back(&r);
    }
  }

  std::deque<Group> work;
  if (!movable.empty()) {
    if (options.decompose) {
      for (auto& g : TimeGroups(problem, movable)) work.push_back({std::move(g), 0});
    } else {
      work.push_back({movable, 0});
    }
  }
  while (!work.empty()) {
    Group g = std::move(work.front());
    work.pop_front();
    TaskIndex gfirst = problem.buffers[g.buffers.front()].first_task, glast = gfirst;
    for (std::size_t i : g.buffers) {
      gfirst = std::min(gfirst, problem.buffers[i].first_task);
      glast = std::max(glast, problem.buffers[i].last_task);
    }
    std::vector<std::size_t> obstacles;
    for (std::size_t f : fixed)
      if (LifetimesOverlap(problem.buffers[f].first_task, problem.buffers[f].last_task, gfirst,
                           glast))
        obstacles.push_back(f);

    // The reduction moves whole buffers past each other: with a window that
    // starts above its offset a buffer can be below another at one time and
    // above it at another, so such partitions keep everything.
    bool windows = false;
    for (std::size_t i : g.buffers)
      for (const Gap& gap : problem.buffers[i].gaps) windows |= gap.has_window && gap.window_lo > 0;
    if (options.full_span_reduction && obstacles.empty() && !windows) {
      std::uint64_t lcm = 1;
      bool ok = true;
      for (std::size_t i : g.buffers) ok = ok && internal::CheckedLcm(lcm, out.effective_alignment[i], &lcm);
      std::vector<std::size_t> rest;
      std::uint64_t base = g.base;
      for (std::size_t i : g.buffers) {
        const Buffer& b = problem.buffers[i];
        std::uint64_t top;
        if (ok && b.gaps.empty() && b.first_task <= gfirst && b.last_task >= glast &&
            b.size % lcm == 0 && internal::CheckedAdd(base, b.size, &top)) {
          out.placed.push_back({i, base});
          base = top;
          out.placed_height = std::max(out.placed_height, base);
        } else {
          rest.push_back(i);
        }
      }
      if (rest.size() != g.buffers.size()) {
        if (rest.empty()) continue;
        if (options.decompose) {
          for (auto& sub : TimeGroups(problem, rest)) work.push_back({std::move(sub), base});
        } else {
          work.push_back({std::move(rest), base});
        }
        continue;
      }
    }
    out.instances.push_back(
        BuildInstance(problem, g, obstacles, out.effective_alignment, options.order));
  }
  return out;
}

}  // namespace tensormem::solver
