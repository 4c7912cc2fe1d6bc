#include "planning/offsets/best_fit.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "planning/interval_index.h"

namespace tensormem::planning {
namespace {

using internal::CheckedAdd;
using internal::CheckedAlignUp;
using internal::kMaxU64;

Status ArenaOverflow(const Buffer& b) {
  return OutOfRange("placing buffer '" + b.id + "' of " + std::to_string(b.size) +
                    " bytes overflows a 64-bit arena");
}

// Chooses the offset from the forbidden intervals [A, B) (sorted by A),
// mirroring SimpleMemoryArena::Allocate in offset space: a free stretch
// [cur, A) is a candidate when its aligned start is below A; the stretch is
// compared by (A - aligned start) against the best unaligned length so far.
bool ChooseOffset(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& forbidden,
                  std::uint64_t alignment, std::uint64_t* out) {
  std::uint64_t cur = 0;
  std::uint64_t best = kMaxU64, best_fit = kMaxU64;
  bool found = false;
  for (const auto& [a, b] : forbidden) {
    if (a > cur) {
      std::uint64_t aligned;
      if (CheckedAlignUp(cur, alignment, &aligned) && aligned < a && a - aligned < best_fit) {
        best = aligned;
        best_fit = a - cur;
        found = true;
      }
    }
    cur = std::max(cur, b);
  }
  if (found) {
    *out = best;
    return true;
  }
  return CheckedAlignUp(cur, alignment, out);
}

// What a query needs of a placed buffer, stored in the index itself.
struct Placed {
  std::uint64_t offset, size;
  std::uint32_t tensor;
  bool has_gaps;
};

Segment WholeOf(const Buffer& b) { return {b.first_task, b.last_task, 0, b.size}; }

// The offsets at which buffer j would share a byte with placed buffer i
// during a task where both occupy memory, one interval per pair of
// overlapping segments: j at x overlaps segment si iff
// oi + si.lo - sj.hi < x < oi + si.hi - sj.lo.
using Interval = std::pair<std::uint64_t, std::uint64_t>;

// The occupancy segments of the buffers with gaps, in one flat array
// (begin[i], begin[i + 1]): 4 bytes a buffer where a vector each took 24.
struct GapSegments {
  std::vector<std::uint32_t> begin;
  std::vector<Segment> flat;
  std::span<const Segment> Of(std::size_t i) const {
    return std::span<const Segment>(flat.data() + begin[i], begin[i + 1] - begin[i]);
  }
};

void AddForbidden(const Problem& problem, const GapSegments& segments,
                  const Placed& pi, std::size_t j, std::vector<Interval>* forbidden) {
  const Buffer& bi = problem.buffers[pi.tensor];
  const Buffer& bj = problem.buffers[j];
  const Segment whole_i = WholeOf(bi), whole_j = WholeOf(bj);
  std::span<const Segment> segs_i =
      bi.gaps.empty() ? std::span<const Segment>(&whole_i, 1) : segments.Of(pi.tensor);
  std::span<const Segment> segs_j =
      bj.gaps.empty() ? std::span<const Segment>(&whole_j, 1) : segments.Of(j);
  for (const Segment& si : segs_i)
    for (const Segment& sj : segs_j) {
      if (!LifetimesOverlap(si.first_task, si.last_task, sj.first_task, sj.last_task)) continue;
      const std::uint64_t top = pi.offset + si.hi;  // no overflow: checked on placement
      if (top <= sj.lo) continue;
      const std::uint64_t low = pi.offset + si.lo + 1;
      forbidden->emplace_back(low > sj.hi ? low - sj.hi : 0, top - sj.lo);
    }
}

// Sorts forbidden intervals by start. Busy tasks (10^3 live buffers, as in
// training traces) make this the hot spot, so large sets take an LSD radix
// sort over the bytes in which the starts differ.
void SortByStart(std::vector<Interval>* v, std::vector<Interval>* scratch) {
  if (v->size() < 96) {
    std::sort(v->begin(), v->end(), [](const Interval& a, const Interval& b) { return a.first < b.first; });
    return;
  }
  std::uint64_t all_or = 0, all_and = ~std::uint64_t{0};
  for (const Interval& x : *v) {
    all_or |= x.first;
    all_and &= x.first;
  }
  const std::uint64_t varying = all_or ^ all_and;
  scratch->resize(v->size());
  for (int shift = 0; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xff) == 0) continue;
    std::size_t count[257] = {};
    for (const Interval& x : *v) ++count[((x.first >> shift) & 0xff) + 1];
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (const Interval& x : *v) (*scratch)[count[(x.first >> shift) & 0xff]++] = x;
    v->swap(*scratch);
  }
}

}  // namespace

Status PlacementDeadline(const internal::Deadline& deadline, std::size_t placed, std::size_t total) {
  return DeadlineExceeded(deadline.Why() + " was reached after placing " + std::to_string(placed) +
                          " of " + std::to_string(total) + " buffers");
}

Result<OffsetsPlan> PlaceBestFit(const Problem& problem, std::span<const std::size_t> order,
                                 std::uint64_t alignment, internal::Deadline* deadline) {
  const std::size_t n = problem.buffers.size();
  OffsetsPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<TaskIndex> firsts(n), lasts(n);
  GapSegments segments;  // only buffers with gaps have any
  segments.begin.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    firsts[i] = b.first_task;
    lasts[i] = b.last_task;
    if (!b.gaps.empty()) {
      const std::vector<Segment> occ = Occupancy(b);
      segments.flat.insert(segments.flat.end(), occ.begin(), occ.end());
    }
    if (segments.flat.size() > UINT32_MAX) return OutOfRange("too many occupancy segments");
    segments.begin[i + 1] = static_cast<std::uint32_t>(segments.flat.size());
  }
  StabIndex<Placed> placed(firsts, lasts, deadline);
  if (!placed.complete()) return PlacementDeadline(*deadline, 0, n);
  for (std::size_t i = 0; i < n; ++i) {  // fixed offsets first, as given
    const Buffer& b = problem.buffers[i];
    if (!b.fixed_offset) continue;
    std::uint64_t end;
    if (!CheckedAdd(*b.fixed_offset, b.size, &end)) return ArenaOverflow(b);
    plan.offsets[i] = *b.fixed_offset;
    if (b.size == 0) continue;
    plan.total = std::max(plan.total, end);
    placed.Insert(i, {*b.fixed_offset, b.size, static_cast<std::uint32_t>(i), !b.gaps.empty()});
  }

  // What the loop needs of each buffer, gathered in placement order so the
  // hot loop reads memory sequentially.
  struct Job {
    std::uint64_t size, align;
    StabIndex<Placed>::Ranks ranks;
    std::uint32_t tensor;
    bool plain;
  };
  std::vector<Job> jobs;
  jobs.reserve(order.size());
  for (std::size_t j : order) {
    const Buffer& bj = problem.buffers[j];
    if (bj.fixed_offset || bj.size == 0) continue;  // placed already / occupies nothing
    std::uint64_t align;
    if (!internal::CheckedLcm(alignment, bj.alignment, &align)) return ArenaOverflow(bj);
    jobs.push_back({bj.size, align, placed.RanksOf(j), static_cast<std::uint32_t>(j), bj.gaps.empty()});
  }

  std::vector<Interval> forbidden, sort_scratch;
  // Plain pairs (the common case) go to a buffer large enough for every
  // placed buffer (a query visits each at most once), written without
  // capacity checks.
  std::vector<Interval> plain_forbidden(n);
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const Job& job = jobs[k];
    const std::size_t j = job.tensor;
    forbidden.clear();
    if (job.plain) {
      Interval* out = plain_forbidden.data();
      const std::uint64_t size = job.size;
      placed.ForEachOverlapping(job.ranks, [&](const Placed& pi) {
        if (pi.has_gaps) return AddForbidden(problem, segments, pi, j, &forbidden);
        const std::uint64_t low = pi.offset + 1;
        *out++ = {low > size ? low - size : 0, pi.offset + pi.size};
      });
      forbidden.insert(forbidden.end(), plain_forbidden.data(), out);
    } else {
      placed.ForEachOverlapping(job.ranks, [&](const Placed& pi) {
        AddForbidden(problem, segments, pi, j, &forbidden);
      });
    }
    // Dense inputs make one placement cost as much as the conflicts it sees.
    if (deadline && !deadline->Tick(1 + forbidden.size())) return PlacementDeadline(*deadline, k, jobs.size());
    SortByStart(&forbidden, &sort_scratch);
    std::uint64_t x;
    std::uint64_t end;
    if (!ChooseOffset(forbidden, job.align, &x) || !CheckedAdd(x, job.size, &end))
      return ArenaOverflow(problem.buffers[j]);
    plan.offsets[j] = x;
    plan.total = std::max(plan.total, end);
    placed.Insert(j, {x, job.size, job.tensor, !job.plain});
  }
  return plan;
}

Result<OffsetsPlan> PlaceBestFitReference(std::span<const UsageRecord> records,
                                          std::span<const std::size_t> order,
                                          std::uint64_t alignment, internal::Deadline* deadline) {
  OffsetsPlan plan;
  plan.offsets.assign(records.size(), 0);
  std::vector<std::size_t> active;  // placed tensors ordered by offset
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t idx = order[k];
    if (deadline && !deadline->Tick(1 + active.size())) return PlacementDeadline(*deadline, k, order.size());
    const UsageRecord& rec = records[idx];
    if (rec.size == 0) continue;
    std::uint64_t best_offset = kMaxU64, best_offset_fit = kMaxU64, current_offset = 0;
    for (std::size_t a : active) {
      const UsageRecord& alloc = records[a];
      if (alloc.last_task < rec.first_task || alloc.first_task > rec.last_task) continue;
      const std::uint64_t alloc_offset = plan.offsets[a];
      std::uint64_t aligned_current_offset, end;
      if (CheckedAlignUp(current_offset, alignment, &aligned_current_offset) &&
          CheckedAdd(aligned_current_offset, rec.size, &end) && end <= alloc_offset &&
          alloc_offset - aligned_current_offset < best_offset_fit) {
        best_offset = aligned_current_offset;
        best_offset_fit = alloc_offset - current_offset;
      }
      current_offset = std::max(current_offset, alloc_offset + alloc.size);
      if (best_offset_fit == 0) break;
    }
    if (best_offset == kMaxU64 && !CheckedAlignUp(current_offset, alignment, &best_offset))
      return OutOfRange("placing tensor " + std::to_string(idx) + " overflows a 64-bit arena");
    std::uint64_t end;
    if (!CheckedAdd(best_offset, rec.size, &end))
      return OutOfRange("placing tensor " + std::to_string(idx) + " overflows a 64-bit arena");
    plan.offsets[idx] = best_offset;
    plan.total = std::max(plan.total, end);
    auto pos = std::upper_bound(active.begin(), active.end(), best_offset,
                                [&](std::uint64_t off, std::size_t a) { return off < plan.offsets[a]; });
    active.insert(pos, idx);
  }
  return plan;
}

}  // namespace tensormem::planning
