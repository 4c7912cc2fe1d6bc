// SPDX-License-Identifier: Apache-2.0
// Body of the graph fuzzer (and of its seeded replay in graph_test): a graph
// the bytes describe, well formed or not, through the graph planner. Tensors
// of every kind (some of any size, some with alignments that are not powers
// of two, some sharing a name), nodes whose tensor lists may be absent,
// out of range, repeated or written twice, in-place flags; the liveness
// options and the scratch strategy from the bytes. Then:
// - CheckGraph refuses a graph, naming what, exactly when PlanGraph does;
// - an accepted graph plans (or is refused for overflow), the plan passes
//   ValidateGraphPlan, and where its arenas are small it is committed to
//   real memory and executed by CheckExecution: no live tensor overwritten;
// - a re-plan after the tensors written from a node on changed size is
//   refused with a reason or is valid and executes the same way, in the
//   arenas the first plan committed (grown where needed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "allocator_fuzz_common.h"  // FuzzBytes
#include "reader_fuzz_common.h"     // Check
#include "tensormem/tensormem.h"

namespace tensormem::fuzz {

inline int GraphTensorIndex(FuzzBytes& in, std::size_t tensors) {
  const std::uint8_t k = in.U8();
  if (k == 255) return static_cast<int>(tensors) + in.U8() % 3;  // out of range
  if (k % 16 == 0) return kNoTensor;
  return static_cast<int>(k % tensors);
}

inline GraphTensor FuzzTensor(FuzzBytes& in, std::size_t index, bool chaos) {
  GraphTensor t;
  const std::uint8_t k = in.U8();
  if (k % 4 != 0) {  // (inserted: GCC 12 -O3 warns falsely on "t" + str and on = "t")
    t.name = std::to_string(chaos && k % 32 == 1 ? 0 : index);  // sometimes a repeated name
    t.name.insert(t.name.begin(), 't');
  }
  t.bytes = k % 16 == 2 ? in.Size() : k % 16 == 3 ? 0 : std::uint64_t{in.U8()} * (1 + in.U8() % 64);
  const std::uint8_t a = in.U8();
  if (a % 8 == 0) t.alignment = std::uint64_t{1} << (a >> 3) % 12;
  if (a == 1) t.alignment = 24;  // not a power of two: refused
  return t;
}

// Mostly a well-formed graph built in execution order (each node reads
// recent tensors and writes new ones); one input in eight takes every index
// from the bytes, so that the checks of malformed graphs are reached too.
inline Graph FuzzGraph(FuzzBytes& in) {
  Graph g;
  const bool chaos = in.U8() % 8 == 0;
  auto add = [&](TensorKind kind) {
    GraphTensor t = FuzzTensor(in, g.tensors.size(), chaos);
    t.kind = kind;
    g.tensors.push_back(std::move(t));
    return static_cast<int>(g.tensors.size()) - 1;
  };
  if (chaos) {
    const std::size_t tensors = 1 + in.U8() % 48;
    for (std::size_t i = 0; i < tensors; ++i) {
      const std::uint8_t kind = in.U8() % 8;
      add(kind < 5 ? TensorKind::kActivation
          : kind == 5 ? TensorKind::kConstant
          : kind == 6 ? TensorKind::kVariable
                      : TensorKind::kDynamic);
    }
    for (std::size_t n = in.U8() % 40; n > 0; --n) {
      GraphNode node;
      const std::uint8_t shape = in.U8();
      for (int i = shape % 4; i > 0; --i) node.inputs.push_back(GraphTensorIndex(in, tensors));
      for (int i = 1 + shape / 4 % 2; i > 0; --i) node.outputs.push_back(GraphTensorIndex(in, tensors));
      if (shape & 16) node.temporaries.push_back(GraphTensorIndex(in, tensors));
      node.in_place = static_cast<InPlace>(shape / 32 % 3);
      g.nodes.push_back(std::move(node));
    }
    for (int i = in.U8() % 3; i > 0; --i) g.inputs.push_back(GraphTensorIndex(in, tensors));
    for (int i = 1 + in.U8() % 2; i > 0; --i) g.outputs.push_back(GraphTensorIndex(in, tensors));
    return g;
  }
  std::vector<int> readable;
  for (int i = 1 + in.U8() % 2; i > 0; --i) {
    g.inputs.push_back(add(in.U8() % 8 == 0 ? TensorKind::kDynamic : TensorKind::kActivation));
    readable.push_back(g.inputs.back());
  }
  const std::uint8_t persistent = in.U8();
  for (int i = persistent % 4; i > 0; --i) readable.push_back(add(TensorKind::kConstant));
  for (int i = persistent / 4 % 3; i > 0; --i) readable.push_back(add(TensorKind::kVariable));
  for (std::size_t n = in.U8() % 40; n > 0; --n) {
    GraphNode node;
    const std::uint8_t shape = in.U8();
    for (int i = 1 + shape % 3; i > 0; --i) {
      const std::uint8_t r = in.U8();
      node.inputs.push_back(r % 20 == 0 ? kNoTensor
                                        : readable[readable.size() - 1 - r % std::min<std::size_t>(readable.size(), 6)]);
    }
    for (int i = 1 + shape / 4 % 2; i > 0; --i) {
      const int t = add(in.U8() % 16 == 0 ? TensorKind::kDynamic : TensorKind::kActivation);
      // Often the size of input 0, so that in-place sharing happens.
      if ((shape & 64) && node.inputs[0] >= 0)
        g.tensors[static_cast<std::size_t>(t)].bytes = g.tensors[static_cast<std::size_t>(node.inputs[0])].bytes;
      node.outputs.push_back(t);
      readable.push_back(t);
    }
    if (shape & 8) node.temporaries.push_back(add(TensorKind::kActivation));
    node.in_place = static_cast<InPlace>(shape / 16 % 3);
    g.nodes.push_back(std::move(node));
  }
  g.outputs.push_back(readable.back());
  if (persistent & 32) g.outputs.push_back(readable[readable.size() / 2]);
  if (persistent & 64) g.outputs.push_back(kNoTensor);
  return g;
}

// Plans that fit in this are committed and executed (memory stays bounded).
constexpr std::uint64_t kGraphExecuteBytes = std::uint64_t{16} << 20;

inline void CheckGraphPlanRuns(const Graph& g, const GraphPlan& plan, CommittedArenas& arenas, bool full,
                               const char* what) {
  Check(ValidateGraphPlan(g, plan).ok(), what);
  if (plan.scratch_bytes() > kGraphExecuteBytes || plan.persistent_bytes > kGraphExecuteBytes) return;
  Status committed = arenas.Commit(plan);
  Check(committed.ok(), "a small plan commits");
  ExecutionCheckParams p;
  p.full = full;
  Result<ExecutionReport> run = CheckExecution(g, plan, arenas, p);
  if (!run.ok()) std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
  Check(run.ok(), "a valid plan executes without overwriting a live tensor");
}

// Returns the number of nodes of an accepted graph (0 when refused).
inline int FuzzGraphOne(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in{data, size};
  GraphPlanParams params;
  const std::uint8_t knobs = in.U8();
  params.liveness.preserve_all_tensors = (knobs & 1) != 0 && (knobs & 2) != 0;
  params.liveness.in_place = (knobs & 4) == 0;
  params.liveness.keep_unread_tensors = (knobs & 8) != 0;
  params.alignment = std::uint64_t{1} << (knobs >> 4) % 8;
  const OffsetsStrategy strategies[] = {OffsetsStrategy::kArena,        OffsetsStrategy::kGreedyBySize,
                                        OffsetsStrategy::kGreedyByBreadth, OffsetsStrategy::kGreedyInOrder,
                                        OffsetsStrategy::kBest,         OffsetsStrategy::kNaive,
                                        OffsetsStrategy::kFromObjects,  OffsetsStrategy::kExact};
  params.strategy = strategies[in.U8() % 8];
  params.offsets.time_limit_seconds = 0;  // exact and best: their heuristic plans, the same every run
  const bool full = (knobs & 2) != 0;
  const Graph g = FuzzGraph(in);

  const Status well_formed = CheckGraph(g);
  Result<GraphPlan> plan = PlanGraph(g, params);
  if (!well_formed.ok()) {
    Check(!well_formed.message().empty(), "a malformed graph is named");
    Check(!plan.ok(), "PlanGraph refuses what CheckGraph refuses");
    return 0;
  }
  if (!plan.ok()) {
    Check(!plan.status().message().empty(), "a refused plan says why");
    Check(plan.status().code() == StatusCode::kOutOfRange, "a well-formed graph is refused only for overflow");
    return 0;
  }
  CommittedArenas arenas;
  CheckGraphPlanRuns(g, *plan, arenas, full, "graph plans validate");

  // Sizes change from a node on: the tensors first written there or later.
  const TaskIndex from = g.nodes.empty() ? 0 : static_cast<TaskIndex>(in.U8() % g.nodes.size());
  Graph changed = g;
  bool any = false;
  for (std::size_t n = static_cast<std::size_t>(from); n < g.nodes.size(); ++n)
    for (int t : g.nodes[n].outputs)
      if (t >= 0 && (in.U8() & 1)) {
        changed.tensors[static_cast<std::size_t>(t)].bytes = std::uint64_t{in.U8()} * (1 + in.U8() % 64);
        any = true;
      }
  Result<GraphPlan> again = ReplanGraphFrom(changed, *plan, from, params);
  if (again.ok()) {
    CheckGraphPlanRuns(changed, *again, arenas, full, "re-plans validate");
  } else {
    Check(!again.status().message().empty(), "a refused re-plan says why");
    // from_objects cannot keep the earlier tensors' offsets (it lays out objects).
    const bool expected = any || again.status().code() == StatusCode::kOutOfRange ||
                          (params.strategy == OffsetsStrategy::kFromObjects &&
                           again.status().code() == StatusCode::kInvalidArgument);
    if (!expected)
      std::fprintf(stderr, "re-plan from node %lld: %s\n", static_cast<long long>(from),
                   again.status().ToString().c_str());
    Check(expected, "a re-plan with nothing changed is refused only for overflow");
  }
  return static_cast<int>(g.nodes.size());
}

}  // namespace tensormem::fuzz
