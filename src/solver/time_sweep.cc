// SPDX-License-Identifier: Apache-2.0
#include "solver/time_sweep.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

#include "core/checked_math.h"
#include "solver/subset_sum_table.h"

namespace tensormem::solver {
namespace {

constexpr std::uint64_t kUnset = std::numeric_limits<std::uint64_t>::max();
// Pairings per boundary per refill: 2, 8, 32, 128, then 256 (a refill
// enumerates again from the start, so batches grow geometrically).
constexpr std::size_t kMaxBatch = 256;
// The enumeration's caps (see time_sweep.h).
constexpr std::size_t kBigSide = 15, kMaxGroupOnBigSide = 5, kMatchesPerGroup = 32;
// Elementary steps (combinations, subset-sum calls) of one pass of an
// enumeration: past this the pass ends there. A step is 10-200 ns (a
// group's consecutiveness check included), and a refill cannot yield, so
// a capped refill holds up every other sweep: at 2^21 per pass, seed 110
// (N = 1,000) spent 1 s in one refill of 38 ending against 46 starting
// buffers while the other direction, which fits in 0.17 s, waited. N =
// 1,000 perfect packings, seeds 1-200, fit within 20 s, two variants side
// by side: 2^21 200 fit, 30.7-34.0 s in all, slowest 2.4-3.1 s; 2^19 200,
// 26.1-26.7 s, slowest 1.6 s; 2^18 200, 24.8 s, slowest 0.99 s. N = 2,000,
// seeds 1-20: 2^21 13 fit, 2^18 14. (With one cap shared by the passes,
// before the alternate sweeps, 2^21 was needed: 2^20 lost N = 200 seed 2.)
constexpr std::uint64_t kMaxEnumerationWork = std::uint64_t{1} << 18;
// Other sides this small keep the plain subset search (it cannot blow up)
// instead of a SubsetSumTable.
constexpr std::size_t kSubsetSumTableMinItems = 12;

double Binomial(std::size_t n, std::size_t k) {
  k = std::min(k, n - k);
  double c = 1;
  for (std::size_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
  return c;
}

}  // namespace

// The pairings at one boundary, in the order of time_sweep.h, those with
// index in [skip, skip + max) kept.
class TimeSweep::Enumerator {
 public:
  enum class End { kDone, kFull, kInterrupted, kCapped };

  Enumerator(TimeSweep& sweep, SearchControl& control, std::size_t skip, std::size_t max,
             std::vector<Pairing>* out)
      : sweep_(sweep), control_(control), skip_(skip), max_(max), out_(out) {}

  End Run(const PQTree& root, const std::vector<std::uint32_t>& ending,
          const std::vector<std::uint32_t>& starting) {
    Pairing blocks;
    Go(root, ending, starting, blocks, {0, 0}, 0);
    NextPass();
    if (!Stopped()) {
      PQTree t = root;
      sweep_.Mark(ending);
      const bool ok = t.Reduce(sweep_.mark_, ending.size());
      sweep_.Unmark(ending);
      if (ok) Yield({Block{ending, starting}});
    }
    // Then one likely (dense) match with unlikely ones, then more: a
    // pairing of one dense block and a few unlikely ones comes before the
    // many that split the rest of a big boundary by chance.
    if (!Stopped()) Go(root, ending, starting, blocks, {1, 1}, 0);
    NextPass();
    if (!Stopped()) Go(root, ending, starting, blocks, {2, SIZE_MAX}, 0);
    NextPass();
    return interrupted_ ? End::kInterrupted
           : full_      ? End::kFull
           : capped_    ? End::kCapped
                        : End::kDone;
  }
  std::uint64_t work() const { return work_; }

 private:
  bool Stopped() const { return full_ || interrupted_ || pass_capped_; }

  // Each pass has its own cap: a first pass lost among chance matches must
  // not starve the next, where a pairing with one dense group may hold.
  void NextPass() {
    capped_ = capped_ || pass_capped_;
    pass_capped_ = false;
    pass_start_ = work_;
  }

  // Elementary steps; the clock is read every 4,096 (an enumeration can be long).
  void Work() {
    if (++work_ % 4096 == 0 && !control_.Poll()) interrupted_ = true;
    if (work_ - pass_start_ >= kMaxEnumerationWork) pass_capped_ = true;
  }

  void Yield(const Pairing& p) {
    if (produced_ >= skip_) out_->push_back(p);
    if (++produced_ >= skip_ + max_) full_ = true;
  }

  std::uint64_t Size(std::uint32_t i) const { return sweep_.inst_.items[i].height; }

  // Subsets of exactly `count` of `items` (sorted largest first) summing
  // to `target`, appended to `out` until it holds `cap`. `table`: the
  // items' SubsetSumTable, or null. `largest`: the prefix sums of items.
  void SubsetsWithSum(const std::vector<std::uint32_t>& items,
                      const std::vector<std::uint64_t>& largest, std::uint64_t target,
                      std::size_t count, const SubsetSumTable* table, std::size_t cap,
                      std::vector<std::vector<std::uint32_t>>* out) {
    const std::size_t n = items.size();
    std::vector<std::uint32_t> cur;
    const auto go = [&](const auto& self, std::size_t i, std::uint64_t rem) -> void {
      if (out->size() >= cap || Stopped()) return;
      Work();
      const std::size_t left = count - cur.size();
      if (left == 0) {
        if (rem == 0) out->push_back(cur);
        return;
      }
      // `left` more of items[i..]: at most the next `left` (the largest
      // there), at least the last `left` (the smallest).
      if (n - i < left || largest[i + left] - largest[i] < rem ||
          largest[n] - largest[n - left] > rem)
        return;
      if (table != nullptr && !table->Reaches(i, rem)) return;
      if (Size(items[i]) <= rem) {
        cur.push_back(items[i]);
        self(self, i + 1, rem - Size(items[i]));
        cur.pop_back();
      }
      self(self, i + 1, rem);
    };
    go(go, 0, target);
  }

  // The matches of `total` among `other` (sorted largest first, summing to
  // `other_sum`) of at most `limit` buffers or all but at most `limit`,
  // fewest (or fewest left out) first, at most `cap`. Counts from both ends
  // so that the cap does not fill with subsets of one kind (a side with
  // eight 1-byte buffers has 2^8 variants of every subset that holds them).
  void Matches(const std::vector<std::uint32_t>& other, const std::vector<std::uint64_t>& largest,
               std::uint64_t other_sum, std::uint64_t total, std::size_t limit,
               const SubsetSumTable* table, std::vector<std::vector<std::uint32_t>>* out,
               std::size_t cap = kMatchesPerGroup) {
    out->clear();
    const std::size_t n = other.size();
    if (total == other_sum) {
      out->push_back(other);
      return;
    }
    std::vector<std::vector<std::uint32_t>> left_out;
    // c buffers, then all but c: every size from 1 to n - 1 once.
    for (std::size_t c = 1; 2 * c <= n && c <= limit && out->size() < cap && !Stopped(); ++c) {
      SubsetsWithSum(other, largest, total, c, table, cap, out);
      if (2 * c == n || out->size() >= cap) continue;  // n - c = c: done above
      left_out.clear();
      SubsetsWithSum(other, largest, other_sum - total, c, table, cap - out->size(), &left_out);
      for (const std::vector<std::uint32_t>& l : left_out) {
        sweep_.Mark(l);
        std::vector<std::uint32_t> complement;
        for (const std::uint32_t i : other)
          if (!sweep_.mark_[i]) complement.push_back(i);
        sweep_.Unmark(l);
        out->push_back(std::move(complement));
      }
    }
  }

  // How many of a pairing's proper groups may match likely (dense) sums:
  // the pairings of one pass have between min and max of them.
  struct DenseRange {
    std::size_t min, max;
  };

  // One boundary as Go sees it: the pivot's side (pivot first once
  // ordered), the other side largest first, and what is precomputed over
  // the other side's sums.
  struct Boundary {
    explicit Boundary(SubsetSumStorage* storage) : table(storage) {}
    bool pivot_ending = false;
    std::vector<std::uint32_t> side, other;
    std::uint64_t other_sum = 0;
    std::size_t n = 0, pool = 0;  // side's size; the buffers a group draws from besides the pivot
    std::vector<std::uint64_t> largest;  // sums of the k largest of `other`
    std::uint64_t unit = 0;              // the sizes' common divisor
    SubsetSumTable table;
    bool have_table = false;
    std::vector<std::uint64_t> small_sums;  // every subset sum of a small other side, sorted
    const SubsetSumTable* Table() const { return have_table ? &table : nullptr; }
  };

  // Splits the boundary into pivot side and other side and precomputes the
  // other side's sums.
  void Prepare(const std::vector<std::uint32_t>& ending, const std::vector<std::uint32_t>& starting,
               Boundary& bd) {
    bd.pivot_ending = ending.size() <= starting.size();
    bd.side = bd.pivot_ending ? ending : starting;
    bd.other = bd.pivot_ending ? starting : ending;
    std::vector<std::uint32_t>& other = bd.other;
    for (const std::uint32_t i : other) bd.other_sum = internal::SaturatingAdd(bd.other_sum, Size(i));
    std::stable_sort(other.begin(), other.end(), [&](std::uint32_t a, std::uint32_t b) { return Size(a) > Size(b); });
    bd.n = bd.side.size();
    bd.pool = bd.n - 1;
    // A large other side gets its reachable sums first: then a group whose
    // sum it cannot reach costs one lookup, and the search for the matches
    // of one that it can never meets a dead end.
    if (other.size() >= kSubsetSumTableMinItems) {
      std::vector<std::uint64_t> sizes;
      for (const std::uint32_t i : other) sizes.push_back(Size(i));
      bd.have_table = bd.table.Build(sizes, bd.other_sum);
      if (bd.have_table) work_ += bd.table.cost() / 4;
    }
    // A small other side's subset sums instead, all of them (at most 2^11,
    // where a table would be megabytes), so that a group no subset matches
    // is dropped before its consecutiveness check too.
    if (other.size() < kSubsetSumTableMinItems) {
      bd.small_sums.push_back(0);
      for (const std::uint32_t i : other)
        for (std::size_t k = 0, m = bd.small_sums.size(); k < m; ++k)
          bd.small_sums.push_back(bd.small_sums[k] + Size(i));
      std::sort(bd.small_sums.begin(), bd.small_sums.end());
      work_ += bd.small_sums.size();
    }
    bd.largest.assign(other.size() + 1, 0);
    for (std::size_t k = 0; k < other.size(); ++k)
      bd.largest[k + 1] = internal::SaturatingAdd(bd.largest[k], Size(other[k]));
    // Sums count in units of the sizes' common divisor (aligned buffers:
    // sizes in multiples of 256 bytes take 256 times fewer sums).
    for (const std::uint32_t i : other) bd.unit = std::gcd(bd.unit, Size(i));
    for (const std::uint32_t i : bd.side) bd.unit = std::gcd(bd.unit, Size(i));
  }

  // Whether some subset of the other side may sum to `total`.
  static bool Reachable(const Boundary& bd, std::uint64_t total) {
    if (bd.have_table) return bd.table.Reaches(0, total);
    if (!bd.small_sums.empty()) return std::binary_search(bd.small_sums.begin(), bd.small_sums.end(), total);
    return true;  // a large side past the table's limit: unknown
  }

  // Whether a match of k buffers of the other side for a group of r + 1
  // summing to `total` is likely to be chance: the expected number of such
  // equal sums, C(others, k) C(pool, r) over the spread of the sums they can
  // take, above the chance threshold (1 %; 10 % or 0.1 % in the alternate
  // sweeps). The spread is at least `total`, and wider when k buffers can
  // sum to much more (sizes spread over orders of magnitude: 85 + 232 = 317
  // among buffers of 10^4-10^5 bytes is no chance).
  bool Likely(const Boundary& bd, std::size_t r, std::size_t k, std::uint64_t total) const {
    const std::size_t others = bd.other.size();
    const std::uint64_t smallest = bd.other_sum - bd.largest[others - k];
    const std::uint64_t spread = std::max(total, bd.largest[k] - smallest) / std::max<std::uint64_t>(bd.unit, 1);
    return Binomial(others, k) * Binomial(bd.pool, r) > static_cast<double>(spread) * sweep_.chance_;
  }

  // Up to how many buffers (or all but how many) a match of `total` for a
  // group of r + 1 is unlikely to be chance.
  std::size_t UnlikelyUpTo(const Boundary& bd, std::size_t r, std::uint64_t total) const {
    std::size_t few = 0;
    while (few < bd.other.size() && !Likely(bd, r, few + 1, total)) ++few;
    return few;
  }

  // The pivot (side[0], in every group) is the buffer with the fewest
  // likely matches, so that the pairings that hold come first: one whose
  // size exactly one buffer of the other side has (a piece cut in time:
  // its halves end and start at the same offset), else one with a match
  // unlikely to be chance (few buffers or all but few), else the smallest
  // (the fewest subsets sum to it).
  void OrderPivots(Boundary& bd) {
    std::vector<std::vector<std::uint32_t>> matches;
    std::vector<std::tuple<int, std::uint64_t, std::uint32_t>> keyed;  // (kind, order, item)
    for (const std::uint32_t i : bd.side) {
      const std::uint64_t size = Size(i);
      const auto [lo, hi] = std::equal_range(bd.other.begin(), bd.other.end(), i,
                                             [&](std::uint32_t a, std::uint32_t b) { return Size(a) > Size(b); });
      int kind = 2;
      if (hi - lo == 1) {
        kind = 0;
      } else {
        const std::size_t few = UnlikelyUpTo(bd, 0, size);
        if (few > 0 && size <= bd.other_sum) {
          Matches(bd.other, bd.largest, bd.other_sum, size, few, bd.Table(), &matches, 1);
          if (!matches.empty() && matches[0].size() < bd.other.size()) kind = 1;
        }
      }
      // Among the sparse ones the largest: few buffers rarely sum to a
      // large size by chance (many small buffers make small sums cheap).
      keyed.emplace_back(kind, kind == 1 ? UINT64_MAX - size : size, i);
    }
    std::stable_sort(keyed.begin(), keyed.end());
    for (std::size_t k = 0; k < keyed.size(); ++k) bd.side[k] = std::get<2>(keyed[k]);
  }

  // Group sizes besides the pivot (r): every one on a small side. On a big
  // side up to kMaxGroupOnBigSide buffers, and as many of all but a few (a
  // boundary where most of the side is one run and a few buffers another),
  // alternately: 1, n - 1, 2, n - 2, ...
  static std::vector<std::size_t> GroupSizes(const Boundary& bd) {
    std::vector<std::size_t> sizes;
    if (bd.n <= kBigSide) {
      for (std::size_t k = 0; k <= bd.pool; ++k) sizes.push_back(k);
    } else {
      for (std::size_t k = 0; k < kMaxGroupOnBigSide; ++k) {
        sizes.push_back(k);
        if (k + 1 < kMaxGroupOnBigSide) sizes.push_back(bd.pool - 1 - k);
      }
    }
    return sizes;
  }

  // The next combination of idx.size() from [0, pool), in lexicographic
  // order; false after the last.
  static bool NextCombination(std::vector<std::size_t>& idx, std::size_t pool) {
    const std::size_t r = idx.size();
    std::size_t k = r;
    while (k > 0 && idx[k - 1] == k - 1 + pool - r) --k;
    if (k == 0) return false;
    ++idx[k - 1];
    for (std::size_t j = k; j < r; ++j) idx[j] = idx[j - 1] + 1;
    return true;
  }

  // Where Go stands: the tree and the rest of the boundary it pairs, the
  // blocks so far, the pass's range and the dense groups in `blocks`.
  struct Level {
    const PQTree& tree;
    const PQTree::Index& index;
    const std::vector<std::uint32_t>& ending;
    const std::vector<std::uint32_t>& starting;
    Pairing& blocks;
    DenseRange range;
    std::size_t dense_so_far;
  };

  // Pairs a with b (a: ending buffers, admitted by the tree) and goes on
  // over the rest of the boundary.
  void Extend(const Level& at, const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
              bool dense) {
    // Only a pairing that goes on gets its own copy of the tree.
    PQTree t = at.tree;
    sweep_.Mark(a);
    t.Reduce(sweep_.mark_, a.size());  // admitted: succeeds
    std::vector<std::uint32_t> rest_ending, rest_starting;
    for (const std::uint32_t i : at.ending)
      if (!sweep_.mark_[i]) rest_ending.push_back(i);
    sweep_.Unmark(a);
    sweep_.Mark(b);
    for (const std::uint32_t i : at.starting)
      if (!sweep_.mark_[i]) rest_starting.push_back(i);
    sweep_.Unmark(b);
    at.blocks.emplace_back(a, b);
    Go(t, rest_ending, rest_starting, at.blocks, at.range, at.dense_so_far + (dense ? 1 : 0));
    at.blocks.pop_back();
  }

  // The pairings whose next block holds the pivot and side[k + 1] for k in
  // idx (r = idx.size()). False once stopped.
  bool TryGroup(const Level& at, const Boundary& bd, const std::vector<std::size_t>& idx) {
    const std::size_t r = idx.size();
    std::vector<std::uint32_t> group{bd.side[0]};
    std::uint64_t total = Size(bd.side[0]);
    for (const std::size_t k : idx) {
      group.push_back(bd.side[k + 1]);
      total = internal::SaturatingAdd(total, Size(bd.side[k + 1]));
    }
    // An ending group (pivot on the ending side) is checked before its
    // matches are sought: one that cannot be consecutive needs none.
    if (total > bd.other_sum || !Reachable(bd, total) || (bd.pivot_ending && !at.index.Admits(group))) return true;
    // The sparse pass looks only where a match is unlikely to be chance:
    // among the few buffers, or all but a few.
    const bool sparse_only = at.dense_so_far >= at.range.max;
    const std::size_t few = sparse_only ? UnlikelyUpTo(bd, r, total) : bd.other.size();
    std::vector<std::vector<std::uint32_t>> matches;
    Matches(bd.other, bd.largest, bd.other_sum, total, few, bd.Table(), &matches);
    for (const std::vector<std::uint32_t>& match : matches) {
      const bool proper = match.size() < bd.other.size() && group.size() < bd.n;
      const bool dense = proper && Likely(bd, r, match.size(), total);
      if (sparse_only && dense) continue;
      const std::vector<std::uint32_t>& a = bd.pivot_ending ? group : match;
      const std::vector<std::uint32_t>& b = bd.pivot_ending ? match : group;
      if (!bd.pivot_ending && !at.index.Admits(a)) continue;
      Extend(at, a, b, dense);
      if (Stopped()) return false;
    }
    return true;
  }

  // The pairings that extend `blocks` over the rest of the boundary, with
  // `dense_so_far` dense groups in `blocks`: the pivot's group of each size
  // in turn, each combination of the rest of its side, with each match on
  // the other side.
  void Go(const PQTree& tree, const std::vector<std::uint32_t>& ending,
          const std::vector<std::uint32_t>& starting, Pairing& blocks, DenseRange range,
          std::size_t dense_so_far) {
    if (Stopped()) return;
    if (ending.empty() || starting.empty()) {
      if (ending.empty() && starting.empty() && blocks.size() > 1 && dense_so_far >= range.min)
        Yield(blocks);
      return;
    }
    const PQTree::Index index(tree);
    Boundary bd(sweep_.shared_storage_ != nullptr ? sweep_.shared_storage_ : &sweep_.own_storage_);
    Prepare(ending, starting, bd);
    OrderPivots(bd);
    const Level at{tree, index, ending, starting, blocks, range, dense_so_far};
    for (const std::size_t r : GroupSizes(bd)) {
      std::vector<std::size_t> idx(r);
      std::iota(idx.begin(), idx.end(), std::size_t{0});
      do {
        Work();
        if (Stopped() || !TryGroup(at, bd, idx)) return;
      } while (NextCombination(idx, bd.pool));
    }
  }

  TimeSweep& sweep_;
  SearchControl& control_;
  std::size_t skip_, max_;
  std::vector<Pairing>* out_;
  std::size_t produced_ = 0;
  std::uint64_t work_ = 0, pass_start_ = 0;
  bool full_ = false, interrupted_ = false, capped_ = false, pass_capped_ = false;
};

std::optional<std::uint64_t> TimeSweep::ZeroSlackLoad(const Instance& instance) {
  if (instance.needs_general || !instance.obstacles.empty() || instance.items.empty() ||
      instance.num_sections == 0)
    return std::nullopt;
  const std::uint32_t s = instance.num_sections;
  std::vector<std::uint64_t> starts(s + 1, 0), ends(s + 1, 0);
  for (const Item& item : instance.items) {
    if (!item.plain || item.height == 0 || item.first_section >= item.end_section ||
        item.end_section > s)
      return std::nullopt;
    if (!internal::CheckedAdd(starts[item.first_section], item.height,
                              &starts[item.first_section]) ||
        !internal::CheckedAdd(ends[item.end_section], item.height, &ends[item.end_section]))
      return std::nullopt;
  }
  const std::uint64_t load = starts[0];
  std::uint64_t live = 0;
  for (std::uint32_t k = 0; k < s; ++k) {
    live = live - ends[k] + starts[k];  // ends[k] <= live: they started before
    if (live != load) return std::nullopt;
  }
  return load;
}

TimeSweep::TimeSweep(const Instance& instance, std::uint64_t load, bool reversed, double chance,
                     SubsetSumStorage* storage)
    : inst_(instance), load_(load), chance_(chance), shared_storage_(storage) {
  const std::uint32_t s = instance.num_sections;
  num_boundaries_ = s + 1;
  ending_.resize(num_boundaries_);
  starting_.resize(num_boundaries_);
  for (std::uint32_t i = 0; i < instance.items.size(); ++i) {
    std::uint32_t first = instance.items[i].first_section, end = instance.items[i].end_section;
    if (reversed) std::tie(first, end) = std::pair{s - end, s - first};
    starting_[first].push_back(i);
    start_.push_back(first);
    ending_[end].push_back(i);
  }
  mark_.assign(instance.items.size(), 0);
  frames_.resize(num_boundaries_);
}

void TimeSweep::Mark(const std::vector<std::uint32_t>& items) {
  for (const std::uint32_t i : items) mark_[i] = 1;
}

void TimeSweep::Unmark(const std::vector<std::uint32_t>& items) {
  for (const std::uint32_t i : items) mark_[i] = 0;
}

void TimeSweep::ResetFrame(std::size_t k, PQTree in) {
  Frame& f = frames_[k];
  f.in = std::move(in);
  f.reduced = PQTree();
  f.batch.clear();
  f.pos = 0;
  f.enumerated = 0;
  f.refills = 0;
  f.more = true;
  f.chosen.clear();
  f.conflict.clear();
}

bool TimeSweep::Refill(std::size_t k, SearchControl& control) {
  Frame& f = frames_[k];
  const std::size_t max = std::min(kMaxBatch, std::size_t{2} << std::min<std::size_t>(2 * f.refills, 16));
  std::vector<Pairing> batch;
  Enumerator e(*this, control, f.enumerated, max, &batch);
  const Enumerator::End end = e.Run(f.in, ending_[k], starting_[k]);
  work_ += e.work();
  if (end == Enumerator::End::kInterrupted) return false;
  if (end == Enumerator::End::kCapped) ++capped_;
  f.batch = std::move(batch);
  f.pos = 0;
  f.enumerated += f.batch.size();
  f.more = end == Enumerator::End::kFull;
  ++f.refills;
  return true;
}

bool TimeSweep::Apply(std::size_t k, const Pairing& p, PQTree* reduced, PQTree* next) {
  *reduced = frames_[k].in;
  for (const Block& block : p) {
    Mark(block.first);
    const bool ok = reduced->Reduce(mark_, block.first.size());
    Unmark(block.first);
    if (!ok) return false;
  }
  *next = *reduced;
  for (const Block& block : p) {
    Mark(block.first);
    const bool ok = next->Replace(mark_, block.first.size(), block.second);
    Unmark(block.first);
    if (!ok) return false;
  }
  return true;
}

SearchOutcome TimeSweep::Continue(std::uint64_t budget, SearchControl& control) {
  if (done_) return offsets_.empty() ? SearchOutcome::kExhausted : SearchOutcome::kFound;
  const std::size_t last = num_boundaries_ - 1;
  if (!started_) {
    started_ = true;
    ResetFrame(1, PQTree(starting_[0]));
    depth_ = 1;
  }
  const std::uint64_t effort_before = effort_;
  for (;;) {
    if (control.stopped()) return SearchOutcome::kLimit;
    if (depth_ == last) return Finish();  // everything ends: the plan
    Frame& f = frames_[depth_];
    if (f.pos == f.batch.size()) {
      if (!f.more) {
        if (depth_ == 1) {
          done_ = true;
          reason_ = "no pairing left (the enumeration is capped: not a proof)";
          return SearchOutcome::kExhausted;
        }
        Backjump();
        continue;
      }
      const std::uint64_t work_before = work_;
      const bool finished = Refill(depth_, control);
      effort_ += (work_ - work_before) >> 10;
      if (!finished) return SearchOutcome::kLimit;
      continue;
    }
    if (effort_ - effort_before >= budget) return SearchOutcome::kLimit;
    ++effort_;
    ++nodes_;
    const bool more_time = control.Tick();
    TryNextPairing(f);
    if (!more_time) return SearchOutcome::kLimit;
  }
}

// Every boundary paired: the plan from the chosen pairings (kFound), or
// none when it does not rebuild (kExhausted).
SearchOutcome TimeSweep::Finish() {
  done_ = true;
  if (Rebuild()) return SearchOutcome::kFound;
  offsets_.clear();
  return SearchOutcome::kExhausted;
}

// The boundary at depth_ has no pairing left: back to the latest boundary
// that started one of the buffers ending here, or blamed by a failure
// below; it inherits the rest of the blame.
void TimeSweep::Backjump() {
  std::vector<std::uint32_t> blame = frames_[depth_].conflict;
  for (const std::uint32_t i : ending_[depth_])
    if (start_[i] >= 1 && start_[i] < depth_) blame.push_back(start_[i]);
  std::sort(blame.begin(), blame.end());
  blame.erase(std::unique(blame.begin(), blame.end()), blame.end());
  while (!blame.empty() && blame.back() >= depth_) blame.pop_back();
  const std::size_t to = blame.empty() ? depth_ - 1 : blame.back();
  if (!blame.empty()) blame.pop_back();
  std::vector<std::uint32_t>& inherit = frames_[to].conflict;
  inherit.insert(inherit.end(), blame.begin(), blame.end());
  std::sort(inherit.begin(), inherit.end());
  inherit.erase(std::unique(inherit.begin(), inherit.end()), inherit.end());
  depth_ = to;
}

// The next pairing of f's batch: when it applies, one boundary deeper.
void TimeSweep::TryNextPairing(Frame& f) {
  Pairing p = std::move(f.batch[f.pos++]);
  PQTree reduced, next;
  if (!Apply(depth_, p, &reduced, &next)) return;
  f.reduced = reduced.Compacted();
  f.chosen = std::move(p);
  ResetFrame(depth_ + 1, next.Compacted());
  ++depth_;
  deepest_ = std::max(deepest_, depth_);
}

bool TimeSweep::Rebuild() {
  const std::size_t n = inst_.items.size();
  const std::size_t last = num_boundaries_ - 1;
  offsets_.assign(n, kUnset);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> key(n, {kUnset, 1});
  const Pairing final_pairing{Block{ending_[last], {}}};
  for (std::size_t k = last; k >= 1; --k) {
    const PQTree& tree = k == last ? frames_[last].in : frames_[k].reduced;
    const Pairing& pairing = k == last ? final_pairing : frames_[k].chosen;
    const std::vector<std::uint32_t> leaves = tree.Leaves();
    for (const std::uint32_t l : leaves) key[l] = {offsets_[l], 1};
    for (const Block& block : pairing) {
      // The ending group goes where its starting group was put.
      std::uint64_t start = block.second.empty() ? 0 : kUnset;
      for (const std::uint32_t j : block.second) start = std::min(start, offsets_[j]);
      if (start == kUnset) {
        reason_ = "rebuild: a starting group has no offset";
        return false;
      }
      for (const std::uint32_t i : block.first) key[i] = {start, 0};
    }
    const std::vector<std::uint32_t> order = tree.KeyedFrontier(key);
    std::uint64_t at = 0;
    for (const std::uint32_t l : order) {
      if (offsets_[l] != kUnset && offsets_[l] != at) {
        reason_ = "rebuild: a stack disagrees with a later one";
        return false;
      }
      offsets_[l] = at;
      at += inst_.items[l].height;
    }
    if (at != load_) {
      reason_ = "rebuild: a stack does not tile the load";
      return false;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (offsets_[i] == kUnset) {
      reason_ = "rebuild: an item was never stacked";
      return false;
    }
    offsets_[i] += inst_.base;
    if (offsets_[i] % inst_.items[i].alignment != 0) {
      reason_ = "the plan breaks an alignment";
      return false;
    }
  }
  return true;
}

}  // namespace tensormem::solver
