// SPDX-License-Identifier: Apache-2.0
// The two arenas of a graph, planned in the order the scheduler chooses
// (schedule.h; the given order by default; kJoint: each candidate order
// planned, the smallest scratch arena kept). Persistent: constants and variables back to
// back in index order (they live for the whole run). Scratch: one buffer per
// tensor owning memory (in-place chains are one buffer), lifetimes from the
// liveness, planned with an offset strategy. The default is TensorFlow
// Lite's ArenaPlanner::CreateTensorAllocationVector order computed from the
// graph (whole-run tensors by index, then size descending, ties by earlier
// allocation node, then index) fed to SimpleMemoryArena's best fit
// (planning::PlaceBestFit) with each buffer's own alignment.
#include <algorithm>
#include <chrono>
#include <optional>

#include "core/checked_math.h"
#include "tensormem/graph.h"
#include "tensormem/validator.h"

namespace tensormem {
namespace {

using internal::CheckedAdd;
using internal::CheckedAlignUp;

std::uint64_t AlignmentOf(const GraphTensor& t, std::uint64_t fallback) {
  return t.alignment ? t.alignment : fallback;
}

Status CheckParams(const GraphPlanParams& params) {
  TM_RETURN_IF_ERROR(ValidateAlignment(params.alignment, "GraphPlanParams::alignment"));
  // One alignment: the graph's (and each tensor's). The offsets' own would
  // be a second meaning, and was silently ignored.
  if (params.offsets.alignment != 1)
    return InvalidArgument("GraphPlanParams::offsets.alignment (" +
                           std::to_string(params.offsets.alignment) +
                           ") is not used by the graph planner; set GraphPlanParams::alignment");
  return Status::Ok();
}

// Lays the scratch buffers out through the one dispatcher (PlanOffsets:
// timing, lower bound, validation). kArena there is TensorFlow Lite's order
// (whole-run buffers by index, then size descending, ties by earlier first
// task, then index; best fit); on the scratch problem buffers are numbered
// in tensor order, and the whole-run ones are, as in ArenaPlanner, those
// allocated at node 0 and never freed (told to it, since a tensor freed at
// the last node has the same lifetime in the problem).
Result<OffsetsPlan> PlanScratch(const GraphPlanParams& params, const Liveness& live,
                                const Problem& problem, const std::vector<int>& owner) {
  PlanParams p = params.offsets;
  p.alignment = 1;  // every buffer carries its own
  std::vector<bool> whole_run(problem.buffers.size());
  for (std::size_t b = 0; b < owner.size(); ++b) {
    const TensorLiveness& l = live.tensors[static_cast<std::size_t>(owner[b])];
    whole_run[b] = l.first_node == 0 && l.never_freed;
  }
  p.arena_whole_run = &whole_run;
  return PlanOffsets(problem, params.strategy, p);
}

// Scratch buffers: one per in-place chain root.
std::size_t ScratchRoots(const Liveness& live) {
  std::size_t roots = 0;
  for (std::size_t t = 0; t < live.tensors.size(); ++t)
    if (live.tensors[t].arena == Arena::kScratch && live.tensors[t].root == static_cast<int>(t)) ++roots;
  return roots;
}

// Everything but the scratch offsets: liveness, the scratch problem, the
// persistent layout and the naive total.
Result<GraphPlan> Prepare(const Graph& graph, const GraphPlanParams& params) {
  TM_RETURN_IF_ERROR(CheckParams(params));
  GraphPlan plan;
  TM_ASSIGN_OR_RETURN(plan.liveness, ComputeLiveness(graph, params.liveness));
  const std::size_t n = graph.tensors.size();
  plan.placements.resize(n);
  const auto& lt = plan.liveness.tensors;
  // Reserved: a million buffers grown by doubling were copied (and their
  // pages first touched) twice over.
  const std::size_t roots = ScratchRoots(plan.liveness);
  plan.scratch.buffers.reserve(roots);
  plan.scratch_owner.reserve(roots);
  std::uint64_t persistent_end = 0;
  for (std::size_t t = 0; t < n; ++t) {
    const GraphTensor& tensor = graph.tensors[t];
    const std::uint64_t align = AlignmentOf(tensor, params.alignment);
    TensorPlacement& p = plan.placements[t];
    p.arena = lt[t].arena;
    if (p.arena != Arena::kNone) plan.base_alignment = std::max(plan.base_alignment, align);
    if (lt[t].arena == Arena::kPersistent) {
      if (!CheckedAlignUp(persistent_end, align, &p.offset) ||
          !CheckedAdd(p.offset, tensor.bytes, &persistent_end))
        return OutOfRange("the persistent arena overflows 64 bits at " +
                          TensorLabel(graph, static_cast<int>(t)));
    } else if (lt[t].arena == Arena::kScratch) {
      if (lt[t].root != static_cast<int>(t)) continue;
      p.buffer = static_cast<int>(plan.scratch.buffers.size());
      Buffer b;
      b.id = TensorId(graph, static_cast<int>(t));
      b.size = tensor.bytes;
      b.first_task = lt[t].first_node;
      b.last_task = lt[t].last_node;
      b.alignment = align;
      plan.scratch.buffers.push_back(std::move(b));
      plan.scratch_owner.push_back(static_cast<int>(t));
    }
  }
  // Chain members join their root's buffer, which takes the strictest alignment.
  for (std::size_t t = 0; t < n; ++t) {
    if (lt[t].arena != Arena::kScratch || lt[t].root == static_cast<int>(t)) continue;
    const int b = plan.placements[static_cast<std::size_t>(lt[t].root)].buffer;
    plan.placements[t].buffer = b;
    Buffer& buf = plan.scratch.buffers[static_cast<std::size_t>(b)];
    buf.alignment = std::max(buf.alignment, AlignmentOf(graph.tensors[t], params.alignment));
  }
  plan.persistent_bytes = persistent_end;
  // The naive strategy's arena: the buffers back to back, each aligned, an
  // in-place chain one buffer as in every plan (so the saving reported
  // against it compares like with like).
  std::uint64_t naive_end = 0;
  for (std::size_t b = 0; b < plan.scratch.buffers.size(); ++b) {
    const Buffer& buf = plan.scratch.buffers[b];
    std::uint64_t at;
    if (!CheckedAlignUp(naive_end, buf.alignment, &at) || !CheckedAdd(at, buf.size, &naive_end))
      return OutOfRange("the scratch arena overflows 64 bits at " + TensorLabel(graph, plan.scratch_owner[b]));
  }
  plan.naive_scratch_bytes = naive_end;
  return plan;
}

Status Finish(const Graph& graph, GraphPlan& plan, const GraphPlanParams& params) {
  TM_ASSIGN_OR_RETURN(plan.scratch_plan,
                      PlanScratch(params, plan.liveness, plan.scratch, plan.scratch_owner));
  for (TensorPlacement& p : plan.placements)
    if (p.arena == Arena::kScratch) p.offset = plan.scratch_plan.offsets[static_cast<std::size_t>(p.buffer)];
  if (params.offsets.validate)
    TM_RETURN_IF_ERROR(ValidateGraphPlan(graph, plan).WithContext("internal error"));
  return Status::Ok();
}

Result<GraphPlan> PlanInOrder(const Graph& graph, Schedule schedule, const GraphPlanParams& params) {
  Graph storage;
  TM_ASSIGN_OR_RETURN(const Graph* ordered, GraphInOrder(graph, schedule.order, &storage));
  TM_ASSIGN_OR_RETURN(GraphPlan plan, Prepare(*ordered, params));
  plan.schedule = std::move(schedule);
  TM_RETURN_IF_ERROR(Finish(*ordered, plan, params));
  return plan;
}

// The offsets' time limit left for candidate `i` of `n`: an equal share of
// what is left (what one leaves goes to the next); none when unlimited.
double CandidateTimeLimit(double limit, std::chrono::steady_clock::time_point start, std::size_t i,
                          std::size_t n) {
  if (!(limit > 0 && limit < 1e9)) return limit;
  const double left = limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::max(left, 1e-9) / static_cast<double>(n - i);
}

}  // namespace

Result<GraphPlan> PlanGraph(const Graph& graph, const GraphPlanParams& params) {
  TM_ASSIGN_OR_RETURN(Schedule schedule, ScheduleGraph(graph, params.schedule, params.liveness));
  return PlanGraphInCandidates(graph, std::move(schedule), params);
}

Result<GraphPlan> PlanGraphInCandidates(const Graph& graph, Schedule schedule, const GraphPlanParams& params) {
  if (schedule.candidates.empty()) return PlanInOrder(graph, std::move(schedule), params);
  const auto start = std::chrono::steady_clock::now();
  std::optional<GraphPlan> best;
  std::size_t chosen = 0;
  Status failed = Status::Ok();
  const std::size_t n = schedule.candidates.size();
  for (std::size_t i = 0; i < n; ++i) {
    OrderCandidate& c = schedule.candidates[i];
    GraphPlanParams p = params;
    p.offsets.time_limit_seconds = CandidateTimeLimit(params.offsets.time_limit_seconds, start, i, n);
    Schedule in_order;
    in_order.order = c.order;
    Result<GraphPlan> plan = PlanInOrder(graph, std::move(in_order), p);
    if (!plan.ok()) {
      // Out of time for this order: the others still compete.
      if (plan.status().code() != StatusCode::kDeadlineExceeded) return plan.status();
      failed = plan.status().WithContext("order " + c.method);
      continue;
    }
    c.arena = plan->scratch_bytes();
    c.placed = true;
    if (!best || c.arena < best->scratch_bytes()) best = std::move(*plan), chosen = i;
  }
  if (!best) return failed;
  const OrderCandidate& c = schedule.candidates[chosen];
  schedule.order = c.order;
  schedule.method = c.method;
  schedule.peak = c.peak;
  schedule.proved_optimal = schedule.lower_bound == schedule.peak;
  best->schedule = std::move(schedule);
  return std::move(*best);
}

Result<GraphPlan> ReplanGraphFrom(const Graph& graph, const GraphPlan& previous,
                                  TaskIndex first_node, const GraphPlanParams& params) {
  if (first_node < 0) return InvalidArgument("re-plan: first node must be >= 0");
  // The previous plan's order (a plan made without one: the given order).
  Schedule schedule = previous.schedule;
  if (schedule.order.empty()) schedule.order = GivenOrder(graph);
  Graph storage;
  TM_ASSIGN_OR_RETURN(const Graph* ordered, GraphInOrder(graph, schedule.order, &storage));
  TM_ASSIGN_OR_RETURN(GraphPlan plan, Prepare(*ordered, params));
  plan.schedule = std::move(schedule);
  if (previous.placements.size() != graph.tensors.size())
    return InvalidArgument("re-plan: the previous plan has " +
                           std::to_string(previous.placements.size()) +
                           " tensors, the graph " + std::to_string(graph.tensors.size()));
  for (std::size_t b = 0; b < plan.scratch.buffers.size(); ++b) {
    Buffer& buf = plan.scratch.buffers[b];
    if (buf.first_task >= first_node) continue;
    const int t = plan.scratch_owner[b];
    const std::string why = "re-plan from node " + std::to_string(first_node) + ": " +
                            TensorLabel(graph, t) + ", allocated at node " +
                            std::to_string(buf.first_task) + ", ";
    const TensorPlacement& old = previous.placements[static_cast<std::size_t>(t)];
    if (old.arena != Arena::kScratch || old.buffer < 0 ||
        static_cast<std::size_t>(old.buffer) >= previous.scratch.buffers.size() ||
        previous.scratch_owner[static_cast<std::size_t>(old.buffer)] != t)
      return InvalidArgument(why + "had no memory of its own in the previous plan; re-plan from "
                                   "an earlier node");
    const Buffer& was = previous.scratch.buffers[static_cast<std::size_t>(old.buffer)];
    if (was.first_task != buf.first_task || was.size != buf.size || was.last_task != buf.last_task)
      return InvalidArgument(why + "changed (" + std::to_string(was.size) + " -> " +
                             std::to_string(buf.size) + " bytes, nodes [" +
                             std::to_string(was.first_task) + ", " + std::to_string(was.last_task) +
                             "] -> [" + std::to_string(buf.first_task) + ", " +
                             std::to_string(buf.last_task) + "]); re-plan from node " +
                             std::to_string(buf.first_task) + " or earlier");
    if (old.offset % buf.alignment != 0)
      return InvalidArgument(why + "keeps offset " + std::to_string(old.offset) +
                             " which does not suit its alignment " + std::to_string(buf.alignment));
    buf.fixed_offset = old.offset;
  }
  TM_RETURN_IF_ERROR(Finish(*ordered, plan, params));
  return plan;
}

Status ValidateGraphPlan(const Graph& graph, const GraphPlan& plan) {
  const std::size_t n = graph.tensors.size();
  if (plan.placements.size() != n || plan.liveness.tensors.size() != n)
    return InvalidArgument("graph plan: " + std::to_string(plan.placements.size()) +
                           " placements for " + std::to_string(n) + " tensors");
  if (plan.scratch_owner.size() != plan.scratch.buffers.size())
    return InvalidArgument("graph plan: scratch owners do not match the scratch buffers");
  TM_RETURN_IF_ERROR(ValidateOffsetsPlan(plan.scratch, plan.scratch_plan, 1, false)
                         .WithContext("graph plan: scratch arena"));
  std::vector<std::pair<std::uint64_t, std::size_t>> persistent;
  for (std::size_t t = 0; t < n; ++t) {
    const TensorPlacement& p = plan.placements[t];
    const TensorLiveness& l = plan.liveness.tensors[t];
    const std::uint64_t bytes = graph.tensors[t].bytes;
    // Built only for a message: a label per tensor cost more than the checks.
    const auto who = [&] { return "graph plan: " + TensorLabel(graph, static_cast<int>(t)); };
    if (p.arena != l.arena) return InvalidArgument(who() + ": arena differs from its liveness");
    if (p.arena == Arena::kScratch) {
      if (p.buffer < 0 || static_cast<std::size_t>(p.buffer) >= plan.scratch.buffers.size())
        return InvalidArgument(who() + ": no scratch buffer");
      const auto b = static_cast<std::size_t>(p.buffer);
      const Buffer& buf = plan.scratch.buffers[b];
      if (plan.scratch_owner[b] != l.root)
        return InvalidArgument(who() + ": its buffer belongs to " +
                               TensorLabel(graph, plan.scratch_owner[b]) +
                               ", not to the root of its memory");
      if (p.offset != plan.scratch_plan.offsets[b] || bytes > buf.size)
        return InvalidArgument(who() + ": offset or size disagrees with its buffer '" + buf.id + "'");
      if (l.first_node < buf.first_task || l.last_node > buf.last_task)
        return InvalidArgument(who() + ": lives outside its buffer's lifetime");
      const std::uint64_t align = graph.tensors[t].alignment;
      if (align && p.offset % align != 0)
        return InvalidArgument(who() + ": offset " + std::to_string(p.offset) +
                               " is not a multiple of its alignment " + std::to_string(align));
    } else if (p.arena == Arena::kPersistent) {
      std::uint64_t end;
      if (!CheckedAdd(p.offset, bytes, &end) || end > plan.persistent_bytes)
        return InvalidArgument(who() + ": ends beyond the persistent arena");
      const std::uint64_t align = graph.tensors[t].alignment;
      if (align && p.offset % align != 0)
        return InvalidArgument(who() + ": persistent offset not aligned");
      persistent.emplace_back(p.offset, t);
    }
  }
  std::sort(persistent.begin(), persistent.end());
  for (std::size_t k = 1; k < persistent.size(); ++k) {
    const std::size_t prev = persistent[k - 1].second;
    if (persistent[k - 1].first + graph.tensors[prev].bytes > persistent[k].first)
      return InvalidArgument("graph plan: persistent tensors " +
                             TensorLabel(graph, static_cast<int>(prev)) + " and " +
                             TensorLabel(graph, static_cast<int>(persistent[k].second)) +
                             " overlap");
  }
  return Status::Ok();
}

}  // namespace tensormem
