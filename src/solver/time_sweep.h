// SPDX-License-Identifier: Apache-2.0
// The time sweep: an engine for zero-slack partitions, where every time
// section holds exactly the same live bytes L (perfect packings). A plan of
// height L is then a sequence of stacks: in every section the live buffers,
// listed by offset, tile [0, L).
//
// At a boundary between sections the buffers that end free byte ranges and
// the buffers that start must fill exactly those ranges. So a boundary is a
// pairing: groups of ending buffers, each consecutive in the stack, each
// matched with a group of starting buffers of the same total size, which
// takes its place. Which stack orders are still possible is a
// consecutive-ones question that a PQ-tree (pq_tree.h) answers for all
// orders at once: "this group must be consecutive" is a reduction, "this
// group gives way to those buffers" swaps its block for a P-node. The only
// branching left is the pairing at each boundary (a subset-sum question),
// where the skyline engine branches on every placement.
//
// Pairings are tried in this order: fine ones whose equal sums are unlikely
// to be chance (the expected number of chance matches, from the count of
// candidate subsets over the spread of their sums, below 1 %), then all
// ending buffers as one group, then the other fine ones. Every group holds
// a pivot buffer, the one with the fewest likely matches (an exact twin
// across, else a match unlikely to be chance, else the smallest). A group's
// matches are sought by count, few buffers or all but few first
// (complements), through a SubsetSumTable of the other side's reachable
// sums, so that no search enters a branch without a match. The enumeration
// is capped (on a side of more than 15 buffers, groups of up to 5 or of
// all but 1-4; 32 matches per group; 2^18 steps per pass, so that a pass
// lost among chance matches does not starve the next), so running out of
// pairings is not a proof: kExhausted from this engine only says that it
// has nothing left to try. The plan is rebuilt backwards: the last stack is any order its tree
// allows, and each earlier stack is the order its tree allows that agrees
// with the offsets the later stacks fixed.
//
// Backjumping: when a boundary has no pairing left, the culprit is taken to
// be where its ending buffers were paired in: the search jumps back to the
// latest boundary that started one of them, skipping the boundaries in
// between, and that boundary inherits the blame of the failure (conflict-
// directed backjumping, with the conflict set approximated: a pairing in
// between can also constrain them, so the jump may skip a plan; the
// enumeration is no proof anyway). docs/design/solver.md ("Perfect packings: the time sweep") has the
// figures; research/zero_slack_sweep.py is the prototype.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solver/instance.h"
#include "solver/pq_tree.h"
#include "solver/search_control.h"
#include "solver/subset_sum_table.h"

namespace tensormem::solver {

class TimeSweep {
 public:
  // The load every section of `instance` holds when the sweep applies to it
  // (plain items only, no obstacles, and the same live bytes in every
  // section); nullopt otherwise.
  static std::optional<std::uint64_t> ZeroSlackLoad(const Instance& instance);

  // The chance threshold of the pairing order (above): a match is likely
  // chance when the expected number of equal sums exceeds this share of
  // their spread.
  static constexpr double kBaseChance = 0.01;
  // Two others, for the alternate sweeps (portfolio.h): each orders the
  // pairings differently (lax: more matches count as unlikely, so finer
  // pairings come before coarse ones; strict: fewer do). Alone each fits
  // fewer directions but other seeds (N = 1,000 perfect packings, seeds
  // 1-200, 3 s a direction: 1 % fits 197 seeds, all but 11, 97 and 175;
  // 10 % 198, all but 91 and 175; 0.1 % 188, with 175).
  static constexpr double kLaxChance = 0.1;
  static constexpr double kStrictChance = 0.001;

  // `load`: the instance's ZeroSlackLoad. `reversed`: sweep from the last
  // section to the first (some instances are easy one way only). `chance`
  // in (0, 1]: the chance threshold. `storage`: where the enumeration's
  // subset-sum tables come from (the sweeps of a partition share one; it
  // must outlive the sweep); null: the sweep's own.
  TimeSweep(const Instance& instance, std::uint64_t load, bool reversed,
            double chance = kBaseChance, SubsetSumStorage* storage = nullptr);

  // Goes on for up to `budget` nodes (one node: one pairing tried at one
  // boundary). kFound: offsets() is a plan of height base + load.
  // kExhausted: nothing left to try (not a proof, see above). kLimit: the
  // budget or the solve's limits.
  SearchOutcome Continue(std::uint64_t budget, SearchControl& control);

  const std::vector<std::uint64_t>& offsets() const { return offsets_; }
  std::uint64_t height() const { return inst_.base + load_; }
  std::uint64_t nodes() const { return nodes_; }
  // Nodes plus long enumerations (2^10 steps a node): what the portfolio's
  // turns count, so that a sweep stuck enumerating still yields its turn.
  std::uint64_t effort() const { return effort_; }
  // Where a sweep fails (solver_bench's TimeSweep): the furthest boundary
  // reached, of how many, and the enumerations cut at their step cap.
  std::size_t deepest() const { return deepest_; }
  std::size_t boundaries() const { return num_boundaries_; }
  std::uint64_t capped() const { return capped_; }
  // Why the sweep ran out, when it did.
  const std::string& reason() const { return reason_; }

 private:
  // One pairing: (ending group, starting group) blocks.
  using Block = std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>;
  using Pairing = std::vector<Block>;
  struct Frame {
    PQTree in;        // the live buffers' tree before the boundary
    PQTree reduced;   // `in` with the chosen pairing's ending groups made consecutive
    std::vector<Pairing> batch;  // the next pairings to try
    std::size_t pos = 0;         // into batch
    std::size_t enumerated = 0;  // pairings produced so far (batches before this one)
    std::size_t refills = 0;
    bool more = true;  // the enumeration may produce more
    Pairing chosen;
    // Backjumping: earlier boundaries blamed for failures below this one
    // (sorted, unique).
    std::vector<std::uint32_t> conflict;
  };
  class Enumerator;

  void ResetFrame(std::size_t k, PQTree in);
  // Continue's steps.
  SearchOutcome Finish();
  void Backjump();
  void TryNextPairing(Frame& f);
  // Fills frames_[k].batch with the next pairings; false when stopped by
  // the limits (the batch is then redone on the next call).
  bool Refill(std::size_t k, SearchControl& control);
  void Mark(const std::vector<std::uint32_t>& items);
  void Unmark(const std::vector<std::uint32_t>& items);
  // Applies a pairing at boundary k: the reduced tree and the next one.
  bool Apply(std::size_t k, const Pairing& p, PQTree* reduced, PQTree* next);
  bool Rebuild();

  const Instance& inst_;
  std::uint64_t load_ = 0;
  double chance_ = kBaseChance;
  std::uint32_t num_boundaries_ = 0;  // sections + 1
  // Per boundary (in sweep order): the items that end / start there.
  std::vector<std::vector<std::uint32_t>> ending_, starting_;
  std::vector<std::uint32_t> start_;  // per item: the boundary it starts at
  std::vector<Frame> frames_;
  std::size_t depth_ = 0;  // the boundary being decided
  bool started_ = false, done_ = false;
  std::vector<std::uint8_t> mark_;
  SubsetSumStorage* shared_storage_ = nullptr;  // or own_storage_
  SubsetSumStorage own_storage_;
  std::vector<std::uint64_t> offsets_;
  std::uint64_t nodes_ = 0, effort_ = 0;
  std::size_t deepest_ = 0;
  std::uint64_t capped_ = 0, work_ = 0;
  std::string reason_;
};

}  // namespace tensormem::solver
