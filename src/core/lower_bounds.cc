// SPDX-License-Identifier: Apache-2.0
#include "tensormem/lower_bounds.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/positional_maximums.h"
#include "core/sort_until.h"

namespace tensormem {
namespace {

struct Span {
  TaskIndex first, last;
  std::uint64_t bytes;
  std::uint64_t pad;  // alignment padding counted in `bytes`
};

// The live spans' pads and the largest of them. Pads are below the
// alignment, so below 2^16 almost always: then a count per value and a bit
// per value with a count (64-bit words, a summary word per 64 of them), the
// largest found from at most 16 summary words; a std::multiset (a node per
// span, a cache miss per level) otherwise, or when the arrays would outweigh
// the spans. At 10^6 random lifetimes with alignment 64 the multiset was
// most of PeakLiveBytes (now 4-5x faster).
class LivePads {
 public:
  LivePads(std::uint64_t max_pad, std::size_t spans) {
    if (max_pad < kSmall && max_pad / 64 <= spans) {
      counts_.assign(max_pad + 1, 0);
      words_.assign(max_pad / 64 + 1, 0);
      summary_.assign(max_pad / 4096 + 1, 0);
    }
  }
  void Insert(std::uint64_t pad) {
    if (counts_.empty()) {
      large_.insert(pad);
    } else if (counts_[pad]++ == 0) {
      words_[pad / 64] |= Bit(pad);
      summary_[pad / 4096] |= Bit(pad / 64);
    }
  }
  void Erase(std::uint64_t pad) {
    if (counts_.empty()) {
      large_.erase(large_.find(pad));
    } else if (--counts_[pad] == 0) {
      words_[pad / 64] &= ~Bit(pad);
      if (words_[pad / 64] == 0) summary_[pad / 4096] &= ~Bit(pad / 64);
    }
  }
  std::uint64_t Max() const {  // 0 when none is live
    if (counts_.empty()) return large_.empty() ? 0 : *large_.rbegin();
    for (std::size_t k = summary_.size(); k-- > 0;)
      if (summary_[k] != 0) {
        const std::size_t word = k * 64 + Highest(summary_[k]);
        return word * 64 + Highest(words_[word]);
      }
    return 0;
  }

 private:
  static constexpr std::uint64_t kSmall = std::uint64_t{1} << 16;
  static std::uint64_t Bit(std::uint64_t k) { return std::uint64_t{1} << (k % 64); }
  static std::size_t Highest(std::uint64_t word) {
    return 63 - static_cast<std::size_t>(std::countl_zero(word));
  }
  std::vector<std::uint64_t> counts_;
  std::vector<std::uint64_t> words_, summary_;
  std::multiset<std::uint64_t> large_;
};

// Sweeps (first, last, bytes, pad) spans; returns the peak of (live bytes -
// the largest live pad) and the first task where it is reached. Removals at
// `last` are applied after additions at `last`. Adding a span never lowers
// the value (it grows by bytes - pad >= 0), so checking after each addition
// finds the peak, in any order among the additions at one task.
//
// The starts are sorted (records come in task order: usually no sort at
// all) and the live spans wait in a min-heap by last task, so the ends need
// no sort: the heap is as deep as the most spans live at once, 27 in the
// 10^6 generated network-like records (3.5-4x faster there than sorting
// (task, kind) events, planning_bench peak_live_bytes). Past kMaxHeap live
// spans the heap misses the caches and a sort is faster: the ends still to
// come are sorted then.
// `spans`: how many to expect (one per record; more for buffers with gaps).
constexpr std::size_t kMaxHeap = std::size_t{1} << 16;

// The live bytes (less the largest live pad) as spans come and go, and their
// peak with the first task where it is reached.
class LiveBytes {
 public:
  LiveBytes(std::uint64_t max_pad, std::size_t spans) : any_pad_(max_pad > 0), pads_(max_pad, spans) {}
  void Add(const Span& s) {
    live_ += s.bytes;
    if (any_pad_) pads_.Insert(s.pad);
    const internal::Uint128 value = any_pad_ ? live_ - pads_.Max() : live_;
    if (value > peak_) {
      peak_ = value;
      peak_task_ = s.first;
    }
  }
  void Remove(const Span& s) {
    live_ -= s.bytes;
    if (any_pad_) pads_.Erase(s.pad);
  }
  std::pair<std::uint64_t, TaskIndex> Peak() const {
    return {peak_ > internal::kMaxU64 ? internal::kMaxU64 : static_cast<std::uint64_t>(peak_), peak_task_};
  }

 private:
  bool any_pad_;
  LivePads pads_;  // only used when some span is padded
  internal::Uint128 live_ = 0, peak_ = 0;
  TaskIndex peak_task_ = 0;
};

// The spans with bytes, sorted by first task (usually already), and the
// largest pad.
template <typename ForEachSpan>
std::vector<Span> SortedStarts(std::size_t spans, ForEachSpan for_each_span, std::uint64_t* max_pad) {
  std::vector<Span> starts;
  starts.reserve(spans);
  *max_pad = 0;
  for_each_span([&](TaskIndex first, TaskIndex last, std::uint64_t bytes, std::uint64_t pad) {
    if (bytes == 0) return;
    starts.push_back({first, last, bytes, pad});
    *max_pad = std::max(*max_pad, pad);
  });
  auto by_first = [](const Span& a, const Span& b) { return a.first < b.first; };
  if (!std::is_sorted(starts.begin(), starts.end(), by_first)) std::sort(starts.begin(), starts.end(), by_first);
  return starts;
}

// Adds the starts in order while at most kMaxHeap spans are live, removing
// the ended ones from `ends`, a min-heap by last task. A span ending at task
// t is still live at t: it leaves before a start after t. Returns the
// first start not added.
std::size_t SweepWithHeap(const std::vector<Span>& starts, std::vector<Span>& ends, LiveBytes& live) {
  auto later_last = [](const Span& a, const Span& b) { return a.last > b.last; };
  std::size_t i = 0;
  for (; i < starts.size() && ends.size() <= kMaxHeap; ++i) {
    while (!ends.empty() && ends.front().last < starts[i].first) {
      std::pop_heap(ends.begin(), ends.end(), later_last);
      live.Remove(ends.back());
      ends.pop_back();
    }
    live.Add(starts[i]);
    ends.push_back(starts[i]);
    std::push_heap(ends.begin(), ends.end(), later_last);
  }
  return i;
}

// The rest of the starts from i on, with the live spans and those to come
// sorted by last task. One still to come cannot leave before it starts: its
// last is at least its first (so the removals stop within `ends`, at
// starts[i]'s own end at the latest).
void SweepSorted(const std::vector<Span>& starts, std::size_t i, std::vector<Span>& ends, LiveBytes& live) {
  ends.insert(ends.end(), starts.begin() + static_cast<std::ptrdiff_t>(i), starts.end());
  std::sort(ends.begin(), ends.end(), [](const Span& a, const Span& b) { return a.last < b.last; });
  std::size_t j = 0;
  for (; i < starts.size(); ++i) {
    for (; ends[j].last < starts[i].first; ++j) live.Remove(ends[j]);
    live.Add(starts[i]);
  }
}

template <typename ForEachSpan>
std::pair<std::uint64_t, TaskIndex> Sweep(std::size_t spans, ForEachSpan for_each_span) {
  std::uint64_t max_pad = 0;
  const std::vector<Span> starts = SortedStarts(spans, for_each_span, &max_pad);
  LiveBytes live(max_pad, starts.size());
  std::vector<Span> ends;  // a min-heap by last task, then (past kMaxHeap) sorted
  const std::size_t i = SweepWithHeap(starts, ends, live);
  if (i < starts.size()) SweepSorted(starts, i, ends, live);
  return live.Peak();
}

// Range add, global max over [0, n). A node's max and pending add share a
// cache line: at 10^6 ranges and more the tree outgrows the caches, and two
// arrays cost two misses a node. Count is the narrowest type that holds the
// number of ranges (int32_t below 2^31): half the bytes, 15-20 % faster at
// 10^5-10^6 records than int64_t (objects_scaling_bench lower_bound). The
// int64_t tree is the same code, for 2^31 records and more.
template <typename Count>
class MaxAddTree {
 public:
  explicit MaxAddTree(std::size_t n) {
    while (leaves_ < n) leaves_ *= 2;
    nodes_.assign(2 * leaves_, Node{});
  }
  // Adds 1 to [lo, hi] (inclusive), bottom-up: the canonical nodes take the
  // add, then the two boundary paths are recomputed. Iterative, so about
  // three times faster than the recursive form at 10^6 ranges.
  void Add(std::size_t lo, std::size_t hi) {
    std::size_t l = lo + leaves_, r = hi + leaves_ + 1;
    const std::size_t l0 = l, r0 = r - 1;
    while (l < r) {
      if (l & 1) Apply(l++);
      if (r & 1) Apply(--r);
      l /= 2;
      r /= 2;
    }
    Pull(l0);
    Pull(r0);
  }
  std::int64_t Max() const { return nodes_[1].max; }

 private:
  struct Node {
    Count max = 0;  // the max below, including add
    Count add = 0;  // pending add
  };
  void Apply(std::size_t node) {
    ++nodes_[node].max;
    ++nodes_[node].add;
  }
  void Pull(std::size_t node) {
    for (node /= 2; node >= 1; node /= 2)
      nodes_[node].max = static_cast<Count>(
          nodes_[node].add + std::max(nodes_[2 * node].max, nodes_[2 * node + 1].max));
  }
  std::size_t leaves_ = 1;
  std::vector<Node> nodes_;
};

}  // namespace

std::uint64_t PeakLiveBytes(std::span<const UsageRecord> records) {
  return Sweep(records.size(), [&](auto&& emit) {
           for (const UsageRecord& r : records) emit(r.first_task, r.last_task, r.size, 0);
         })
      .first;
}

std::size_t MaxLiveTensors(std::span<const UsageRecord> records) {
  return Sweep(records.size(), [&](auto&& emit) {
           for (const UsageRecord& r : records) emit(r.first_task, r.last_task, 1, 0);
         })
      .first;
}

TaskIndex PeakTask(std::span<const UsageRecord> records) {
  return Sweep(records.size(), [&](auto&& emit) {
           for (const UsageRecord& r : records) emit(r.first_task, r.last_task, r.size, 0);
         })
      .second;
}

// Every offset is a multiple of g, the gcd of the buffers' effective
// alignments. Among the buffers live at one task, sorted by offset, each
// next one starts at or above the previous end rounded up to g, so all but
// the topmost count their size rounded up to g: live bytes rounded, minus the
// largest padding. Windows start inside a buffer, unaligned, so a problem
// with windows uses g = 1.
std::uint64_t PeakLiveBytes(const Problem& problem, std::uint64_t alignment) {
  std::uint64_t g = 0;
  for (const Buffer& b : problem.buffers) {
    if (b.size == 0) continue;
    for (const Gap& gap : b.gaps)
      if (gap.has_window) g = 1;
    std::uint64_t e;
    if (!internal::CheckedLcm(std::max<std::uint64_t>(alignment, 1), std::max<std::uint64_t>(b.alignment, 1), &e)) e = 1;
    g = std::gcd(g, e);
  }
  if (g == 0) g = 1;
  return Sweep(problem.buffers.size(), [&](auto&& emit) {
           for (const Buffer& b : problem.buffers) {
             auto span = [&](const Segment& s) {
               std::uint64_t rounded;
               if (g == 1 || !internal::CheckedAlignUp(s.hi - s.lo, g, &rounded)) rounded = s.hi - s.lo;
               emit(s.first_task, s.last_task, rounded, rounded - (s.hi - s.lo));
             };
             // Occupancy() allocates; only buffers with gaps need it (10^6 buffers).
             if (b.gaps.empty()) {
               span({b.first_task, b.last_task, 0, b.size});
             } else {
               for (const Segment& s : Occupancy(b)) span(s);
             }
           }
         })
      .first;
}

// posmax[k] >= s iff some task has k+1 live tensors of size >= s. Inserting
// tensors in decreasing size and tracking the maximum number of live tensors
// over tasks (a range-add/max tree over the distinct first tasks, the only
// tasks where a live set can be maximal) gives each rank its maximum the
// moment the count first reaches it.
namespace internal {
namespace {

// A record's size and its range of distinct first tasks, [lo, hi).
struct SizeRange {
  std::uint64_t size;
  std::size_t lo, hi;
};

// Each record's range of distinct first tasks, from two sorted passes
// instead of two binary searches per record (at 2 x 10^6 records those
// searches' cache misses were half the time); `starts`: the distinct first
// tasks. False when the deadline passes.
bool FirstTaskRanges(std::span<const UsageRecord> records, Deadline* deadline, std::vector<SizeRange>* ranges,
                     std::vector<TaskIndex>* starts) {
  const std::size_t n = records.size();
  std::vector<std::pair<TaskIndex, std::size_t>> by_task(n);
  for (std::size_t i = 0; i < n; ++i) by_task[i] = {records[i].first_task, i};
  // Pairs are distinct, so the stable sort is the sort.
  const std::less<std::pair<TaskIndex, std::size_t>> less;
  if (!StableSortUntil(by_task, less, deadline)) return false;
  ranges->resize(n);
  for (const auto& [task, i] : by_task) {
    if (starts->empty() || starts->back() != task) starts->push_back(task);
    (*ranges)[i].size = records[i].size;
    (*ranges)[i].lo = starts->size() - 1;
  }
  for (std::size_t i = 0; i < n; ++i) by_task[i] = {records[i].last_task, i};
  if (!StableSortUntil(by_task, less, deadline)) return false;
  std::size_t k = 0;  // distinct first tasks <= the current last task
  for (const auto& [task, i] : by_task) {
    while (k < starts->size() && (*starts)[k] <= task) ++k;
    (*ranges)[i].hi = k;
  }
  return true;
}

// Inserts the ranges (largest first) into the tree, pushing a record's size
// for each live count it is the first to reach.
template <typename Tree>
bool InsertLargestFirst(const std::vector<SizeRange>& ranges, Deadline* deadline, Tree& tree,
                        std::vector<std::uint64_t>& result) {
  for (const SizeRange& range : ranges) {
    if (deadline != nullptr && !deadline->Tick()) return false;
    tree.Add(range.lo, range.hi - 1);  // hi > lo: the record's own first task is in range
    while (static_cast<std::int64_t>(result.size()) < tree.Max()) result.push_back(range.size);
  }
  return true;
}

// Counts fit 32 bits below narrow_limit records (the trees' counts are at
// most the record count).
bool PositionalMaximumsWith(std::span<const UsageRecord> records, Deadline* deadline,
                            std::vector<std::uint64_t>* maxima, std::size_t narrow_limit) {
  std::vector<std::uint64_t>& result = *maxima;
  result.clear();
  if (records.empty()) return true;
  std::vector<SizeRange> ranges;
  std::vector<TaskIndex> starts;  // distinct first tasks, ascending
  if (!FirstTaskRanges(records, deadline, &ranges, &starts)) return false;
  // Sorted by size, largest first: the insertions read them in order
  // (looking each record's range up by index in size order was a cache miss
  // per record, a third of the time at 10^6 records). Among equal sizes the
  // order cannot change the result: the maximum reached after the last of
  // them is the same, and so is what is pushed (their size).
  if (!StableSortUntil(
          ranges,
          [](const SizeRange& a, const SizeRange& b) {
            return a.size != b.size ? a.size > b.size : a.lo != b.lo ? a.lo < b.lo : a.hi < b.hi;
          },
          deadline))
    return false;
  if (records.size() < narrow_limit) {
    MaxAddTree<std::int32_t> tree(starts.size());
    return InsertLargestFirst(ranges, deadline, tree, result);
  }
  MaxAddTree<std::int64_t> tree(starts.size());
  return InsertLargestFirst(ranges, deadline, tree, result);
}

}  // namespace

bool PositionalMaximumsUntil(std::span<const UsageRecord> records, Deadline* deadline,
                             std::vector<std::uint64_t>* maxima) {
  return PositionalMaximumsWith(records, deadline, maxima, std::size_t{1} << 31);
}

std::vector<std::uint64_t> PositionalMaximumsWithWideCounts(std::span<const UsageRecord> records) {
  std::vector<std::uint64_t> maxima;
  PositionalMaximumsWith(records, nullptr, &maxima, 0);
  return maxima;
}

std::uint64_t SumOfMaximums(std::span<const std::uint64_t> maxima) {
  std::uint64_t sum = 0;
  for (std::uint64_t m : maxima) sum = SaturatingAdd(sum, m);
  return sum;
}

}  // namespace internal

std::vector<std::uint64_t> PositionalMaximums(std::span<const UsageRecord> records) {
  std::vector<std::uint64_t> result;
  internal::PositionalMaximumsUntil(records, nullptr, &result);
  return result;
}

std::uint64_t ObjectsLowerBound(std::span<const UsageRecord> records) {
  return internal::SumOfMaximums(PositionalMaximums(records));
}

}  // namespace tensormem
