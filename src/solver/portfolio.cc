#include "solver/portfolio.h"

#include <algorithm>

#include "solver/general_search.h"
#include "solver/skyline_search.h"

namespace tensormem::solver {

PartitionSolver::PartitionSolver(const Instance& instance, const SolverParams& params)
    : inst_(instance), params_(params) {
  by_order_.resize(4);
}

SearchOutcome PartitionSolver::Probe(std::uint64_t capacity, std::uint64_t budget,
                                     SearchControl& control) {
  if (inst_.lower_bound > capacity) return SearchOutcome::kExhausted;
  if (inst_.needs_general) {
    GeneralSearch search(inst_);
    const SearchOutcome out = search.Run(capacity, budget, control);
    if (out == SearchOutcome::kFound) {
      offsets_ = search.offsets();
      height_ = search.height();
    }
    return out;
  }
  SkylineOptions options;
  options.dominance = params_.dominance;
  options.section_inference = params_.section_inference;
  options.dynamic_decomposition = params_.dynamic_decomposition;
  std::vector<SearchConfig> portfolio = params_.portfolio;
  if (portfolio.empty()) portfolio.push_back({});
  std::uint64_t spent = 0;
  std::uint64_t round = std::max<std::uint64_t>(params_.initial_node_budget, 1);
  for (;;) {
    for (const SearchConfig& config : portfolio) {
      if (control.stopped() || spent >= budget) return SearchOutcome::kLimit;
      auto& inst = by_order_[static_cast<std::size_t>(config.order)];
      if (!inst) {
        inst = std::make_unique<Instance>(inst_);
        AssignRanks(*inst, config.order);
      }
      options.branching = config.branching;
      SkylineSearch search(*inst, options);
      const SearchOutcome out = search.Run(capacity, std::min(round, budget - spent), control);
      spent += search.nodes();
      if (out == SearchOutcome::kFound) {
        offsets_ = search.offsets();
        height_ = search.height();
        return out;
      }
      if (out == SearchOutcome::kExhausted) return out;
    }
    round = round > UINT64_MAX / 2 ? UINT64_MAX : round * 2;
  }
}

}  // namespace tensormem::solver
