// SPDX-License-Identifier: Apache-2.0
// The scheduler: its step model agrees with ComputeLiveness, the exact
// search equals a brute force over all topological orders, no order is worse
// than the given one, every order runs under the execution checker, and the
// limits stop the search with a valid answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "graph/graph_test_util.h"
#include "graph/schedule_model.h"
#include "harness/graph_generators.h"
#include "tensormem/defaults.h"
#include "tensormem/graph.h"
#include "tensormem/planning.h"
#include "tensormem/schedule.h"

namespace tensormem {
namespace {

using internal::GenerateRandWireGraph;
using internal::OrderModel;
using internal::RandWireParams;
using testing::AddNode;
using testing::MakeGraph;
using testing::MakeRandomGraph;

// A uniformly random ready node at each step.
std::vector<int> RandomOrder(const Graph& g, std::uint64_t seed) {
  const std::size_t n = g.nodes.size();
  std::vector<int> writer(g.tensors.size(), -1), order;
  for (std::size_t v = 0; v < n; ++v)
    for (int t : g.nodes[v].outputs)
      if (t >= 0) writer[static_cast<std::size_t>(t)] = static_cast<int>(v);
  std::vector<char> done(n, 0);
  std::mt19937_64 rng(seed);
  while (order.size() < n) {
    std::vector<int> ready;
    for (std::size_t v = 0; v < n; ++v) {
      bool ok = !done[v];
      for (int t : g.nodes[v].inputs)
        if (t >= 0 && writer[static_cast<std::size_t>(t)] >= 0)
          ok &= done[static_cast<std::size_t>(writer[static_cast<std::size_t>(t)])] != 0;
      if (ok) ready.push_back(static_cast<int>(v));
    }
    const int v = ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng)];
    done[static_cast<std::size_t>(v)] = 1;
    order.push_back(v);
  }
  return order;
}

// The minimum peak over every topological order, each priced by the liveness.
std::uint64_t BruteForce(const Graph& g, const LivenessParams& lp) {
  const std::size_t n = g.nodes.size();
  std::vector<std::vector<int>> preds(n);
  std::vector<int> writer(g.tensors.size(), -1);
  for (std::size_t v = 0; v < n; ++v)
    for (int t : g.nodes[v].outputs)
      if (t >= 0) writer[static_cast<std::size_t>(t)] = static_cast<int>(v);
  for (std::size_t v = 0; v < n; ++v)
    for (int t : g.nodes[v].inputs)
      if (t >= 0 && writer[static_cast<std::size_t>(t)] >= 0) preds[v].push_back(writer[static_cast<std::size_t>(t)]);
  std::vector<int> order;
  std::vector<char> done(n, 0);
  std::uint64_t best = ~std::uint64_t{0};
  std::function<void()> go = [&] {
    if (order.size() == n) {
      best = std::min(best, PeakLiveBytes(g, order, lp).value());
      return;
    }
    for (std::size_t v = 0; v < n; ++v) {
      if (done[v]) continue;
      bool ready = true;
      for (int p : preds[v]) ready &= done[static_cast<std::size_t>(p)] != 0;
      if (!ready) continue;
      done[v] = 1;
      order.push_back(static_cast<int>(v));
      go();
      order.pop_back();
      done[v] = 0;
    }
  };
  go();
  return best;
}

// Plans in the schedule's order, commits it and runs the execution checker.
void ExpectRuns(const Graph& g, const ScheduleParams& sp, const LivenessParams& lp = {}) {
  GraphPlanParams pp;
  pp.schedule = sp;
  pp.liveness = lp;
  auto plan = PlanGraph(g, pp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(CheckOrder(g, plan->schedule.order).ok());
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(*plan).ok());
  auto report = CheckExecution(g, *plan, arenas);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->nodes_run, g.nodes.size());
}

std::vector<LivenessParams> LivenessVariants() {
  LivenessParams no_in_place;
  no_in_place.in_place = false;
  LivenessParams keep;
  keep.keep_unread_tensors = true;
  return {LivenessParams{}, no_in_place, keep};
}

TEST(Schedule, ModelAgreesWithLivenessOnRandomOrders) {
  for (const LivenessParams& lp : LivenessVariants())
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
      const Graph g = MakeRandomGraph(seed, 5 + static_cast<int>(seed % 20));
      const Liveness live = ComputeLiveness(g, lp).value();
      const OrderModel model(g, live, lp);
      for (std::uint64_t k = 0; k < 5; ++k) {
        const std::vector<int> order = RandomOrder(g, seed * 31 + k);
        EXPECT_EQ(model.Peak(order), PeakLiveBytes(g, order, lp).value()) << "seed " << seed;
      }
    }
}

TEST(Schedule, ExactEqualsBruteForceOnSmallGraphs) {
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  for (const LivenessParams& lp : LivenessVariants())
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      const Graph g = MakeRandomGraph(seed, 3 + static_cast<int>(seed % 6));
      const Schedule s = ScheduleGraph(g, sp, lp).value();
      EXPECT_TRUE(s.proved_optimal) << "seed " << seed;
      EXPECT_EQ(s.peak, BruteForce(g, lp)) << "seed " << seed;
      EXPECT_EQ(s.peak, PeakLiveBytes(g, s.order, lp).value());
    }
}

// A one-stage RandWire graph's params: the model and the join by seed.
RandWireParams RandWireBySeed(std::uint64_t seed, int nodes) {
  RandWireParams rp;
  rp.nodes = nodes;
  rp.seed = seed;
  rp.model = static_cast<internal::RandomGraphModel>(seed % 3);
  rp.join = seed % 2 ? internal::JoinKind::kSum : internal::JoinKind::kConcat;
  return rp;
}

// The exact search on its own from the given order, each side of the
// two-sided search kept to `meet_width` states a level (0: depth first from
// the start), with the limits `sp`.
internal::ExactResult Exact(const Graph& g, const LivenessParams& lp, std::size_t meet_width,
                            const ScheduleParams& sp = {}) {
  const OrderModel model(g, ComputeLiveness(g, lp).value(), lp);
  return internal::ExactOrder(model, {GivenOrder(g)}, 0, sp, meet_width);
}

TEST(Schedule, TwoSidedSearchEqualsBruteForce) {
  // Without in-place sharing every segment is searched from both ends:
  // level by level to the middle, or past a few states depth first.
  LivenessParams lp;
  lp.in_place = false;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Graph g = MakeRandomGraph(seed, 4 + static_cast<int>(seed % 5));
    const std::uint64_t best = BruteForce(g, lp);
    for (std::size_t width : {std::size_t{0}, std::size_t{1}, std::size_t{3}, internal::kMeetWidth}) {
      const internal::ExactResult r = Exact(g, lp, width);
      EXPECT_TRUE(r.complete) << "seed " << seed << " width " << width;
      EXPECT_EQ(r.peak, best) << "seed " << seed << " width " << width;
      EXPECT_EQ(r.lower_bound, best) << "seed " << seed << " width " << width;
      ASSERT_TRUE(CheckOrder(g, r.order).ok()) << "seed " << seed;
      EXPECT_EQ(PeakLiveBytes(g, r.order, lp).value(), r.peak) << "seed " << seed << " width " << width;
    }
  }
}

TEST(Schedule, TwoSidedSearchEqualsBruteForceOnRandWire) {
  // Joins and stages, as the generated benchmarks have them.
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    RandWireParams rp = RandWireBySeed(seed, 4 + static_cast<int>(seed % 2));
    rp.stages = 1 + static_cast<int>(seed % 3 == 0);
    rp.p = 0.5;
    const Graph g = GenerateRandWireGraph(rp);
    if (g.nodes.size() > 12) continue;  // the brute force's reach
    const std::uint64_t best = BruteForce(g, {});
    for (std::size_t width : {std::size_t{0}, std::size_t{2}, internal::kMeetWidth}) {
      const internal::ExactResult r = Exact(g, {}, width);
      EXPECT_TRUE(r.complete) << "seed " << seed << " width " << width;
      EXPECT_EQ(r.peak, best) << "seed " << seed << " width " << width;
    }
  }
}

TEST(Schedule, TwoSidedSearchAgreesWithItselfOnLargerGraphs) {
  // Past the brute force's reach: depth first, two-sided and mixed find
  // the same optimum, and the order each returns has the peak it reports.
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const Graph g = GenerateRandWireGraph(RandWireBySeed(seed, 14));
    const internal::ExactResult full = Exact(g, {}, internal::kMeetWidth);
    ASSERT_TRUE(full.complete) << "seed " << seed;
    for (std::size_t width : {std::size_t{0}, std::size_t{1}, std::size_t{16}}) {
      const internal::ExactResult r = Exact(g, {}, width);
      EXPECT_TRUE(r.complete) << "seed " << seed << " width " << width;
      EXPECT_EQ(r.peak, full.peak) << "seed " << seed << " width " << width;
      EXPECT_EQ(PeakLiveBytes(g, r.order, {}).value(), r.peak) << "seed " << seed << " width " << width;
    }
  }
}

TEST(Schedule, TheBeamsOrderIsValidAndBetweenTheStartAndTheOptimum) {
  // kJoint's "beam" candidate: each segment's best order before the passes.
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const Graph g = GenerateRandWireGraph(RandWireBySeed(seed, 14));
    const internal::ExactResult r = Exact(g, {}, internal::kMeetWidth);
    ASSERT_TRUE(CheckOrder(g, r.beam_order).ok()) << "seed " << seed;
    const std::uint64_t beam = PeakLiveBytes(g, r.beam_order, {}).value();
    EXPECT_LE(beam, PeakLiveBytes(g, GivenOrder(g), {}).value()) << "seed " << seed;
    EXPECT_GE(beam, r.peak) << "seed " << seed;
  }
}

TEST(Schedule, AStoppedTwoSidedSearchBoundNeverExceedsTheOptimum) {
  // The bound proved from below, stopped by the state budget at every
  // point of the search; a beam of one state, so that the best order known
  // stays above the bound for a while.
  LivenessParams lp;
  lp.in_place = false;
  int proved_part = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const Graph g = MakeRandomGraph(seed, 5 + static_cast<int>(seed % 4));
    const std::uint64_t best = BruteForce(g, lp);
    for (std::size_t width : {std::size_t{0}, internal::kMeetWidth}) {
      ScheduleParams sp;
      sp.beam_width = 1;
      const internal::ExactResult full = Exact(g, lp, width, sp);
      sp.max_states = 0;
      const std::uint64_t first = Exact(g, lp, width, sp).lower_bound;
      for (std::size_t states = 0; states <= full.states; ++states) {
        sp.max_states = states;
        const internal::ExactResult r = Exact(g, lp, width, sp);
        EXPECT_LE(r.lower_bound, best) << "seed " << seed << " states " << states;
        EXPECT_GE(r.peak, best) << "seed " << seed << " states " << states;
        EXPECT_EQ(r.complete, r.lower_bound == r.peak);
        proved_part += !r.complete && r.lower_bound > first;
      }
    }
  }
  EXPECT_GT(proved_part, 0);  // some stopped searches proved more than where they began
}

TEST(Schedule, CoLiveBoundNeverExceedsTheOptimum) {
  int above_alone = 0;
  for (const LivenessParams& lp : LivenessVariants())
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      const Graph g = MakeRandomGraph(seed, 3 + static_cast<int>(seed % 7));
      const OrderModel model(g, ComputeLiveness(g, lp).value(), lp);
      const std::uint64_t bound = model.CoLiveBound();
      EXPECT_LE(bound, BruteForce(g, lp)) << "seed " << seed << " in_place " << lp.in_place << " keep " << lp.keep_unread_tensors;
      std::uint64_t alone = model.initial_live();
      for (int v = 0; v < model.nodes(); ++v) alone = std::max(alone, model.alone(v));
      EXPECT_GE(bound, alone);
      above_alone += bound > alone;
    }
  EXPECT_GT(above_alone, 0);
}

TEST(Schedule, CoLiveBoundSeesAHubsFarConsumer) {
  // A hub h feeds a chain a -> b and the final join: h's output is live
  // while a and b run, whatever the order; each node alone needs less.
  Graph g = MakeGraph(5, 100);
  g.tensors[1].bytes = 1000;  // h's output
  g.tensors[4].bytes = 10;    // the join's: alone it needs 1,210
  g.inputs = {0};
  g.outputs = {4};
  AddNode(g, {0}, {1});     // h
  AddNode(g, {1}, {2});     // a
  AddNode(g, {2}, {3});     // b
  AddNode(g, {3, 1}, {4});  // join
  const OrderModel model(g, ComputeLiveness(g, {}).value(), {});
  EXPECT_EQ(model.CoLiveBound(), 100u + 1000 + 100 + 100);  // at b: input, h's, a's, b's
  EXPECT_EQ(model.CoLiveBound(), BruteForce(g, {}));
}

TEST(Schedule, ExactEqualsBruteForceOnSmallRandWire) {
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    RandWireParams rp = RandWireBySeed(seed, 5);
    rp.p = 0.5;
    const Graph g = GenerateRandWireGraph(rp);
    ASSERT_LE(g.nodes.size(), 12u);
    const Schedule s = ScheduleGraph(g, sp, {}).value();
    EXPECT_TRUE(s.proved_optimal);
    EXPECT_EQ(s.peak, BruteForce(g, {})) << "seed " << seed;
  }
}

TEST(Schedule, SegmentedExactEqualsBruteForceOnStagedRandWire) {
  // Two or three stages joined through single nodes: the search solves each
  // stage on its own, and must still find the optimum of the whole.
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  int segmented = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    RandWireParams rp;
    rp.nodes = 3;
    rp.stages = 2 + static_cast<int>(seed % 2);
    rp.seed = seed;
    rp.model = static_cast<internal::RandomGraphModel>(seed % 3);
    rp.join = seed % 4 < 2 ? internal::JoinKind::kSum : internal::JoinKind::kConcat;
    rp.p = 0.6;
    const Graph g = GenerateRandWireGraph(rp);
    if (g.nodes.size() > 13) continue;  // the brute force's reach
    const OrderModel model(g, ComputeLiveness(g, {}).value(), {});
    segmented += model.Segments().size() >= 2;
    const Schedule s = ScheduleGraph(g, sp, {}).value();
    EXPECT_TRUE(s.proved_optimal) << "seed " << seed;
    EXPECT_EQ(s.peak, BruteForce(g, {})) << "seed " << seed;
    ExpectRuns(g, sp);
  }
  EXPECT_GT(segmented, 4);
}

TEST(Schedule, SegmentsCutAtChokepoints) {
  // in -> s -> a; a -> b, a -> c; (b, c) -> d; d -> e: a, d and e are
  // chokepoints. s and a constant k have no predecessor node: each joins
  // its first reader's segment.
  Graph g = MakeGraph(9, 100);
  g.inputs = {0};
  g.outputs = {6};
  AddNode(g, {0}, {8});     // 0 s
  AddNode(g, {8}, {1});     // 1 a
  AddNode(g, {1}, {2});     // 2 b
  AddNode(g, {1}, {3});     // 3 c
  AddNode(g, {2, 3}, {4});  // 4 d
  AddNode(g, {}, {7});      // 5 k
  AddNode(g, {4, 7}, {6});  // 6 e
  const OrderModel model(g, ComputeLiveness(g, {}).value(), {});
  const std::vector<std::vector<int>> segments = model.Segments();
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(segments[1], (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(segments[2], (std::vector<int>{5, 6}));
  // A second output of b read by e crosses d: b's segment runs on to e.
  Graph h = g;
  h.tensors.push_back({"t9", 100});
  h.nodes[2].outputs.push_back(9);
  h.nodes[6].inputs.push_back(9);
  const OrderModel crossed(h, ComputeLiveness(h, {}).value(), {});
  EXPECT_EQ(crossed.Segments().size(), 2u);
  // No cut where an in-place chain crosses: d writing over b's output (the
  // bytes live at the cut would depend on the order before it).
  Graph p = g;
  p.nodes[4].in_place = InPlace::kInput0;
  const OrderModel chained(p, ComputeLiveness(p, {}).value(), {});
  EXPECT_EQ(chained.Segments().size(), 2u);
}

TEST(Schedule, BranchesJoinTheSegmentWhereTheyCostNothing) {
  // A chain in -> a -> b -> c -> d; a table computed from a constant
  // (k -> g) read by d, and a dead end off b (x -> y, whose output nothing
  // reads). k and g join d's segment, x and y b's: each is small against the
  // bound every order reaches (d's step).
  Graph g = MakeGraph(11, 1000);
  g.inputs = {0};
  g.outputs = {4};
  g.tensors[4].bytes = 2000;
  for (int t : {5, 6, 7, 8}) g.tensors[static_cast<std::size_t>(t)].bytes = 10;
  AddNode(g, {0}, {1});     // 0 a
  AddNode(g, {1}, {2});     // 1 b
  AddNode(g, {2}, {3});     // 2 c
  AddNode(g, {}, {5});      // 3 k
  AddNode(g, {5}, {6});     // 4 g
  AddNode(g, {3, 6}, {4});  // 5 d
  AddNode(g, {2}, {7});     // 6 x
  AddNode(g, {7}, {8});     // 7 y
  const OrderModel model(g, ComputeLiveness(g, {}).value(), {});
  const std::uint64_t floor = model.CoLiveBound();
  const std::vector<std::vector<int>> segments = model.Segments(floor);
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0], (std::vector<int>{0, 1, 6, 7}));
  EXPECT_EQ(segments[1], (std::vector<int>{2}));
  EXPECT_EQ(segments[2], (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(model.Segments(0).size(), 1u);  // no bound: nothing may move, no cut
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  const Schedule s = ScheduleGraph(g, sp, {}).value();
  EXPECT_TRUE(s.proved_optimal);
  EXPECT_EQ(s.peak, BruteForce(g, {}));
  ExpectRuns(g, sp);
}

TEST(Schedule, AStoppedSearchBoundNeverExceedsTheOptimum) {
  for (const LivenessParams& lp : LivenessVariants())
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
      const Graph g = MakeRandomGraph(seed, 4 + static_cast<int>(seed % 6));
      ScheduleParams sp;
      sp.order = OrderStrategy::kExact;
      sp.max_states = seed % 5;  // stopped early, or not at all
      const Schedule s = ScheduleGraph(g, sp, lp).value();
      const std::uint64_t best = BruteForce(g, lp);
      EXPECT_LE(s.lower_bound.value(), best) << "seed " << seed;
      EXPECT_GE(s.peak, best);
      EXPECT_EQ(s.peak, PeakLiveBytes(g, s.order, lp).value());
    }
}

TEST(Schedule, NeverWorseThanGivenAndRunsUnderTheChecker) {
  for (OrderStrategy order : AllOrderStrategies())
    for (std::uint64_t seed = 1; seed <= 25; ++seed) {
      const Graph g = MakeRandomGraph(seed, 10 + static_cast<int>(seed));
      ScheduleParams sp;
      sp.order = order;
      const Schedule s = ScheduleGraph(g, sp, {}).value();
      EXPECT_LE(s.peak, s.given_peak);
      if (order == OrderStrategy::kGiven) {
        EXPECT_FALSE(s.lower_bound.has_value());
      } else {
        EXPECT_LE(s.lower_bound.value(), s.peak);
      }
      EXPECT_EQ(s.peak, PeakLiveBytes(g, s.order, {}).value());
      ExpectRuns(g, sp);
    }
}

TEST(Schedule, FindsTheLowerPeakOfABranchyGraph) {
  // Two branches off one input: a big one (a -> b), a small one (c -> d),
  // joined at the end. The given order runs c while a's big output waits.
  Graph g = MakeGraph(6, 100);
  g.tensors[1].bytes = 1000;  // a's output
  g.inputs = {0};
  g.outputs = {5};
  AddNode(g, {0}, {1});     // a: big
  AddNode(g, {0}, {3});     // c
  AddNode(g, {1}, {2});     // b: big -> small
  AddNode(g, {3}, {4});     // d
  AddNode(g, {2, 4}, {5});  // join
  for (OrderStrategy order : {OrderStrategy::kBest, OrderStrategy::kExact}) {
    ScheduleParams sp;
    sp.order = order;
    const Schedule s = ScheduleGraph(g, sp, {}).value();
    EXPECT_EQ(s.given_peak, 100u + 1000 + 100 + 100);  // at b: input, a's, c's, b's
    EXPECT_EQ(s.peak, 100u + 1000 + 100);               // a, b first: c's not yet live
    ExpectRuns(g, sp);
  }
}

TEST(Schedule, TheCheckerRunsThePlansOrder) {
  // The branchy graph planned in its best order (a, b, then c, d): c's
  // output may take a's memory, which is right in that order only.
  Graph g = MakeGraph(6, 100);
  g.tensors[1].bytes = 1000;
  g.inputs = {0};
  g.outputs = {5};
  AddNode(g, {0}, {1});
  AddNode(g, {0}, {3});
  AddNode(g, {1}, {2});
  AddNode(g, {3}, {4});
  AddNode(g, {2, 4}, {5});
  GraphPlanParams pp;
  pp.schedule.order = OrderStrategy::kExact;
  GraphPlan plan = PlanGraph(g, pp).value();
  ASSERT_NE(plan.schedule.order, GivenOrder(g));
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(plan).ok());
  EXPECT_TRUE(CheckExecution(g, plan, arenas).ok());
  ASSERT_EQ(plan.placements[3].offset, plan.placements[1].offset);  // c's over a's
  plan.schedule.order = GivenOrder(g);  // the wrong order for these offsets
  EXPECT_FALSE(CheckExecution(g, plan, arenas).ok());
  plan.schedule.order = {0, 1};
  EXPECT_FALSE(CheckExecution(g, plan, arenas).ok());
}

TEST(Schedule, RandWireExactIsNeverWorseAndValid) {
  for (auto model : {internal::RandomGraphModel::kWattsStrogatz, internal::RandomGraphModel::kErdosRenyi,
                     internal::RandomGraphModel::kBarabasiAlbert}) {
    RandWireParams rp;
    rp.model = model;
    rp.nodes = 16;
    rp.p = model == internal::RandomGraphModel::kErdosRenyi ? 0.2 : 0.75;
    rp.join = internal::JoinKind::kConcat;
    const Graph g = GenerateRandWireGraph(rp);
    ASSERT_TRUE(CheckGraph(g).ok());
    ScheduleParams sp;
    sp.order = OrderStrategy::kExact;
    const Schedule s = ScheduleGraph(g, sp, {}).value();
    EXPECT_LE(s.peak, s.given_peak);
    EXPECT_LE(s.lower_bound.value(), s.peak);
    ExpectRuns(g, sp);
  }
}

TEST(Schedule, LimitsStopTheSearchWithAValidOrder) {
  RandWireParams rp;
  rp.nodes = 60;
  rp.stages = 3;
  rp.join = internal::JoinKind::kConcat;
  const Graph g = GenerateRandWireGraph(rp);
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  sp.max_states = 50;
  const Schedule s = ScheduleGraph(g, sp, {}).value();
  EXPECT_LE(s.lower_bound.value(), s.peak);
  EXPECT_LE(s.peak, s.given_peak);
  EXPECT_EQ(s.proved_optimal, s.lower_bound == s.peak);
  ExpectRuns(g, sp);
  sp.max_states = std::size_t{1} << 40;
  sp.time_limit_seconds = 0.05;
  const Schedule t = ScheduleGraph(g, sp, {}).value();
  EXPECT_LT(t.seconds, 5.0);  // generous: the heuristics and one level past the limit
  EXPECT_LE(t.lower_bound.value(), t.peak);
  EXPECT_EQ(t.peak, PeakLiveBytes(g, t.order, {}).value());
}

// kJoint against kGiven with the same offsets strategy: never a larger
// arena; every candidate placed, the given order first; the plan the
// validator's and the execution checker's. Returns whether the arena chosen
// is not the lowest peak's.
bool ExpectJointNoWorse(const Graph& g, OffsetsStrategy strategy) {
  GraphPlanParams pp;
  pp.strategy = strategy;
  pp.offsets.time_limit_seconds = 0;  // the heuristics only: the same placement in each order
  const GraphPlan given = PlanGraph(g, pp).value();
  pp.schedule.order = OrderStrategy::kJoint;
  const GraphPlan joint = PlanGraph(g, pp).value();
  EXPECT_LE(joint.scratch_bytes(), given.scratch_bytes());
  const Schedule& s = joint.schedule;
  EXPECT_FALSE(s.candidates.empty());
  if (s.candidates.empty()) return false;
  EXPECT_EQ(s.candidates[0].method, "given");
  EXPECT_EQ(s.candidates[0].arena, given.scratch_bytes());
  std::uint64_t smallest = ~std::uint64_t{0}, lowest_peak = ~std::uint64_t{0};
  for (const OrderCandidate& c : s.candidates) {
    EXPECT_TRUE(c.placed) << c.method;
    EXPECT_EQ(c.peak, PeakLiveBytes(g, c.order, {}).value()) << c.method;
    smallest = std::min(smallest, c.arena);
    lowest_peak = std::min(lowest_peak, c.peak);
  }
  EXPECT_EQ(joint.scratch_bytes(), smallest);
  EXPECT_EQ(s.peak, PeakLiveBytes(g, s.order, {}).value());
  EXPECT_TRUE(ValidateGraphPlan(ReorderGraph(g, s.order).value(), joint).ok());
  CommittedArenas arenas;
  EXPECT_TRUE(arenas.Commit(joint).ok());
  EXPECT_TRUE(CheckExecution(g, joint, arenas).ok());
  return s.peak > lowest_peak;
}

TEST(Schedule, JointNeverLargerThanGivenWithTheSamePlacement) {
  int larger_peak = 0;
  for (OffsetsStrategy strategy : {OffsetsStrategy::kArena, OffsetsStrategy::kBest})
    for (std::uint64_t seed = 1; seed <= 30; ++seed)
      larger_peak += ExpectJointNoWorse(MakeRandomGraph(seed, 12 + static_cast<int>(seed)), strategy);
  for (auto model : {internal::RandomGraphModel::kWattsStrogatz, internal::RandomGraphModel::kBarabasiAlbert}) {
    RandWireParams rp;
    rp.model = model;
    rp.nodes = 20;
    rp.join = internal::JoinKind::kConcat;
    larger_peak += ExpectJointNoWorse(GenerateRandWireGraph(rp), OffsetsStrategy::kBest);
  }
  // The point of kJoint: the smallest arena is at times not in the order of
  // the lowest peak.
  EXPECT_GT(larger_peak, 0);
}

TEST(Schedule, JointCandidatesAreDistinctAndSorted) {
  const Graph g = MakeRandomGraph(3, 24);
  ScheduleParams sp;
  sp.order = OrderStrategy::kJoint;
  const Schedule s = ScheduleGraph(g, sp, {}).value();
  ASSERT_FALSE(s.candidates.empty());
  EXPECT_EQ(s.candidates[0].order, GivenOrder(g));
  for (std::size_t i = 1; i < s.candidates.size(); ++i) {
    if (i > 1) {
      EXPECT_LE(s.candidates[i - 1].peak, s.candidates[i].peak);
    }
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(s.candidates[i].order, s.candidates[j].order);
  }
  ScheduleParams exact;
  exact.order = OrderStrategy::kExact;
  EXPECT_EQ(s.peak, ScheduleGraph(g, exact, {}).value().peak);  // the lowest peak is among them
  EXPECT_TRUE(ScheduleGraph(g, exact, {}).value().candidates.empty());
}

TEST(Schedule, GivenKeepsTheOrder) {
  const Graph g = MakeRandomGraph(7, 20);
  const Schedule s = ScheduleGraph(g, {}, {}).value();
  EXPECT_EQ(s.order, GivenOrder(g));
  EXPECT_EQ(s.method, "given");
  EXPECT_EQ(s.peak, s.given_peak);
  EXPECT_FALSE(s.lower_bound.has_value());  // no bound computed for the order asked for
  EXPECT_EQ(s.states, 0u);
  LivenessParams preserve;
  preserve.preserve_all_tensors = true;
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  const Schedule p = ScheduleGraph(g, sp, preserve).value();
  EXPECT_EQ(p.order, GivenOrder(g));
  EXPECT_EQ(p.lower_bound, p.peak);  // every order alike: computed, and proved
  EXPECT_TRUE(p.proved_optimal);
}

TEST(Schedule, CheckOrderNamesTheFault) {
  const Graph g = testing::MakeChain(4, 8);
  EXPECT_TRUE(CheckOrder(g, std::vector<int>{0, 1, 2}).ok());
  EXPECT_FALSE(CheckOrder(g, std::vector<int>{0, 1}).ok());
  EXPECT_FALSE(CheckOrder(g, std::vector<int>{0, 0, 1}).ok());
  EXPECT_FALSE(CheckOrder(g, std::vector<int>{0, 1, 7}).ok());
  const Status s = CheckOrder(g, std::vector<int>{1, 0, 2});
  EXPECT_NE(s.message().find("before"), std::string::npos) << s.message();
  EXPECT_FALSE(ReorderGraph(g, std::vector<int>{2, 1, 0}).ok());
}

TEST(Schedule, OrderNames) {
  for (OrderStrategy o : AllOrderStrategies()) EXPECT_EQ(ParseOrderStrategy(Name(o)).value(), o);
  EXPECT_FALSE(ParseOrderStrategy("fastest").ok());
}

TEST(Schedule, DefaultsComeFromTheTable) {
  const ScheduleParams p;
  EXPECT_EQ(Name(p.order), defaults::kOrder);
  EXPECT_EQ(p.time_limit_seconds, defaults::kOrderTimeLimitSeconds);
  EXPECT_EQ(p.max_states, defaults::kOrderMaxStates);
  EXPECT_EQ(p.max_state_bytes, defaults::kOrderMaxStateBytes);
  EXPECT_EQ(p.beam_width, defaults::kOrderBeamWidth);
}

TEST(Schedule, TheSearchLimitsAreParams) {
  RandWireParams rp;
  rp.nodes = 24;
  rp.model = internal::RandomGraphModel::kBarabasiAlbert;
  const Graph g = GenerateRandWireGraph(rp);
  ScheduleParams sp;
  sp.order = OrderStrategy::kExact;
  const Schedule full = ScheduleGraph(g, sp, {}).value();
  ASSERT_TRUE(full.proved_optimal);
  sp.beam_width = 1;  // a narrower beam: the same optimum, proved
  EXPECT_EQ(ScheduleGraph(g, sp, {}).value().peak, full.peak);
  sp.beam_width = defaults::kOrderBeamWidth;
  sp.max_state_bytes = 1;  // no room for one state: stopped, still valid
  const Schedule capped = ScheduleGraph(g, sp, {}).value();
  EXPECT_LE(capped.lower_bound.value(), capped.peak);
  EXPECT_LT(capped.states, full.states);  // the beam's, and no more
  EXPECT_EQ(capped.peak, PeakLiveBytes(g, capped.order, {}).value());
}

TEST(Schedule, ReplanKeepsThePlansOrder) {
  RandWireParams rp;
  rp.nodes = 12;
  const Graph g = GenerateRandWireGraph(rp);
  GraphPlanParams pp;
  pp.schedule.order = OrderStrategy::kExact;
  const GraphPlan plan = PlanGraph(g, pp).value();
  const GraphPlan again = ReplanGraphFrom(g, plan, 3, pp).value();
  EXPECT_EQ(again.schedule.order, plan.schedule.order);
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(again).ok());
  EXPECT_TRUE(CheckExecution(g, again, arenas).ok());
}

}  // namespace
}  // namespace tensormem

namespace tensormem {
namespace {

TEST(RandWireGenerator, WellFormedDeterministicAndJoinsAsAsked) {
  for (int model = 0; model < 3; ++model)
    for (auto join : {internal::JoinKind::kSum, internal::JoinKind::kConcat}) {
      RandWireParams rp;
      rp.model = static_cast<internal::RandomGraphModel>(model);
      rp.join = join;
      rp.nodes = 20;
      rp.stages = 2;
      rp.p = 0.3;
      const Graph g = GenerateRandWireGraph(rp);
      ASSERT_TRUE(CheckGraph(g).ok()) << CheckGraph(g).ToString();
      EXPECT_GE(g.nodes.size(), 2u * 20 + 2);  // a conv per random node, a mean per stage
      EXPECT_EQ(GenerateRandWireGraph(rp).nodes.size(), g.nodes.size());
      bool joined = false;
      for (const GraphNode& n : g.nodes) {
        if (n.op != "sum" && n.op != "concat") continue;
        joined = true;
        EXPECT_EQ(n.op, join == internal::JoinKind::kSum ? "sum" : "concat");
        std::uint64_t total = 0, largest = 0;
        for (int t : n.inputs) {
          total += g.tensors[static_cast<std::size_t>(t)].bytes;
          largest = std::max(largest, g.tensors[static_cast<std::size_t>(t)].bytes);
        }
        EXPECT_EQ(g.tensors[static_cast<std::size_t>(n.outputs[0])].bytes,
                  join == internal::JoinKind::kSum ? largest : total);
      }
      EXPECT_TRUE(joined);
    }
}

}  // namespace
}  // namespace tensormem
