// SPDX-License-Identifier: Apache-2.0
// The PQ-tree against brute force over permutations, the subset-sum table
// against brute force over subsets, and the time sweep (zero-slack
// partitions) against the independent validator.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "harness/perfect_packing.h"
#include "solver/instance.h"
#include "solver/pq_tree.h"
#include "solver/subset_sum_table.h"
#include "solver/time_sweep.h"
#include "tensormem/solver.h"
#include "tensormem/validator.h"

namespace tensormem {
namespace {

using solver::PQTree;
using Order = std::vector<std::uint32_t>;

std::set<Order> Frontiers(const PQTree& t) {
  const auto all = t.AllFrontiers();
  return {all.begin(), all.end()};
}

bool Consecutive(const Order& o, const std::vector<std::uint8_t>& wanted, std::size_t count) {
  std::size_t first = o.size(), last = 0;
  for (std::size_t k = 0; k < o.size(); ++k)
    if (wanted[o[k]]) {
      first = std::min(first, k);
      last = k;
    }
  return count == 0 || last - first + 1 == count;
}

std::vector<std::uint8_t> Marks(const std::vector<std::uint32_t>& set, std::size_t n) {
  std::vector<std::uint8_t> m(n, 0);
  for (const std::uint32_t i : set) m[i] = 1;
  return m;
}

Order Iota(std::size_t n) {
  Order o(n);
  std::iota(o.begin(), o.end(), 0u);
  return o;
}

// A tree over `leaves` shaped by `steps` random reductions (those that
// leave some order); marks sized `width`.
PQTree Shaped(const Order& leaves, int steps, std::size_t width, std::mt19937_64& rng) {
  PQTree tree(leaves);
  for (int s = 0; s < steps; ++s) {
    Order subset = leaves;
    std::shuffle(subset.begin(), subset.end(), rng);
    subset.resize(2 + rng() % (leaves.size() - 1));
    PQTree t = tree;
    if (t.Reduce(Marks(subset, width), subset.size())) tree = t;
  }
  return tree;
}

// Every reduction sequence on up to 7 leaves: the tree's orders are exactly
// the permutations keeping every subset so far consecutive; a reduction
// fails exactly when none is left, and leaves the tree as it was.
TEST(PQTree, ReductionsMatchBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 600; ++trial) {
    const std::size_t n = 2 + rng() % 6;
    const Order leaves = Iota(n);
    PQTree tree(leaves);
    std::set<Order> allowed;
    Order p = leaves;
    do allowed.insert(p);
    while (std::next_permutation(p.begin(), p.end()));
    ASSERT_EQ(Frontiers(tree), allowed);
    const int steps = 1 + static_cast<int>(rng() % 5);
    for (int s = 0; s < steps; ++s) {
      Order subset = leaves;
      std::shuffle(subset.begin(), subset.end(), rng);
      subset.resize(2 + rng() % (n - 1));
      const std::vector<std::uint8_t> wanted = Marks(subset, n);
      std::set<Order> kept;
      for (const Order& o : allowed)
        if (Consecutive(o, wanted, subset.size())) kept.insert(o);
      const std::set<Order> before = Frontiers(tree);
      // The index answers without reducing, for this subset and others.
      const PQTree::Index index(tree);
      EXPECT_EQ(index.Admits(subset), !kept.empty()) << "trial " << trial;
      for (int q = 0; q < 4; ++q) {
        Order other = leaves;
        std::shuffle(other.begin(), other.end(), rng);
        other.resize(1 + rng() % n);
        const std::vector<std::uint8_t> marks = Marks(other, n);
        const bool possible = std::any_of(allowed.begin(), allowed.end(), [&](const Order& o) {
          return Consecutive(o, marks, other.size());
        });
        EXPECT_EQ(index.Admits(other), possible) << "trial " << trial << " question " << q;
      }
      const bool ok = tree.Reduce(wanted, subset.size());
      if (kept.empty()) {
        ASSERT_FALSE(ok) << "trial " << trial;
        ASSERT_EQ(Frontiers(tree), before) << "a failed reduction changed the tree";
        break;
      }
      ASSERT_TRUE(ok) << "trial " << trial << ": " << kept.size() << " orders remain";
      allowed = kept;
      ASSERT_EQ(Frontiers(tree), allowed) << "trial " << trial << " step " << s;
      ASSERT_EQ(Frontiers(tree.Compacted()), allowed);
    }
  }
}

// Replace swaps the consecutive block for any order of the new leaves.
TEST(PQTree, ReplaceSwapsTheBlockForAnyOrderOfTheNewLeaves) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 3 + rng() % 4;
    const Order leaves = Iota(n);
    PQTree tree = Shaped(leaves, 2, n + 3, rng);
    Order group = leaves;
    std::shuffle(group.begin(), group.end(), rng);
    group.resize(1 + rng() % n);
    const std::vector<std::uint8_t> wanted = Marks(group, n + 3);
    if (!tree.Reduce(wanted, group.size())) continue;
    const Order fresh = {static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n + 1)};
    std::set<Order> expected;
    for (const Order& o : Frontiers(tree)) {
      Order base;
      std::size_t at = 0;
      for (const std::uint32_t l : o) {
        if (!wanted[l]) {
          base.push_back(l);
        } else if (at == 0 || base.size() < at) {
          at = base.size() + 1;  // where the block was (1-based: 0 means not yet)
        }
      }
      for (const Order& f : {fresh, Order{fresh[1], fresh[0]}}) {
        Order r(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(at - 1));
        r.insert(r.end(), f.begin(), f.end());
        r.insert(r.end(), base.begin() + static_cast<std::ptrdiff_t>(at - 1), base.end());
        expected.insert(r);
      }
    }
    ASSERT_TRUE(tree.Replace(wanted, group.size(), fresh));
    ASSERT_EQ(Frontiers(tree), expected) << "trial " << trial;
  }
}

// Keys taken from an allowed order give back that order.
TEST(PQTree, KeyedFrontierFollowsTheKeys) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 2 + rng() % 6;
    const Order leaves = Iota(n);
    const PQTree tree = Shaped(leaves, 3, n, rng);
    const auto all = tree.AllFrontiers();
    const Order& target = all[rng() % all.size()];
    std::vector<std::pair<std::uint64_t, std::uint32_t>> key(n);
    for (std::size_t k = 0; k < n; ++k) key[target[k]] = {k, 0};
    ASSERT_EQ(tree.KeyedFrontier(key), target) << "trial " << trial;
  }
}

TEST(SubsetSumTable, ReachesExactlyTheSubsetSums) {
  std::mt19937_64 rng(7);
  // Every other table takes its words from a storage that earlier (larger
  // or smaller) tables gave back: their bits must not leak into it.
  solver::SubsetSumStorage storage;
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = round % 11;
    // Sizes that share a factor (the table works in its units) and some
    // that do not; now and then one past 64 units (a shift of whole words).
    const std::uint64_t unit = std::array<std::uint64_t, 4>{1, 3, 64, 1000}[round % 4];
    std::vector<std::uint64_t> sizes(n);
    for (std::uint64_t& v : sizes) v = unit * (1 + rng() % (round % 3 == 0 ? 200 : 20));
    std::uint64_t total = 0;
    for (const std::uint64_t v : sizes) total += v;
    const std::uint64_t max_sum = round % 5 == 0 ? total / 2 : total;
    solver::SubsetSumTable table(round % 2 == 1 ? &storage : nullptr);
    ASSERT_TRUE(table.Build(sizes, max_sum));
    for (std::size_t i = 0; i <= n; ++i) {
      std::set<std::uint64_t> sums;
      for (std::uint32_t mask = 0; mask < (1u << (n - i)); ++mask) {
        std::uint64_t s = 0;
        for (std::size_t k = 0; k < n - i; ++k)
          if (mask >> k & 1) s += sizes[i + k];
        sums.insert(s);
      }
      for (std::uint64_t s = 0; s <= total + unit; ++s)
        ASSERT_EQ(table.Reaches(i, s), s <= max_sum && sums.count(s) == 1)
            << "round " << round << " suffix " << i << " sum " << s;
    }
  }
}

TEST(SubsetSumTable, StorageIsReusedAndBounded) {
  solver::SubsetSumStorage storage;
  std::vector<std::uint64_t> sizes;  // 1000-1039: 41 rows of 40,781 sums (unit 1)
  for (std::uint64_t v = 1000; v < 1040; ++v) sizes.push_back(v);
  const std::uint64_t total = 40780;
  {
    solver::SubsetSumTable outer(&storage), inner(&storage);
    ASSERT_TRUE(outer.Build(sizes, total));
    ASSERT_TRUE(inner.Build(sizes, total));
    EXPECT_EQ(storage.spare(), 0u);
  }
  // Both gave their words back; the next two tables take them, no new ones.
  ASSERT_EQ(storage.spare(), 2u);
  const std::size_t bytes = storage.spare_bytes();
  EXPECT_GE(bytes, 2 * 41 * (total / 64 + 1) * sizeof(std::uint64_t));
  {
    solver::SubsetSumTable a(&storage), b(&storage);
    ASSERT_TRUE(a.Build(sizes, total));
    EXPECT_EQ(storage.spare(), 1u);
    ASSERT_TRUE(b.Build({1000, 2000}, 3000));  // takes the other, however small it needs
    EXPECT_EQ(storage.spare(), 0u);
    EXPECT_TRUE(a.Reaches(0, total));
    EXPECT_TRUE(b.Reaches(0, 3000));
    EXPECT_FALSE(b.Reaches(0, 4000));
  }
  EXPECT_EQ(storage.spare_bytes(), bytes);
  // At most kMaxSpare vectors and kMaxSpareBytes together, the widest kept.
  for (std::size_t words : {1u << 10, 1u << 20, 1u << 19, 1u << 20, 1u << 12, 1u << 18}) {
    std::vector<std::uint64_t> v;
    v.reserve(words);
    storage.Give(std::move(v));
    EXPECT_LE(storage.spare(), solver::SubsetSumStorage::kMaxSpare);
    EXPECT_LE(storage.spare_bytes(), solver::SubsetSumStorage::kMaxSpareBytes);
  }
  EXPECT_EQ(storage.Take().capacity(), std::size_t{1} << 20);  // 8 MiB: the widest
  storage.Give({});  // nothing to keep
  EXPECT_LE(storage.spare(), solver::SubsetSumStorage::kMaxSpare - 1);
}

TEST(SubsetSumTable, RefusesWhatItCannotHold) {
  solver::SubsetSumTable table;
  EXPECT_FALSE(table.Build({5, 0, 3}, 8));  // a size of 0
  EXPECT_FALSE(table.Build({1, 2}, solver::SubsetSumTable::kMaxBits));  // too many sums
  EXPECT_FALSE(table.Build({1}, std::numeric_limits<std::uint64_t>::max()));
  // The common divisor brings a large sum within the limit.
  ASSERT_TRUE(table.Build({std::uint64_t{1} << 40, std::uint64_t{3} << 40}, std::uint64_t{4} << 40));
  EXPECT_TRUE(table.Reaches(0, std::uint64_t{4} << 40));
  EXPECT_FALSE(table.Reaches(0, std::uint64_t{2} << 40));
  EXPECT_TRUE(table.Build({}, 10));  // no sizes: the empty sum
  EXPECT_TRUE(table.Reaches(0, 0));
  EXPECT_FALSE(table.Reaches(0, 1));
}

TEST(PQTree, RefusesSubsetsNotInTheTree) {
  const Order leaves = {0, 1, 2};
  PQTree tree(leaves);
  EXPECT_FALSE(tree.Reduce(Marks({1, 5}, 8), 2));  // 5 is not a leaf
  EXPECT_FALSE(PQTree().Reduce(Marks({1, 2}, 8), 2));
  EXPECT_FALSE(tree.Replace(Marks({1}, 8), 1, {}));  // no new leaves
  EXPECT_EQ(Frontiers(tree).size(), 6u);
  const PQTree::Index index(tree);
  EXPECT_FALSE(index.Admits(Order{1, 5}));  // 5 is not a leaf
  EXPECT_FALSE(index.Admits(Order{1, 1, 2}));  // a leaf twice
  EXPECT_TRUE(index.Admits(Order{2, 0}));
  EXPECT_FALSE(PQTree::Index(PQTree()).Admits(Order{1, 2}));
}

// Runs the sweep on every partition of `p`: false when one does not fit.
// The plan, completed by the presolve's placements, goes to the validator.
bool SweepFits(const Problem& p, bool reversed, std::string* why,
               std::uint64_t effort = 200'000,
               double chance = solver::TimeSweep::kBaseChance) {
  Result<solver::Presolved> pre = solver::Presolve(p, {});
  if (!pre.ok()) {
    *why = pre.status().ToString();
    return false;
  }
  OffsetsPlan plan;
  plan.offsets.assign(p.buffers.size(), 0);
  for (const solver::Placement& pl : pre->placed) plan.offsets[pl.buffer] = pl.offset;
  for (const solver::Instance& inst : pre->instances) {
    const std::optional<std::uint64_t> load = solver::TimeSweep::ZeroSlackLoad(inst);
    if (!load) {
      *why = "a partition is not zero slack";
      return false;
    }
    solver::TimeSweep sweep(inst, *load, reversed, chance);
    solver::SearchControl control(1e18, 0, false, nullptr, 1.0);
    if (sweep.Continue(effort, control) != solver::SearchOutcome::kFound) {
      *why = "no fit: " + sweep.reason();
      return false;
    }
    for (std::size_t k = 0; k < inst.items.size(); ++k)
      plan.offsets[inst.items[k].buffer] = sweep.offsets()[k];
  }
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    plan.total = std::max(plan.total, plan.offsets[i] + p.buffers[i].size);
  const Status valid = ValidateOffsetsPlan(p, plan);
  if (!valid.ok()) {
    *why = valid.ToString();
    return false;
  }
  if (plan.total != *p.capacity) {
    *why = "height " + std::to_string(plan.total);
    return false;
  }
  return true;
}

class TimeSweepPerfectPacking : public ::testing::TestWithParam<bool> {};

TEST_P(TimeSweepPerfectPacking, FitsAtTheOptimumAndValidates) {
  // Node-limited, so machine independent. The prototype fit all of these
  // forwards; backwards fits most (docs/design/solver.md).
  int fits = 0, runs = 0;
  for (std::size_t n : {20u, 60u, 100u, 200u}) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const Problem p = solver::PerfectPacking(solver::PerfectPackingVariant(n, seed));
      std::string why;
      const bool fit = SweepFits(p, GetParam(), &why);
      ++runs;
      fits += fit ? 1 : 0;
      if (!GetParam()) {
        EXPECT_TRUE(fit) << "n " << n << " seed " << seed << ": " << why;
      }
      // A failure is "no fit", never a plan the validator refuses.
      if (!fit) {
        EXPECT_EQ(why.rfind("no fit", 0), 0u) << why;
      }
    }
  }
  EXPECT_GE(fits, runs * 3 / 4);
}

TEST(TimeSweep, ThousandBuffersFitOneWayOrTheOther) {
  // The N = 1,000 perfect packings of the benchmark (seeds 1-10, the five
  // shapes twice): each fits forwards or backwards within 20,000 units of
  // effort (the most one needed on 2026-11-24 was 5,300), as the
  // portfolio runs both. Effort, not time: machine independent.
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const Problem p = solver::PerfectPacking(solver::PerfectPackingVariant(1000, seed));
    std::string forwards, backwards;
    const bool fit = SweepFits(p, false, &forwards, 20'000) || SweepFits(p, true, &backwards, 20'000);
    EXPECT_TRUE(fit) << "seed " << seed << ": " << forwards << "; " << backwards;
    for (const std::string& why : {forwards, backwards}) {
      if (!why.empty()) {
        EXPECT_EQ(why.rfind("no fit", 0), 0u) << why;
      }
    }
  }
}

// Seeds the base sweeps once missed (N = 1,000, seeds 1-200: 195 fit
// within 20 s, docs/design/solver.md). 96 and 151: the first pass of the
// enumeration ran into the cap and starved the pass with one dense group;
// each pass now has its own cap, and they fit forwards in a few hundred
// pairings. 11: a coarse pairing (a chance twin, then the rest of the
// boundary as one block) fails some 70 boundaries later, and neither
// direction comes back within the effort; the lax threshold takes the
// finer pairing first. 175: only the strict threshold's order fits it.
TEST(TimeSweep, PassCapsAndTheAlternateThresholdsFitTheSeedsOnceMissed) {
  for (const std::uint64_t seed : {96u, 151u}) {
    const Problem p = solver::PerfectPacking(solver::PerfectPackingVariant(1000, seed));
    std::string why;
    EXPECT_TRUE(SweepFits(p, false, &why, 20'000)) << "seed " << seed << ": " << why;
  }
  for (const auto& [seed, chance] : {std::pair{11u, solver::TimeSweep::kLaxChance},
                                     std::pair{175u, solver::TimeSweep::kStrictChance}}) {
    const Problem p = solver::PerfectPacking(solver::PerfectPackingVariant(1000, seed));
    std::string why;
    EXPECT_FALSE(SweepFits(p, false, &why, 20'000)) << "seed " << seed;
    EXPECT_FALSE(SweepFits(p, true, &why, 20'000)) << "seed " << seed;
    EXPECT_TRUE(SweepFits(p, false, &why, 20'000, chance)) << "seed " << seed << ": " << why;
  }
}

INSTANTIATE_TEST_SUITE_P(Directions, TimeSweepPerfectPacking, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Backwards" : "Forwards";
                         });

Problem FromTriples(const std::vector<std::array<std::uint64_t, 3>>& t, std::uint64_t capacity) {
  Problem p;
  for (const auto& [lo, up, size] : t) {
    Buffer b;
    b.id = std::to_string(p.buffers.size());
    b.first_task = static_cast<TaskIndex>(lo);
    b.last_task = static_cast<TaskIndex>(up - 1);  // [lo, up) in tasks
    b.size = size;
    p.buffers.push_back(b);
  }
  p.capacity = capacity;
  return p;
}

TEST(TimeSweep, AppliesOnlyToZeroSlack) {
  // Live bytes 10, 10, 5: not the same in every section.
  const Problem uneven = FromTriples({{0, 2, 5}, {0, 1, 5}, {1, 3, 5}}, 10);
  Result<solver::Presolved> pre = solver::Presolve(uneven, {});
  ASSERT_TRUE(pre.ok());
  for (const solver::Instance& inst : pre->instances)
    EXPECT_FALSE(solver::TimeSweep::ZeroSlackLoad(inst).has_value());
  // Live bytes 10 throughout: it applies, and fits.
  const Problem even = FromTriples({{0, 2, 4}, {0, 1, 6}, {1, 3, 6}, {2, 3, 4}}, 10);
  std::string why;
  EXPECT_TRUE(SweepFits(even, false, &why)) << why;
  EXPECT_TRUE(SweepFits(even, true, &why)) << why;
}

TEST(TimeSweep, APlanThatBreaksAnAlignmentIsNotAnswered) {
  // Zero slack (8 bytes live throughout), but a 3-byte and a 5-byte buffer
  // side by side under 8 bytes cannot both sit at even offsets: the sweep's
  // plan is refused, and the solve still answers with a valid plan above 8.
  const Problem p = FromTriples({{0, 2, 3}, {0, 1, 5}, {1, 2, 5}}, 8);
  solver::PresolveOptions options;
  options.alignment = 2;  // the 3-byte buffer is then not moved to the bottom
  Result<solver::Presolved> pre = solver::Presolve(p, options);
  ASSERT_TRUE(pre.ok());
  ASSERT_EQ(pre->instances.size(), 1u);
  ASSERT_TRUE(solver::TimeSweep::ZeroSlackLoad(pre->instances[0]).has_value());
  SolverParams params;
  params.alignment = 2;
  params.time_limit_seconds = 5;
  Result<SolveResult> fit = SolveOffsets(p, params);  // within the problem's 8 bytes
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->status, SolveStatus::kInfeasible);
  Problem open = p;
  open.capacity.reset();
  Result<SolveResult> r = SolveOffsets(open, params);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_plan);
  EXPECT_TRUE(ValidateOffsetsPlan(open, r->plan, 2).ok());
  EXPECT_GT(r->height, 8u);
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
}

// Fit at the problem's capacity within a node limit (machine independent).
SolverParams FitWithin(const Problem& p, std::uint64_t nodes) {
  SolverParams params;
  params.goal = SolveGoal::kFit;
  params.capacity = *p.capacity;
  params.time_limit_seconds = std::numeric_limits<double>::infinity();
  params.node_limit = nodes;
  return params;
}

// In the solver: a 1,000-buffer perfect packing that the sweep fits in one
// pass (seed 3) is optimal within a node limit that the skyline portfolio
// alone does not reach it in.
TEST(TimeSweep, TheSolverAnswersWithIt) {
  const Problem p = solver::PerfectPacking(solver::PerfectPackingVariant(1000, 3));
  SolverParams params = FitWithin(p, 20'000);
  Result<SolveResult> with = SolveOffsets(p, params);
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with->status, SolveStatus::kOptimal);
  EXPECT_TRUE(ValidateOffsetsPlan(p, with->plan).ok());
  params.tuning.time_sweep = false;
  Result<SolveResult> without = SolveOffsets(p, params);
  ASSERT_TRUE(without.ok());
  EXPECT_NE(without->status, SolveStatus::kOptimal);
}

// And seed 11, which only the lax sweeps fit: once the base pair has
// spent its effort they join, and the solve is optimal within 20,000 nodes
// (4,060 when written).
TEST(TimeSweep, TheSolverRunsTheAlternateSweepsWhenTheBasePairStalls) {
  const Problem p = solver::PerfectPacking(solver::PerfectPackingVariant(1000, 11));
  Result<SolveResult> r = SolveOffsets(p, FitWithin(p, 20'000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, SolveStatus::kOptimal) << r->reason;
  EXPECT_TRUE(ValidateOffsetsPlan(p, r->plan).ok());
}

}  // namespace
}  // namespace tensormem
