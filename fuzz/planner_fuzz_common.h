// SPDX-License-Identifier: Apache-2.0
// Body of the planner fuzzer (and of its seeded replay in planning_test):
// every static strategy on a problem the bytes describe. The first bytes
// give the knobs (alignment, the reference paths, the polish's nodes, which
// objects plan from_objects lays out); the rest give up to 64 buffers, each
// with a lifetime, a size of any scale, and sometimes an alignment of its
// own, a fixed offset or a gap with a window. Then:
// - offsets, every strategy: a plan the validator accepts, its total at
//   least its lower bound and at least the peak; or an error with a message,
//   one of overflow (OutOfRange), a feature the strategy does not take
//   (InvalidArgument), or giving up on a work budget (ResourceExhausted);
//   best no larger than each heuristic it runs, exact no larger than best's
//   heuristic part; with clashing fixed offsets, no strategy returns a plan;
// - objects, every strategy, on the usage records: a valid plan at least the
//   positional-maximum bound, best and greedy_best no larger than what they
//   pick from, the reference paths equal to the scalable ones where both
//   finish; greedy_in_order also with a reallocation graph from the bytes;
// - extent objects (2-D sizes from the same records) for the strategies
//   that take them, validated; the others refuse.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "allocator_fuzz_common.h"  // FuzzBytes
#include "reader_fuzz_common.h"     // Check
#include "tensormem/tensormem.h"

namespace tensormem::fuzz {

// `alignment`: the plan's, which fixed offsets mostly respect (one problem
// in 16 does not: refused). One problem in four has fixed offsets, on
// about one buffer in eight, so that most do not clash.
inline Problem PlannerProblem(FuzzBytes& in, std::uint64_t alignment) {
  Problem problem;
  const std::uint8_t features = in.U8();
  const std::size_t n = in.U8() % 65;
  for (std::size_t i = 0; i < n; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    const std::uint8_t k = in.U8();
    b.first_task = in.U8() % 40;
    b.last_task = b.first_task + in.U8() % 20;
    b.size = k % 8 == 0 ? in.Size() : std::uint64_t{in.U8()} * (1 + in.U8());
    if (k & 8) b.alignment = std::uint64_t{1} << in.U8() % 10;
    if (features % 4 == 0 && (k & 112) == 112) {
      const std::uint64_t o = k % 8 == 1 ? in.Size() : in.U64(2);
      const std::uint64_t a = features % 16 == 0 ? b.alignment : std::max(b.alignment, alignment);
      b.fixed_offset = o / a * a;
    }
    if ((k & 64) && b.last_task - b.first_task >= 2) {
      Gap g;
      g.first_task = b.first_task + 1;
      g.last_task = g.first_task + in.U8() % (b.last_task - b.first_task - 1);
      if ((k & 128) && b.size > 1) {
        g.has_window = true;
        g.window_lo = in.U64(4) % b.size;
        g.window_hi = g.window_lo + 1 + in.U64(4) % (b.size - g.window_lo);
      }
      b.gaps.push_back(g);
    }
    problem.buffers.push_back(std::move(b));
  }
  return problem;
}

inline bool SamePlan(const ObjectsPlan& a, const ObjectsPlan& b) {
  return a.object_of == b.object_of && a.object_sizes == b.object_sizes;
}

inline void CheckRefusal(const Status& st, const char* what) {
  Check(!st.message().empty(), "a refusal says why");
  Check(st.code() == StatusCode::kOutOfRange || st.code() == StatusCode::kInvalidArgument ||
            st.code() == StatusCode::kResourceExhausted,
        what);
}

inline void FuzzOffsets(const Problem& problem, const PlanParams& params) {
  const bool clash = !CheckFixedOffsets(problem).ok();
  const std::uint64_t peak = PeakLiveBytes(problem, params.alignment);
  std::map<OffsetsStrategy, std::uint64_t> totals;
  for (OffsetsStrategy s : AllOffsetsStrategies()) {
    // exact under no limit would search to the end: time 0 gives its
    // heuristic start, the same on every run (best's polish, bounded by
    // nodes, searches; so does the solver fuzzer).
    PlanParams p = params;
    if (s == OffsetsStrategy::kExact) p.time_limit_seconds = 0;
    Result<OffsetsPlan> plan = PlanOffsets(problem, s, p);
    if (!plan.ok()) {
      CheckRefusal(plan.status(), "an offsets strategy fails only on overflow, a feature or a budget");
      continue;
    }
    Check(!clash, "no plan where fixed offsets clash");
    Check(ValidateOffsetsPlan(problem, *plan, params.alignment, false).ok(), "offsets plans validate");
    Check(plan->total >= plan->lower_bound && plan->lower_bound >= peak, "total >= bound >= peak");
    totals[s] = plan->total;
  }
  auto total = [&](OffsetsStrategy s) {
    auto it = totals.find(s);
    return it == totals.end() ? std::optional<std::uint64_t>() : it->second;
  };
  std::optional<std::uint64_t> heuristic;  // best's heuristic part: the smallest of these
  for (OffsetsStrategy s : {OffsetsStrategy::kGreedyBySize, OffsetsStrategy::kGreedyByBreadth,
                            OffsetsStrategy::kArena, OffsetsStrategy::kGreedyInOrder}) {
    if (!total(s)) continue;
    heuristic = std::min(heuristic.value_or(*total(s)), *total(s));
    if (total(OffsetsStrategy::kBest)) Check(*total(OffsetsStrategy::kBest) <= *total(s), "best <= each candidate");
  }
  if (heuristic && total(OffsetsStrategy::kExact))
    Check(*total(OffsetsStrategy::kExact) <= *heuristic, "exact <= the heuristics it starts from");
}

inline void FuzzObjects(std::span<const UsageRecord> records, PlanParams params, FuzzBytes& in) {
  const std::uint64_t bound = ObjectsLowerBound(records);
  std::map<ObjectsStrategy, std::uint64_t> totals;
  for (ObjectsStrategy s : AllObjectsStrategies()) {
    params.reference = false;
    Result<ObjectsPlan> plan = PlanObjects(records, s, params);
    if (!plan.ok()) {
      CheckRefusal(plan.status(), "an objects strategy fails only on overflow or a budget");
      continue;
    }
    Check(ValidateObjectsPlan(records, *plan).ok(), "objects plans validate");
    Check(TotalSize(*plan) >= bound, "objects total >= the positional maximums");
    totals[s] = TotalSize(*plan);
    params.reference = true;
    Result<ObjectsPlan> reference = PlanObjects(records, s, params);
    if (reference.ok()) Check(SamePlan(*plan, *reference), "the reference path gives the same plan");
  }
  auto le = [&](ObjectsStrategy a, ObjectsStrategy b, const char* what) {
    if (totals.count(a) && totals.count(b)) Check(totals[a] <= totals[b], what);
  };
  for (ObjectsStrategy s : AllObjectsStrategies()) le(ObjectsStrategy::kBest, s, "best objects <= each");
  le(ObjectsStrategy::kGreedyBest, ObjectsStrategy::kGreedyBySize, "greedy_best <= greedy_by_size");
  le(ObjectsStrategy::kGreedyBest, ObjectsStrategy::kGreedyByBreadth, "greedy_best <= greedy_by_breadth");

  // A reallocation graph from the bytes (sometimes out of range: refused).
  ReallocationGraph graph(records.size());
  for (std::size_t i = 0; i < records.size(); ++i)
    for (std::uint8_t k = in.U8() % 4; k > 0; --k) {
      const std::size_t v = in.U8() % (records.size() + 1);
      graph[i].push_back(v);
      if (v < records.size()) graph[v].push_back(i);
    }
  params.reference = false;
  params.reallocation_graph = &graph;
  Result<ObjectsPlan> with_graph = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params);
  if (with_graph.ok())
    Check(ValidateObjectsPlan(records, *with_graph).ok(), "plans with a reallocation graph validate");
  else
    CheckRefusal(with_graph.status(), "a bad reallocation graph is a bad argument");
  Result<ObjectsPlan> elsewhere = PlanObjects(records, ObjectsStrategy::kGreedyBySize, params);
  Check(!elsewhere.ok() && elsewhere.status().code() == StatusCode::kInvalidArgument,
        "a reallocation graph is refused by strategies that do not take one");
}

inline void FuzzExtents(std::span<const UsageRecord> records, const PlanParams& params, FuzzBytes& in) {
  std::vector<ExtentRecord> extents;
  for (const UsageRecord& r : records)
    extents.push_back({Extent{1 + in.U8() % 8u, std::min<std::uint64_t>(r.size, 1u << 20)}, r.first_task,
                       r.last_task});
  for (ObjectsStrategy s : AllObjectsStrategies()) {
    Result<ExtentObjectsPlan> plan = PlanObjects(std::span<const ExtentRecord>(extents), s, params);
    if (plan.ok())
      Check(ValidateObjectsPlan(std::span<const ExtentRecord>(extents), *plan).ok(), "extent plans validate");
    else
      Check(!plan.status().message().empty(), "an extent refusal says why");
  }
}

// Returns the number of buffers planned (0 when the bytes gave a problem
// that was refused as malformed).
inline int FuzzPlannerOne(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in{data, size};
  PlanParams params;
  const std::uint8_t knobs = in.U8();
  params.alignment = std::uint64_t{1} << knobs % 8;
  params.from_objects = AllObjectsStrategies()[in.U8() % AllObjectsStrategies().size()];
  params.polish_nodes = (knobs & 8) ? in.U8() * 16u : 0;  // the same answer on every run
  params.polish_seconds = std::numeric_limits<double>::infinity();
  params.time_limit_seconds = std::numeric_limits<double>::infinity();
  Problem problem = PlannerProblem(in, params.alignment);
  if (Status st = CheckProblem(problem); !st.ok()) {
    Check(!st.message().empty(), "a malformed problem is named");
    return 0;
  }
  FuzzOffsets(problem, params);
  const std::vector<UsageRecord> records = ToRecords(problem);
  FuzzObjects(records, params, in);
  FuzzExtents(records, params, in);
  return static_cast<int>(problem.buffers.size());
}

}  // namespace tensormem::fuzz
