// SPDX-License-Identifier: Apache-2.0
#include "planning/offsets/best_fit.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <type_traits>
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

// The alignment buffer b's offset takes: the arena's and its own (a power of
// two, as CheckProblem makes every buffer's).
Status BufferAlignment(std::uint64_t alignment, const Buffer& b, std::uint64_t* out) {
  if (!internal::CheckedLcm(alignment, b.alignment, out)) return ArenaOverflow(b);
  if (!std::has_single_bit(*out))
    return InvalidArgument("alignment " + std::to_string(*out) + " is not a power of two");
  return Status::Ok();
}

// Chooses the offset from the forbidden intervals [A, B) (sorted by A),
// mirroring SimpleMemoryArena::Allocate in offset space: a free stretch
// [cur, A) is a candidate when its aligned start is below A; the stretch is
// compared by (A - aligned start) against the best unaligned length so far.
bool ChooseOffset(std::span<const std::pair<std::uint64_t, std::uint64_t>> forbidden,
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

// What a query needs of a placed buffer, stored in the index itself (a few
// entries per buffer). Problems with gaps need the buffer itself
// (its segments); plain ones only its bytes, in 16 bytes instead of 24
// (at 3 x 10^5 buffers, 10 MB less).
struct Placed {
  std::uint64_t offset, size;
  std::uint32_t tensor;
  bool has_gaps;
  static Placed Of(std::uint64_t offset, std::uint64_t size, std::size_t tensor, bool has_gaps) {
    return {offset, size, static_cast<std::uint32_t>(tensor), has_gaps};
  }
};
struct PlacedPlain {
  std::uint64_t offset, size;
  static PlacedPlain Of(std::uint64_t offset, std::uint64_t size, std::size_t, bool) {
    return {offset, size};
  }
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

void AddForbidden(const Problem& problem, const GapSegments& segments, std::size_t i,
                  std::uint64_t offset_i, std::size_t j, std::vector<Interval>* forbidden) {
  const Buffer& bi = problem.buffers[i];
  const Buffer& bj = problem.buffers[j];
  const Segment whole_i = WholeOf(bi), whole_j = WholeOf(bj);
  std::span<const Segment> segs_i =
      bi.gaps.empty() ? std::span<const Segment>(&whole_i, 1) : segments.Of(i);
  std::span<const Segment> segs_j =
      bj.gaps.empty() ? std::span<const Segment>(&whole_j, 1) : segments.Of(j);
  for (const Segment& si : segs_i)
    for (const Segment& sj : segs_j) {
      if (!LifetimesOverlap(si.first_task, si.last_task, sj.first_task, sj.last_task)) continue;
      const std::uint64_t top = offset_i + si.hi;  // no overflow: checked on placement
      if (top <= sj.lo) continue;
      const std::uint64_t low = offset_i + si.lo + 1;
      forbidden->emplace_back(low > sj.hi ? low - sj.hi : 0, top - sj.lo);
    }
}

// Sorts forbidden intervals v[0, n) by start; returns where the sorted ones
// are (v, or scratch's data). Busy tasks (10^3 live buffers, as in training
// traces) make this the hot spot, so large sets take an LSD radix sort over
// the bytes in which the starts differ. Only the set matters to
// ChooseOffset, so stability does not.
// `scratch` is grown to `capacity` (>= n, the caller's own buffer size)
// without copying its old contents, so it follows the caller's doubling.
const Interval* SortByStart(Interval* v, std::size_t n, std::size_t capacity,
                            std::vector<Interval>* scratch) {
  if (n < 96 || n > UINT32_MAX) {
    std::sort(v, v + n, [](const Interval& a, const Interval& b) { return a.first < b.first; });
    return v;
  }
  std::uint64_t all_or = 0, all_and = ~std::uint64_t{0};
  for (std::size_t i = 0; i < n; ++i) {
    all_or |= v[i].first;
    all_and &= v[i].first;
  }
  const std::uint64_t varying = all_or ^ all_and;
  if (varying == 0) return v;
  if (scratch->size() < n) {
    *scratch = std::vector<Interval>();  // freed before the larger one is taken
    scratch->resize(std::max(n, capacity));
  }
  // Digits of 8 bits from the lowest varying bit (offsets share their low
  // bits: sizes are multiples of a granule), all digits counted in one read
  // of the keys. Each pass moves the keys two at a time, the first half
  // forwards from each bucket's start and the second half backwards from
  // its end (still stable): one cursor per key stalls on the chain of bumps
  // to a popular bucket's cursor, two make two independent chains.
  const int low = std::countr_zero(varying);
  const int digits = (std::bit_width(varying) - low + 7) / 8;
  std::uint32_t count[8][257];
  std::fill(&count[0][0], &count[0][0] + 257 * digits, 0u);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t key = v[i].first >> low;
    for (int d = 0; d < digits; ++d) ++count[d][((key >> (8 * d)) & 0xff) + 1];
  }
  const std::size_t half = n / 2;
  Interval* from = v;
  Interval* to = scratch->data();
  for (int d = 0; d < digits; ++d) {
    const int shift = low + 8 * d;
    if (((varying >> shift) & 0xff) == 0) continue;  // a byte no two keys differ in
    std::uint32_t* start = count[d];  // bucket k: [start[k], start[k + 1])
    for (int k = 0; k < 256; ++k) start[k + 1] += start[k];
    std::uint32_t end[256];
    std::copy(start + 1, start + 257, end);
    for (std::size_t i = 0; i < half; ++i) {
      const Interval x = from[i], y = from[n - 1 - i];
      to[start[(x.first >> shift) & 0xff]++] = x;
      to[--end[(y.first >> shift) & 0xff]] = y;
    }
    if (n % 2 != 0) to[start[(from[half].first >> shift) & 0xff]++] = from[half];
    std::swap(from, to);
  }
  return from;
}

}  // namespace

Status PlacementDeadline(const internal::Deadline& deadline, std::size_t placed, std::size_t total) {
  return DeadlineExceeded(deadline.Why() + " was reached after placing " + std::to_string(placed) +
                          " of " + std::to_string(total) + " buffers");
}

namespace {

// What the placement loop needs of each buffer, gathered in placement order
// so the hot loop reads memory sequentially, in 16 bytes (its ranks are read
// from the index; alignments are powers of two, CheckProblem).
struct Job {
  std::uint64_t size;
  std::uint32_t tensor;
  std::uint8_t align_log2;
  bool plain;
};

// A query's forbidden intervals, in a buffer that doubles when a query fills
// it (not n intervals up front: megabytes few queries need).
class ForbiddenIntervals {
 public:
  explicit ForbiddenIntervals(std::size_t n) : buffer_(std::min<std::size_t>(std::max<std::size_t>(n, 1), 4096)) {}
  void Clear() {
    out_ = buffer_.data();
    end_ = out_ + buffer_.size();
  }
  void Push(const Interval& iv) {
    if (out_ == end_) Grow();
    *out_++ = iv;
  }
  Interval* data() { return buffer_.data(); }
  std::size_t size() const { return static_cast<std::size_t>(out_ - buffer_.data()); }
  std::size_t capacity() const { return buffer_.size(); }

 private:
  void Grow() {
    const std::size_t used = size();
    buffer_.resize(2 * buffer_.size());
    out_ = buffer_.data() + used;
    end_ = buffer_.data() + buffer_.size();
  }
  std::vector<Interval> buffer_;
  Interval* out_ = nullptr;
  Interval* end_ = nullptr;
};

// Best fit in a given order over a stabbing index of the placed buffers
// (Payload: Placed when some buffer has gaps, else PlacedPlain): the steps
// of PlaceBestFitWith over the state they share.
template <typename Payload>
class BestFit {
 public:
  static constexpr bool kPlain = std::is_same_v<Payload, PlacedPlain>;

  BestFit(const Problem& problem, internal::Deadline* deadline)
      : problem_(problem), deadline_(deadline), forbidden_(problem.buffers.size()) {
    plan_.offsets.assign(problem.buffers.size(), 0);
  }

  // The occupancy segments of the buffers with gaps (none for PlacedPlain).
  Status CollectGapSegments() {
    if constexpr (!kPlain) {
      const std::size_t n = problem_.buffers.size();
      segments_.begin.assign(n + 1, 0);
      for (std::size_t i = 0; i < n; ++i) {
        const Buffer& b = problem_.buffers[i];
        if (!b.gaps.empty()) {
          const std::vector<Segment> occ = Occupancy(b);
          segments_.flat.insert(segments_.flat.end(), occ.begin(), occ.end());
        }
        if (segments_.flat.size() > UINT32_MAX) return OutOfRange("too many occupancy segments");
        segments_.begin[i + 1] = static_cast<std::uint32_t>(segments_.flat.size());
      }
    }
    return Status::Ok();
  }

  Status BuildIndex() {
    const std::size_t n = problem_.buffers.size();
    {
      // The lifetimes are copied for the index's build only.
      std::vector<TaskIndex> firsts(n), lasts(n);
      for (std::size_t i = 0; i < n; ++i) {
        firsts[i] = problem_.buffers[i].first_task;
        lasts[i] = problem_.buffers[i].last_task;
      }
      index_.emplace(firsts, lasts, deadline_);
    }
    if (index_->too_large()) return OutOfRange("too many buffers for the best-fit index");
    if (!index_->complete()) return PlacementDeadline(*deadline_, 0, n);
    return Status::Ok();
  }

  // Fixed offsets first, as given.
  Status PlaceFixedOffsets() {
    for (std::size_t i = 0; i < problem_.buffers.size(); ++i) {
      const Buffer& b = problem_.buffers[i];
      if (!b.fixed_offset) continue;
      std::uint64_t end;
      if (!CheckedAdd(*b.fixed_offset, b.size, &end)) return ArenaOverflow(b);
      plan_.offsets[i] = *b.fixed_offset;
      if (b.size == 0) continue;
      plan_.total = std::max(plan_.total, end);
      index_->Insert(i, Payload::Of(*b.fixed_offset, b.size, i, !b.gaps.empty()));
    }
    return Status::Ok();
  }

  // The buffers left to place, in `order`.
  Status GatherJobs(std::span<const std::size_t> order, std::uint64_t alignment) {
    jobs_.reserve(order.size());
    for (std::size_t j : order) {
      const Buffer& bj = problem_.buffers[j];
      if (bj.fixed_offset || bj.size == 0) continue;  // placed already / occupies nothing
      std::uint64_t align;
      TM_RETURN_IF_ERROR(BufferAlignment(alignment, bj, &align));
      jobs_.push_back({bj.size, static_cast<std::uint32_t>(j),
                       static_cast<std::uint8_t>(std::countr_zero(align)), bj.gaps.empty()});
    }
    return Status::Ok();
  }

  Status PlaceJobs() {
    for (std::size_t k = 0; k < jobs_.size(); ++k) TM_RETURN_IF_ERROR(PlaceJob(k));
    return Status::Ok();
  }

  OffsetsPlan TakePlan() { return std::move(plan_); }

 private:
  // The offsets job k may not take: one interval per placed buffer it meets
  // (pairs involving gaps gathered in with_gaps_ and appended).
  void GatherForbidden(const Job& job) {
    const std::size_t j = job.tensor;
    const typename StabIndex<Payload>::Ranks ranks = index_->RanksOf(j);
    forbidden_.Clear();
    with_gaps_.clear();
    if (job.plain) {
      const std::uint64_t size = job.size;
      index_->ForEachOverlapping(ranks, [&](const Payload& pi) {
        if constexpr (!kPlain) {
          if (pi.has_gaps) return AddForbidden(problem_, segments_, pi.tensor, pi.offset, j, &with_gaps_);
        }
        const std::uint64_t low = pi.offset + 1;
        forbidden_.Push({low > size ? low - size : 0, pi.offset + pi.size});
      });
    } else if constexpr (!kPlain) {
      index_->ForEachOverlapping(ranks, [&](const Payload& pi) {
        AddForbidden(problem_, segments_, pi.tensor, pi.offset, j, &with_gaps_);
      });
    }
    for (const Interval& iv : with_gaps_) forbidden_.Push(iv);
  }

  Status PlaceJob(std::size_t k) {
    const Job& job = jobs_[k];
    GatherForbidden(job);
    const std::size_t count = forbidden_.size();
    // Dense inputs make one placement cost as much as the conflicts it sees.
    if (deadline_ && !deadline_->Tick(1 + count)) return PlacementDeadline(*deadline_, k, jobs_.size());
    const Interval* sorted = SortByStart(forbidden_.data(), count, forbidden_.capacity(), &sort_scratch_);
    std::uint64_t x;
    std::uint64_t end;
    if (!ChooseOffset(std::span<const Interval>(sorted, count), std::uint64_t{1} << job.align_log2, &x) ||
        !CheckedAdd(x, job.size, &end))
      return ArenaOverflow(problem_.buffers[job.tensor]);
    plan_.offsets[job.tensor] = x;
    plan_.total = std::max(plan_.total, end);
    index_->Insert(job.tensor, Payload::Of(x, job.size, job.tensor, !job.plain));
    return Status::Ok();
  }

  const Problem& problem_;
  internal::Deadline* deadline_;
  OffsetsPlan plan_;
  GapSegments segments_;  // only buffers with gaps have any
  std::optional<StabIndex<Payload>> index_;
  std::vector<Job> jobs_;
  ForbiddenIntervals forbidden_;
  std::vector<Interval> with_gaps_, sort_scratch_;
};

template <typename Payload>
Result<OffsetsPlan> PlaceBestFitWith(const Problem& problem, std::span<const std::size_t> order,
                                     std::uint64_t alignment, internal::Deadline* deadline) {
  BestFit<Payload> fit(problem, deadline);
  TM_RETURN_IF_ERROR(fit.CollectGapSegments());
  TM_RETURN_IF_ERROR(fit.BuildIndex());
  TM_RETURN_IF_ERROR(fit.PlaceFixedOffsets());
  TM_RETURN_IF_ERROR(fit.GatherJobs(order, alignment));
  TM_RETURN_IF_ERROR(fit.PlaceJobs());
  return fit.TakePlan();
}

}  // namespace

Result<OffsetsPlan> PlaceBestFit(const Problem& problem, std::span<const std::size_t> order,
                                 std::uint64_t alignment, internal::Deadline* deadline) {
  for (const Buffer& b : problem.buffers)
    if (!b.gaps.empty()) return PlaceBestFitWith<Placed>(problem, order, alignment, deadline);
  return PlaceBestFitWith<PlacedPlain>(problem, order, alignment, deadline);
}

Result<OffsetsPlan> PlaceBestFitInTimeOrder(const Problem& problem, std::span<const std::size_t> order,
                                            std::uint64_t alignment, internal::Deadline* deadline) {
  const std::size_t n = problem.buffers.size();
  std::size_t jobs = 0;  // the buffers placed (as PlaceBestFit counts them in its errors)
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Buffer& b = problem.buffers[order[k]];
    if (!b.gaps.empty() || b.fixed_offset)
      return InvalidArgument("placing in time order: buffer '" + b.id + "' has gaps or a fixed offset");
    if (k > 0 && b.first_task < problem.buffers[order[k - 1]].first_task)
      return InvalidArgument("placing in time order: the order is not by first task at position " +
                             std::to_string(k));
    jobs += b.size != 0;
  }
  // A stop asked before the first placement places none (as PlaceBestFit,
  // whose index is built under the limit).
  if (deadline && deadline->Expired()) return PlacementDeadline(*deadline, 0, jobs);
  OffsetsPlan plan;
  plan.offsets.assign(n, 0);
  struct Live {
    std::uint64_t offset, size;
  };
  std::vector<Live> live;  // by offset (live buffers share no byte: offsets differ)
  auto at = [&](std::uint64_t offset) {
    return std::lower_bound(live.begin(), live.end(), offset,
                            [](const Live& l, std::uint64_t o) { return l.offset < o; });
  };
  using Expiry = std::pair<TaskIndex, std::uint64_t>;  // last task, offset
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<>> expiries;
  std::vector<Interval> forbidden;
  std::size_t placed = 0;
  for (std::size_t j : order) {
    const Buffer& b = problem.buffers[j];
    if (b.size == 0) continue;  // offset 0, occupies nothing
    std::uint64_t align;
    TM_RETURN_IF_ERROR(BufferAlignment(alignment, b, &align));
    while (!expiries.empty() && expiries.top().first < b.first_task) {
      live.erase(at(expiries.top().second));
      expiries.pop();
    }
    if (deadline && !deadline->Tick(1 + live.size())) return PlacementDeadline(*deadline, placed, jobs);
    forbidden.clear();
    for (const Live& l : live) {
      const std::uint64_t low = l.offset + 1;
      forbidden.emplace_back(low > b.size ? low - b.size : 0, l.offset + l.size);
    }
    std::uint64_t x, end;
    if (!ChooseOffset(forbidden, align, &x) || !CheckedAdd(x, b.size, &end)) return ArenaOverflow(b);
    plan.offsets[j] = x;
    plan.total = std::max(plan.total, end);
    live.insert(at(x), Live{x, b.size});
    expiries.emplace(b.last_task, x);
    ++placed;
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
