// SPDX-License-Identifier: Apache-2.0
// The execution checker: runs a graph in its plan's order over committed arena memory,
// writing each tensor's own pattern when it is produced and checking it
// whenever it is read. Patterns are 64-bit hashes of (arena, tensor,
// position), so a tensor that some other tensor overwrote fails its check
// and the culprit can be named by matching the bytes found there.
//
// Sparse mode samples each tensor at every tensor start offset of its arena
// that lies inside it. Two tensors that overlap in memory always share such
// a point (the larger of their two starts), so a later write by either is
// seen by the other's check; the run touches a few words per tensor.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "tensormem/graph.h"

namespace tensormem {
namespace {

std::uint64_t Mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Checker {
 public:
  Checker(const Graph& graph, const GraphPlan& plan, const CommittedArenas& arenas,
          const ExecutionCheckParams& params)
      : graph_(graph), plan_(plan), arenas_(arenas), params_(params) {}

  Status Prepare() {
    const std::size_t n = graph_.tensors.size();
    if (plan_.placements.size() != n)
      return InvalidArgument("execution check: the plan is for another graph (" +
                             std::to_string(plan_.placements.size()) + " tensors, graph " +
                             std::to_string(n) + ")");
    last_writer_.assign(n, -1);
    for (std::size_t t = 0; t < n; ++t) {
      const TensorPlacement& p = plan_.placements[t];
      if (p.arena == Arena::kNone) continue;
      std::byte* ptr = arenas_.Resolve(static_cast<int>(t));
      std::byte* base = arenas_.base(p.arena);
      const std::uint64_t bytes = graph_.tensors[t].bytes;
      if (!ptr || !base || ptr != base + p.offset || p.offset > arenas_.capacity(p.arena) ||
          bytes > arenas_.capacity(p.arena) - p.offset)
        return FailedPrecondition("execution check: " + TensorLabel(graph_, static_cast<int>(t)) +
                                  " does not resolve inside its committed " +
                                  std::string(Name(p.arena)) +
                                  " arena (commit the plan and acquire the arena first)");
      Starts(p.arena).push_back(p.offset);
    }
    for (Arena a : {Arena::kScratch, Arena::kPersistent}) {
      auto& s = Starts(a);
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
    }
    return Status::Ok();
  }

  void Write(int t, TaskIndex node) {
    if (!Planned(t)) return;
    last_writer_[static_cast<std::size_t>(t)] = node;
    ++report_.tensors_written;
    ForEachSample(t, [&](std::uint64_t q, std::size_t width) {
      const std::uint64_t w = Pattern(t, q);
      std::memcpy(Address(t, q), &w, width);
      report_.bytes_written += width;
      return true;
    });
  }

  Status Check(int t, const std::string& when) {
    if (!Planned(t)) return Status::Ok();
    ++report_.tensor_reads_checked;
    std::uint64_t bad_at = 0;
    bool ok = true;
    ForEachSample(t, [&](std::uint64_t q, std::size_t width) {
      const std::uint64_t w = Pattern(t, q);
      report_.bytes_checked += width;
      if (std::memcmp(Address(t, q), &w, width) == 0) return true;
      ok = false;
      bad_at = q;
      return false;
    });
    if (ok) return Status::Ok();
    const TensorPlacement& p = plan_.placements[static_cast<std::size_t>(t)];
    std::string msg = "execution check failed: " + when + " " + TensorLabel(graph_, t) +
                      " (written at node " +
                      std::to_string(last_writer_[static_cast<std::size_t>(t)]) + ", " +
                      std::string(Name(p.arena)) + " bytes [" + std::to_string(p.offset) + ", " +
                      std::to_string(p.offset + graph_.tensors[static_cast<std::size_t>(t)].bytes) +
                      ")) was overwritten at offset " + std::to_string(bad_at);
    const int culprit = FindCulprit(p.arena, bad_at, t);
    if (culprit >= 0)
      msg += " by " + TensorLabel(graph_, culprit) + " (written at node " +
             std::to_string(last_writer_[static_cast<std::size_t>(culprit)]) + ")";
    return Internal(msg);
  }

  ExecutionReport& report() { return report_; }

 private:
  std::vector<std::uint64_t>& Starts(Arena a) {
    return a == Arena::kScratch ? scratch_starts_ : persistent_starts_;
  }
  bool Planned(int t) const {
    return t != kNoTensor && plan_.placements[static_cast<std::size_t>(t)].arena != Arena::kNone;
  }
  std::uint64_t Pattern(int t, std::uint64_t q) const {
    const auto arena = static_cast<std::uint64_t>(plan_.placements[static_cast<std::size_t>(t)].arena);
    return Mix(Mix((static_cast<std::uint64_t>(t) << 2) | arena) ^ q);
  }
  std::byte* Address(int t, std::uint64_t q) const {
    return arenas_.base(plan_.placements[static_cast<std::size_t>(t)].arena) + q;
  }

  // fn(q, width) for each sample (arena offset q, width <= 8 bytes inside
  // the tensor); stops when fn returns false.
  template <typename Fn>
  void ForEachSample(int t, Fn&& fn) {
    const TensorPlacement& p = plan_.placements[static_cast<std::size_t>(t)];
    const std::uint64_t lo = p.offset, hi = p.offset + graph_.tensors[static_cast<std::size_t>(t)].bytes;
    auto width = [&](std::uint64_t q) { return static_cast<std::size_t>(std::min<std::uint64_t>(8, hi - q)); };
    if (params_.full) {
      for (std::uint64_t q = lo; q < hi; q += 8)
        if (!fn(q, width(q))) return;
      return;
    }
    // A sample ends at the next sample point, so samples never overlap.
    const auto& s = Starts(p.arena);
    for (auto it = std::lower_bound(s.begin(), s.end(), lo); it != s.end() && *it < hi; ++it) {
      std::size_t w = width(*it);
      if (it + 1 != s.end()) w = static_cast<std::size_t>(std::min<std::uint64_t>(w, *(it + 1) - *it));
      if (!fn(*it, w)) return;
    }
  }

  int FindCulprit(Arena arena, std::uint64_t q, int victim) {
    for (std::size_t u = 0; u < graph_.tensors.size(); ++u) {
      const TensorPlacement& p = plan_.placements[u];
      if (static_cast<int>(u) == victim || p.arena != arena || last_writer_[u] < 0) continue;
      if (q < p.offset || q >= p.offset + graph_.tensors[u].bytes) continue;
      // u's sample covering q, as it wrote it.
      bool match = false;
      ForEachSample(static_cast<int>(u), [&](std::uint64_t at, std::size_t width) {
        if (at + width <= q) return true;
        const std::uint64_t w = Pattern(static_cast<int>(u), at);
        match = at <= q && std::memcmp(arenas_.base(arena) + at, &w, width) == 0;
        return false;
      });
      if (match) return static_cast<int>(u);
    }
    return -1;
  }

  const Graph& graph_;
  const GraphPlan& plan_;
  const CommittedArenas& arenas_;
  const ExecutionCheckParams& params_;
  std::vector<std::uint64_t> scratch_starts_, persistent_starts_;
  std::vector<TaskIndex> last_writer_;
  ExecutionReport report_;
};

// The run in the graph's own node order.
Result<ExecutionReport> Run(const Graph& graph, const GraphPlan& plan, const CommittedArenas& arenas,
                            const ExecutionCheckParams& params) {
  Checker c(graph, plan, arenas, params);
  TM_RETURN_IF_ERROR(c.Prepare());
  const auto& lt = plan.liveness.tensors;
  // Before node 0: the weights are loaded and the inputs filled.
  for (std::size_t t = 0; t < graph.tensors.size(); ++t)
    if (lt[t].arena == Arena::kPersistent) c.Write(static_cast<int>(t), -1);
  for (int t : graph.inputs) c.Write(t, -1);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    const auto ti = static_cast<TaskIndex>(i);
    const std::string at = NodeLabel(graph, i);
    for (int t : node.inputs) TM_RETURN_IF_ERROR(c.Check(t, at + " reads"));
    for (int t : node.temporaries) c.Write(t, ti);
    for (int t : node.outputs) c.Write(t, ti);
    // The node's own writes must not touch what it reads, unless an output
    // took that input's memory in place.
    for (int t : node.inputs) {
      if (t == kNoTensor || lt[static_cast<std::size_t>(t)].arena == Arena::kNone) continue;
      bool taken = false;
      for (int o : node.outputs)
        taken |= o != kNoTensor && lt[static_cast<std::size_t>(o)].root == lt[static_cast<std::size_t>(t)].root;
      if (!taken) TM_RETURN_IF_ERROR(c.Check(t, at + " still reading"));
    }
    for (int t : node.temporaries) TM_RETURN_IF_ERROR(c.Check(t, at + " using its temporary"));
    ++c.report().nodes_run;
  }
  for (int t : graph.outputs) TM_RETURN_IF_ERROR(c.Check(t, "after the run, graph output"));
  return c.report();
}

}  // namespace

Result<ExecutionReport> CheckExecution(const Graph& graph, const GraphPlan& plan,
                                       const CommittedArenas& arenas,
                                       const ExecutionCheckParams& params) {
  const auto start = std::chrono::steady_clock::now();
  TM_RETURN_IF_ERROR(CheckGraph(graph));
  // Node numbers in the plan are positions in its order: run the graph in it.
  Graph storage;
  const Graph* run = &graph;
  if (!plan.schedule.order.empty()) {
    TM_ASSIGN_OR_RETURN(run, GraphInOrder(graph, plan.schedule.order, &storage));
  }
  TM_ASSIGN_OR_RETURN(ExecutionReport report, Run(*run, plan, arenas, params));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tensormem
