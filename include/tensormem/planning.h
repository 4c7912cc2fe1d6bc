// SPDX-License-Identifier: Apache-2.0
// Static planning: one small dispatcher over every strategy, keyed by enum.
//
// Shared-objects strategies group tensors onto buffers ("objects"); offset
// strategies place every tensor at a byte offset of one arena. Each strategy
// lives in its own file under src/planning/ and its header says how it works.
// Every plan the dispatcher returns has been checked by the validator and
// carries its lower bound and planning time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "tensormem/defaults.h"
#include "tensormem/problem.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

enum class ObjectsStrategy {
  kNaive,            // one object per tensor
  kEquality,         // reuse a free object of exactly equal size
  kGreedyInOrder,    // in order, least-waste free object (optional reallocation graph)
  kGreedyByBreadth,  // widest tasks first, best-fitting non-conflicting object
  kGreedyBySize,     // size-distance priority over positional maximums
  kMinCostFlow,      // min-cost max-flow over "finished -> wants" reuse edges
  kTightestFit,      // ours: size descending, the shortest free stretch of an object
  kGreedyBest,       // greedy_by_size, or greedy_by_breadth when strictly smaller
  kBest,             // ours: every fast strategy, keep the cheapest
};

enum class OffsetsStrategy {
  kNaive,            // prefix sums, no reuse
  kGreedyBySize,     // size descending, best-fit gap among conflicting tensors
  kGreedyByBreadth,  // widest tasks first, then size; best-fit gap
  kFromObjects,      // the objects plan of PlanParams::from_objects laid back to back
  kArena,            // TFLite ArenaPlanner order: whole-run tensors, size desc, first task
  kGreedyInOrder,    // by first task (an online best-fit allocator's replay); best-fit gap
  kBest,             // ours: every fast offset strategy, keep the smallest arena
  kExact,            // ours: branch and bound (src/solver), anytime within a time limit
};

std::string_view Name(ObjectsStrategy strategy);
std::string_view Name(OffsetsStrategy strategy);
// Accepts the snake_case names above ("greedy_by_size"); the error lists them.
Result<ObjectsStrategy> ParseObjectsStrategy(std::string_view name);
Result<OffsetsStrategy> ParseOffsetsStrategy(std::string_view name);
// Every strategy, the near-linear ones first (objects: naive, equality,
// greedy_in_order, tightest_fit; offsets: naive, greedy_in_order), best (and
// exact) last: `tensormem plan -s all` runs them in this order under one
// time limit, so a slow one cannot keep the fast ones from running.
std::span<const ObjectsStrategy> AllObjectsStrategies();
std::span<const OffsetsStrategy> AllOffsetsStrategies();

// reallocation_graph[i] lists (sorted) the tensors whose object tensor i may
// take: pairs that may share memory under any parallel execution order.
using ReallocationGraph = std::vector<std::vector<std::size_t>>;

// From a dependency graph of tasks (dependencies[t] = tasks that consume t's
// output): an edge root - v when v is reached (strictly) from every child of
// root; symmetric, sorted.
ReallocationGraph BuildReallocationGraph(std::span<const std::vector<std::size_t>> dependencies);

// Every knob of the static planners, with defaults.
struct PlanParams {
  // Offsets: every offset is a multiple of this and of the buffer's own
  // alignment (the larger of the two). A power of two (ValidateAlignment).
  std::uint64_t alignment = defaults::kPlanAlignment;
  // Use the faithful (quadratic) transcription of the peer's algorithm
  // instead of the scalable default. Results are identical where both exist;
  // this exists for conformance checks and as a reference.
  bool reference = false;
  // greedy_in_order only: restrict reuse to reallocation-graph neighbours.
  const ReallocationGraph* reallocation_graph = nullptr;
  // kArena: the buffers TensorFlow Lite places first (allocated at the first
  // node and never freed), one flag per buffer, when the caller knows them
  // (the graph planner does). Null: the buffers living from the problem's
  // first task to its last.
  const std::vector<bool>* arena_whole_run = nullptr;
  // kFromObjects: which shared-objects plan to lay out.
  ObjectsStrategy from_objects = ObjectsStrategy::kBest;
  // Wall-clock limit of the whole call, every strategy included: a
  // heuristic that cannot finish returns kDeadlineExceeded; best returns the
  // cheapest plan of the candidates that finished (kDeadlineExceeded when
  // none did); exact returns its best plan so far (kDeadlineExceeded when
  // even its starting heuristic did not finish). The clock is read about
  // every 1,024 placements. +infinity: none. 0: the heuristics are untimed
  // and neither exact nor best's polish searches (the heuristic plan). Must not be negative.
  double time_limit_seconds = defaults::kTimeLimitSeconds;
  // Polled with the clock: returning true stops the planning as an expired
  // time limit does. For Ctrl-C in bindings, a caller's own cancel flag.
  std::function<bool()> should_stop;
  // kBest: when the best heuristic plan misses the lower bound on a problem
  // of at most polish_max_buffers buffers, the exact solver continues from
  // it for at most polish_nodes search nodes (the same answer on every
  // machine) and PolishTimeLimit(*this) seconds (a safety cap). 0 nodes
  // turns this off. The plan says what the polish spent (OffsetsPlan::polish).
  std::uint64_t polish_nodes = defaults::kPolishNodes;
  std::size_t polish_max_buffers = 2'000;
  double polish_seconds = defaults::kPolishSeconds;
  double polish_time_share = defaults::kPolishTimeShare;  // of time_limit_seconds
  // Check every plan with the validator before returning it.
  bool validate = true;
  // Offsets kBest: its candidate strategies run on this many threads (0: one
  // per hardware thread, at most kMaxPlanThreads). Unless the time limit
  // passes, the plan is the one a single thread returns; only the time
  // changes (when it passes, candidates one thread would not have reached
  // may have finished). should_stop is then called from the calling thread
  // only. Every other strategy runs on one (objects kBest too: see
  // src/planning/objects/best.cc).
  unsigned threads = 1;
};
inline constexpr unsigned kMaxPlanThreads = 256;

// Seconds offsets kBest's exact polish may take: the smaller of
// polish_seconds and polish_time_share of time_limit_seconds (and never
// more than what is left of the limit when the polish starts).
double PolishTimeLimit(const PlanParams& params);

// Shared-objects plan for 1-D sizes.
Result<ObjectsPlan> PlanObjects(std::span<const UsageRecord> records, ObjectsStrategy strategy,
                                const PlanParams& params = {});
// Shared-objects plan for 2-D/3-D/4-D extents: naive, equality (by shape) and
// greedy_in_order (objects must cover the tensor in every dimension).
Result<ExtentObjectsPlan> PlanObjects(std::span<const ExtentRecord> records,
                                      ObjectsStrategy strategy, const PlanParams& params = {});

// Offsets plan. Fixed offsets and gaps are honoured by every strategy
// except naive and from_objects, which reject problems that have them.
Result<OffsetsPlan> PlanOffsets(const Problem& problem, OffsetsStrategy strategy,
                                const PlanParams& params = {});
Result<OffsetsPlan> PlanOffsets(std::span<const UsageRecord> records, OffsetsStrategy strategy,
                                const PlanParams& params = {});

// Objects laid back to back in id order (each start a multiple of
// `alignment`, a power of two); each tensor takes its object's offset. total = end of the last object a tensor uses.
Result<OffsetsPlan> ObjectsToOffsets(const ObjectsPlan& plan, std::uint64_t alignment = 1);

}  // namespace tensormem
