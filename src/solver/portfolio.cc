// SPDX-License-Identifier: Apache-2.0
#include "solver/portfolio.h"

#include <algorithm>
#include <optional>

#include "solver/general_search.h"
#include "solver/skyline_search.h"
#include "solver/time_sweep.h"

namespace tensormem::solver {
namespace {

// The Luby sequence 1, 1, 2, 1, 1, 2, 4, 1, ... (i >= 1).
std::uint64_t Luby(std::uint64_t i) {
  for (;;) {
    std::uint64_t k = 1;
    while ((std::uint64_t{1} << k) - 1 < i) ++k;
    if ((std::uint64_t{1} << k) - 1 == i) return std::uint64_t{1} << (k - 1);
    i -= (std::uint64_t{1} << (k - 1)) - 1;
  }
}

// Units of a time sweep's effort that take about as long as one skyline
// node (measured on the N = 1,000 perfect packings: a sweep spends about
// 100 units a millisecond, the skyline configurations 10-20 nodes).
constexpr std::uint64_t kSweepEffortPerNode = 8;
// The sweeps' share of the time on a zero-slack partition, against the
// skyline configurations': 2 to 1. On zero slack the sweep is the engine
// that scales (perfect packings of 1,000 buffers: seeds 1-80 but one fit by
// a sweep within 0.2 s alone, and by no skyline configuration within 60 s;
// a share of 4 to 1 answers them no sooner).
constexpr std::uint64_t kSweepShare = 2;
// The alternate sweeps (TimeSweep::kLaxChance, kStrictChance) join once
// the base pair has spent this much effort per item without a plan: past
// what the base pair needs where it fits at all (N = 1,000 perfect
// packings, seeds 1-80, at a701f05: at most 3,534 units in the better
// direction; the pair spends about twice that), so they cost nothing there
// and share the time evenly after. Where they fit, they fit in one pass (a few
// hundred pairings), so sharing the time six ways costs little.
constexpr std::uint64_t kAlternatesJoinEffortPerItem = 8;

}  // namespace

PartitionSolver::PartitionSolver(const Instance& instance, const SolverParams& params)
    : inst_(instance), params_(params) {
  by_order_.resize(4);
  if (const std::optional<std::uint64_t> load =
          params.tuning.time_sweep ? TimeSweep::ZeroSlackLoad(instance) : std::nullopt) {
    for (const double chance :
         {TimeSweep::kBaseChance, TimeSweep::kLaxChance, TimeSweep::kStrictChance}) {
      sweeps_.push_back(std::make_unique<TimeSweep>(instance, *load, /*reversed=*/false, chance,
                                                    &table_storage_));
      sweeps_.push_back(std::make_unique<TimeSweep>(instance, *load, /*reversed=*/true, chance,
                                                    &table_storage_));
    }
    sweep_done_.assign(sweeps_.size(), 0);
  }
}

PartitionSolver::~PartitionSolver() = default;

// What the turns of one probe share.
struct PartitionSolver::ProbeState {
  std::uint64_t capacity, budget, slice;
  const std::vector<SearchConfig>& portfolio;
  SearchControl& control;
  std::uint64_t spent = 0;  // nodes (and sweep effort) of this probe so far
};

SearchOutcome PartitionSolver::Probe(std::uint64_t capacity, std::uint64_t budget,
                                     SearchControl& control) {
  // Plans are canonical, their tops multiples of the granule: probes at
  // capacities with the same multiple below them are the same probe (and
  // keep the same searches).
  gave_up_ = false;
  general_unproven_ = false;
  capacity = RoundDownTo(capacity, inst_.granule);
  if (inst_.lower_bound > capacity) return SearchOutcome::kExhausted;
  if (inst_.needs_general) return ProbeGeneral(capacity, budget, control);
  std::vector<SearchConfig> portfolio = params_.tuning.portfolio;
  if (portfolio.empty()) portfolio.push_back({});
  KeepOrResetSearches(capacity, portfolio.size());
  ProbeState p{capacity, budget, SliceNodes(), portfolio, control};
  for (;;) {
    if (control.stopped() || p.spent >= budget) return SearchOutcome::kLimit;
    const bool skyline_left = std::find(over_memory_.begin(), over_memory_.end(), 0) != over_memory_.end();
    if (const std::size_t sweep = NextSweep(capacity, skyline_left); sweep < sweeps_.size()) {
      if (SweepTurn(sweep, p)) return SearchOutcome::kFound;
      continue;
    }
    if (!skyline_left) {  // and no sweep left either
      gave_up_ = true;
      return SearchOutcome::kLimit;
    }
    const std::size_t slot = next_;
    next_ = (next_ + 1) % portfolio.size();
    if (over_memory_[slot]) continue;
    if (const std::optional<SearchOutcome> out = SkylineTurn(slot, p)) return *out;
  }
}

SearchOutcome PartitionSolver::ProbeGeneral(std::uint64_t capacity, std::uint64_t budget,
                                            SearchControl& control) {
  // Searched through at this capacity or above already: the same answer
  // (a 3-buffer problem with 8-byte alignment probed its tiny tree 70
  // million times in 10 s before).
  if (general_unproven_at_ && capacity <= *general_unproven_at_) {
    general_unproven_ = true;
    return SearchOutcome::kLimit;
  }
  GeneralSearch search(inst_);
  const SearchOutcome out = search.Run(capacity, budget, control);
  if (out == SearchOutcome::kFound) {
    offsets_ = search.offsets();
    height_ = search.height();
  }
  if (search.exhausted_unproven()) {
    general_unproven_ = true;
    general_unproven_at_ = std::max(general_unproven_at_.value_or(0), capacity);
  }
  return out;
}

void PartitionSolver::KeepOrResetSearches(std::uint64_t capacity, std::size_t configs) {
  if (searches_.size() == configs && capacity == capacity_) return;
  searches_.clear();
  searches_.resize(configs);
  runs_.assign(configs, 0);
  run_nodes_.assign(configs, 0);
  over_memory_.assign(configs, 0);
  capacity_ = capacity;
  // The configuration that found the last plan (at another capacity: the
  // minimise probes) goes first; it is the one most likely to again.
  next_ = winner_ < configs ? winner_ : 0;
}

// A slice is at least one dive through the partition (about one node per
// item): on busy traces (thousands of items) shorter slices would have
// every configuration stop halfway down its first dive, turn after turn.
std::uint64_t PartitionSolver::SliceNodes() const {
  const std::uint64_t nodes = params_.tuning.portfolio_slice_nodes;
  return std::max<std::uint64_t>({nodes, 1, nodes > 1 ? inst_.items.size() + 1 : 1});
}

// The sweeps (capacity permitting: their plans are as high as the load)
// take a turn whenever they are behind their share, the first one included:
// a sweep that fits answers within about a second, and meanwhile the
// anytime answer is the heuristic plan. sweeps_.size(): none now.
std::size_t PartitionSolver::NextSweep(std::uint64_t capacity, bool skyline_left) const {
  std::size_t sweep = sweeps_.size();
  if (sweeps_.empty() || capacity < sweeps_[0]->height() ||
      (skyline_left && sweep_effort_ > kSweepShare * kSweepEffortPerNode * skyline_nodes_))
    return sweep;
  // The base pair first (0, 1), the alternates (2-5) once they join.
  const bool joined = (sweep_done_[0] && sweep_done_[1]) ||
                      sweeps_[0]->effort() + sweeps_[1]->effort() >= kAlternatesJoinEffortPerItem * inst_.items.size();
  const std::size_t active = joined ? sweeps_.size() : 2;
  for (std::size_t k = 0; k < active && sweep == sweeps_.size(); ++k)
    if (!sweep_done_[(next_sweep_ + k) % active]) sweep = (next_sweep_ + k) % active;
  return sweep;
}

// A turn of about a slice (kSweepEffortPerNode units of effort a node);
// true when the sweep found a plan.
bool PartitionSolver::SweepTurn(std::size_t sweep, ProbeState& p) {
  TimeSweep& s = *sweeps_[sweep];
  next_sweep_ = sweep + 1;  // taken modulo the active sweeps
  const std::uint64_t before = s.effort();
  const SearchOutcome out = s.Continue(std::min(kSweepEffortPerNode * p.slice, p.budget - p.spent), p.control);
  p.spent += s.effort() - before;
  sweep_effort_ += s.effort() - before;
  if (out == SearchOutcome::kFound) {
    offsets_ = s.offsets();
    height_ = s.height();
    return true;
  }
  if (out == SearchOutcome::kExhausted) sweep_done_[sweep] = 1;  // no proof: go on
  return false;
}

// A restarting configuration's run ends after Luby(run) x a few nodes per
// item. Weighted restarts learn once per run: shorter runs, more lessons.
std::uint64_t PartitionSolver::RunBudget(std::size_t slot, const SearchConfig& config, std::uint64_t slice) const {
  std::uint64_t unit = std::max<std::uint64_t>(slice, 2 * inst_.items.size());
  if (config.weighted)
    unit = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(params_.tuning.weighted_run_scale * static_cast<double>(unit)));
  return unit * Luby(std::max<std::uint64_t>(runs_[slot], 1));
}

// Configuration `slot`'s search from the start (a restarting one: its next run).
std::unique_ptr<SkylineSearch> PartitionSolver::StartSearch(std::size_t slot, const ProbeState& p) {
  const SearchConfig& config = p.portfolio[slot];
  auto& inst = by_order_[static_cast<std::size_t>(config.order)];
  if (inst.empty()) RankItems(inst_, config.order, nullptr, &inst);
  SkylineOptions options;
  options.dominance = params_.tuning.dominance;
  options.section_inference = params_.tuning.section_inference;
  options.hole_inference = params_.tuning.hole_inference;
  options.tiling = params_.tuning.tiling_inference;
  options.dynamic_decomposition = params_.tuning.dynamic_decomposition;
  options.branching = config.branching;
  options.regroup_ranks = config.order == CanonicalOrder::kTotalFirst;
  options.ranks = &inst;
  options.max_growing_bytes = params_.tuning.search_memory_bytes;
  // The memory for nogoods is shared by the searches that run together.
  options.memo_words = options.memo_words / p.portfolio.size();
  if (config.restarts) {
    ++runs_[slot];
    run_nodes_[slot] = 0;
    options.shuffle_seed = 0x5DEECE66Dull * runs_[slot] + 11 * slot + 1;
    if (config.weighted) {
      if (const std::vector<std::uint32_t>* ranks = WeightedRanks(slot, inst)) {
        options.ranks = ranks;
        options.shuffle_seed = 0;
      }
      options.section_failures = &section_failures_[slot];
    }
  }
  auto search = std::make_unique<SkylineSearch>(inst_, options);
  search->Start(p.capacity);
  return search;
}

// Configuration `slot` runs a slice (a restarting one: at most to the end of
// its run). Its answer when it ends the probe (a plan or a proof).
std::optional<SearchOutcome> PartitionSolver::SkylineTurn(std::size_t slot, ProbeState& p) {
  std::unique_ptr<SkylineSearch>& search = searches_[slot];
  const SearchConfig& config = p.portfolio[slot];
  if (search && config.restarts && run_nodes_[slot] >= RunBudget(slot, config, p.slice)) search.reset();
  if (!search) search = StartSearch(slot, p);
  const std::uint64_t before = search->nodes();
  std::uint64_t step = std::min(p.slice, p.budget - p.spent);
  if (config.restarts) step = std::min(step, RunBudget(slot, config, p.slice) - run_nodes_[slot]);
  const SearchOutcome out = search->Continue(step, p.control);
  p.spent += search->nodes() - before;
  skyline_nodes_ += search->nodes() - before;
  run_nodes_[slot] += search->nodes() - before;
  if (out == SearchOutcome::kFound) {
    winner_ = slot;
    offsets_ = search->offsets();
    height_ = search->height();
    return out;
  }
  if (out == SearchOutcome::kExhausted) return out;
  if (search->over_memory()) {
    // Its path alone outgrew the memory: it stops for good at this capacity.
    search.reset();
    over_memory_[slot] = 1;
    return std::nullopt;
  }
  BoundSearchMemory(slot, p.portfolio);
  return std::nullopt;
}

// Memory: the kept searches' paths (busy traces: thousands of skyline
// offsets trailed per placement) are bounded together; past the bound the
// largest other search is dropped and will start over when its turn comes
// (the running one is always kept, so some search progresses).
void PartitionSolver::BoundSearchMemory(std::size_t running, const std::vector<SearchConfig>& portfolio) {
  std::size_t held = 0, largest = 0;
  std::size_t largest_at = searches_.size();
  for (std::size_t k = 0; k < searches_.size(); ++k) {
    if (!searches_[k]) continue;
    const std::size_t b = searches_[k]->GrowingBytes();
    held += b;
    if (k != running && b > largest) {
      largest = b;
      largest_at = k;
    }
  }
  if (held > params_.tuning.search_memory_bytes && largest_at < searches_.size()) {
    searches_[largest_at].reset();
    if (portfolio[largest_at].restarts) --runs_[largest_at];  // the same run again
  }
}

const std::vector<std::uint32_t>* PartitionSolver::WeightedRanks(
    std::size_t slot, const std::vector<std::uint32_t>& ranks) {
  const std::size_t configs = std::max(params_.tuning.portfolio.size(), slot + 1);
  if (section_failures_.size() < configs) {
    section_failures_.resize(configs);
    section_weights_.resize(configs);
    weighted_ranks_.resize(configs);
  }
  const std::size_t sections = inst_.num_sections;
  std::vector<std::uint32_t>& failures = section_failures_[slot];
  std::vector<double>& weights = section_weights_[slot];
  failures.resize(sections, 0);
  weights.resize(sections, 0.0);
  for (std::size_t s = 0; s < sections; ++s) {
    weights[s] = weights[s] * params_.tuning.restart_weight_decay + failures[s];
    failures[s] = 0;
  }
  const std::size_t n = inst_.items.size();
  std::vector<double> item_weight(n, 0.0);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const Item& it = inst_.items[i];
    for (std::uint32_t q = it.piece_begin; q < it.piece_end; ++q)
      for (std::uint32_t s = inst_.pieces[q].begin; s < inst_.pieces[q].end; ++s)
        item_weight[i] += weights[s];
    any = any || item_weight[i] > 0;
  }
  if (!any) return nullptr;
  std::vector<std::uint32_t> by_weight(n);
  for (std::uint32_t i = 0; i < n; ++i) by_weight[i] = i;
  std::sort(by_weight.begin(), by_weight.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (item_weight[a] != item_weight[b]) return item_weight[a] > item_weight[b];
    return ranks[a] < ranks[b];
  });
  std::vector<std::uint32_t>& out = weighted_ranks_[slot];
  out.assign(n, 0);
  for (std::uint32_t k = 0; k < n; ++k) out[by_weight[k]] = k;
  return &out;
}

}  // namespace tensormem::solver
