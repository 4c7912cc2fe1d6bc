// SPDX-License-Identifier: Apache-2.0
// From a graph to memory: TensorFlow Lite ArenaPlanner semantics.
//
// A Graph is tensors (bytes, kind) and nodes (inputs, outputs, temporaries,
// an in-place flag) in execution order. ComputeLiveness decides, by
// reference counting, when each tensor's memory is taken and given back;
// PlanGraph puts constants and variables in a persistent arena and
// everything else in a scratch arena planned with an offset strategy
// (default: TFLite's arena order and best fit); CommittedArenas allocates the
// two arenas and resolves tensor pointers; CheckExecution runs the graph over
// that real memory, proving that no live tensor is ever overwritten.
//
// Lifetimes are inclusive node ranges [first_node, last_node], the same
// convention as usage records (a node is a task).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/defaults.h"
#include "tensormem/planning.h"
#include "tensormem/problem.h"
#include "tensormem/schedule.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

// An absent optional tensor in a node's (or the graph's) tensor lists.
inline constexpr int kNoTensor = -1;

// Where a tensor's memory comes from.
enum class TensorKind : std::uint8_t {
  kActivation,  // scratch arena; its role (graph input, graph output,
                // intermediate, temporary) comes from the graph's lists
  kConstant,    // weights and other constants: persistent arena, read-only
  kVariable,    // state kept across runs: persistent arena, live all the run
  kDynamic,     // bytes known only at run time: not planned (the runtime
                // allocates it on its own)
};

// What a tensor is in the graph, derived from its kind and the graph.
enum class TensorRole : std::uint8_t {
  kInput,         // listed in Graph::inputs
  kOutput,        // listed in Graph::outputs (and not an input)
  kIntermediate,  // written by a node
  kTemporary,     // scratch memory of one node
  kConstant,
  kVariable,
  kDynamic,
  kUnused,  // an activation no node writes and that is not a graph input
};

std::string_view Name(TensorKind kind);
std::string_view Name(TensorRole role);

struct GraphTensor {
  std::string name;  // unique when not empty; empty = named by its index
  std::uint64_t bytes = 0;
  TensorKind kind = TensorKind::kActivation;
  // Offset alignment in bytes, a power of two; 0 = the plan's default.
  std::uint64_t alignment = 0;
};

// In-place capability of a node (TFLite's inplace_operator): its first output
// may take the memory of its first input.
enum class InPlace : std::uint8_t {
  kNone,
  kInput0,            // writes its output over input 0: needs equal sizes
  kInput0Unmodified,  // output 0 is input 0's data unmodified (reshape-like)
};

struct GraphNode {
  std::string name;  // for messages; empty = named by its index
  std::string op;    // for messages and reports
  std::vector<int> inputs;   // kNoTensor = absent optional input
  std::vector<int> outputs;  // kNoTensor = absent optional output
  std::vector<int> temporaries;
  InPlace in_place = InPlace::kNone;
};

// Nodes run in the order given (or the one GraphPlanParams::schedule
// chooses, see schedule.h). Every tensor index is in [0, tensors.size())
// or kNoTensor where optional.
struct Graph {
  std::vector<GraphTensor> tensors;
  std::vector<GraphNode> nodes;
  std::vector<int> inputs;   // may hold kNoTensor
  std::vector<int> outputs;  // may hold kNoTensor
};

// "'name'" or "#index" for messages, and the id used in usage records.
std::string TensorLabel(const Graph& graph, int tensor);
std::string NodeLabel(const Graph& graph, std::size_t node);
// The tensor's id in the scratch arena's records: its name, or its index.
std::string TensorId(const Graph& graph, int tensor);

// Checks the graph is well formed: indices in range, alignments powers of
// two, each tensor written by at most one node and never before it is read,
// constants and graph inputs never written, temporaries used by one node
// only, non-empty names unique. Names the node and tensor at fault.
Status CheckGraph(const Graph& graph);

std::vector<TensorRole> TensorRoles(const Graph& graph);

// ---------------------------------------------------------------- liveness

enum class Arena : std::uint8_t { kNone, kScratch, kPersistent };
std::string_view Name(Arena arena);

struct LivenessParams {
  // Debugging: nothing is ever freed (every tensor keeps its own memory, no
  // in-place sharing), as TFLite's preserve_all_tensors.
  bool preserve_all_tensors = false;
  // Honour the nodes' InPlace flags.
  bool in_place = true;
  // TFLite never frees a tensor that no node reads (and that is no graph
  // output). By default such a tensor lives only at the node that writes it.
  bool keep_unread_tensors = false;
};

struct TensorLiveness {
  Arena arena = Arena::kNone;
  // Why a tensor gets no memory (arena kNone): "dynamic", "zero bytes",
  // "never written"; empty otherwise.
  std::string_view unplanned_reason;
  // Scratch tensors: the node that allocates it and the last node its memory
  // is needed (inclusive; the run's last node when never freed). For the root
  // of an in-place chain this covers the whole chain. Persistent tensors:
  // the whole run. -1 when not planned.
  TaskIndex first_node = -1;
  TaskIndex last_node = -1;
  bool never_freed = false;
  // The tensor whose memory this one uses: itself, or the root of the
  // in-place chain it joined (-1 when not planned).
  int root = -1;
};

struct Liveness {
  std::vector<TensorLiveness> tensors;
  TaskIndex last_node = 0;  // the run's last node: max(nodes - 1, 0)
  std::size_t in_place_shared = 0;  // tensors that took their input's memory
};

// Reference counting in execution order (TFLite ArenaPlanner::PlanAllocations):
// - graph inputs and variables are allocated at node 0 and never freed;
//   graph outputs are never freed; constants and variables go to the
//   persistent arena;
// - any other activation is allocated at the node that writes it and freed
//   after the last node that reads it; a node's temporaries live only during
//   that node; absent optional tensors (kNoTensor) are skipped;
// - dynamic and zero-byte tensors, and activations no node writes, are not
//   planned;
// - in-place: a node flagged InPlace gives its first output the memory of
//   its first input when that input's last reader is this node, neither is
//   a graph input or output, both are planned scratch tensors, and the sizes
//   are equal (kInput0) or the output fits (kInput0Unmodified); chains of
//   in-place nodes share one buffer, freed after the chain's last reader.
Result<Liveness> ComputeLiveness(const Graph& graph, const LivenessParams& params = {});

// ---------------------------------------------------------------- planning

struct GraphPlanParams {
  LivenessParams liveness;
  // Alignment of tensors whose own alignment is 0; a power of two.
  std::uint64_t alignment = defaults::kTensorAlignment;
  // The scratch arena's strategy. kArena uses TFLite's order computed from
  // the graph: tensors live for the whole run (allocated at node 0, never
  // freed) first by index, then by size descending, ties by earlier
  // allocation node, then index; each takes the best-fitting gap.
  OffsetsStrategy strategy = OffsetsStrategy::kArena;
  // The execution order to plan in: the given one by default; kBest and
  // kExact choose one with a lower peak of live bytes, kJoint the one of
  // the smallest scratch arena among kExact's orders (schedule.h).
  ScheduleParams schedule;
  // Other knobs of the offset strategies (time limit, validate, ...). Its
  // alignment must stay 1 (PlanGraph refuses another): the alignment is
  // `alignment` above and each tensor's own.
  PlanParams offsets;
};

struct TensorPlacement {
  Arena arena = Arena::kNone;
  std::uint64_t offset = 0;  // in its arena
  int buffer = -1;           // scratch tensors: the buffer in GraphPlan::scratch
};

struct GraphPlan {
  // The order planned in, with its peak and the given order's. The node
  // numbers of the liveness and of the scratch problem's tasks are positions
  // in schedule.order.
  Schedule schedule;
  Liveness liveness;
  std::vector<TensorPlacement> placements;  // per tensor
  // The scratch arena as an offset-planning problem: one buffer per tensor
  // that owns memory (in-place chains are one buffer, sized for the largest
  // member, named after the root), lifetimes from the liveness.
  Problem scratch;
  std::vector<int> scratch_owner;  // buffer -> tensor owning it
  OffsetsPlan scratch_plan;        // per buffer; total = scratch arena bytes
  std::uint64_t persistent_bytes = 0;
  // Every scratch buffer in its own memory, back to back and aligned (no
  // reuse; an in-place chain is one buffer, as in every plan): the naive
  // strategy's arena.
  std::uint64_t naive_scratch_bytes = 0;
  // The largest tensor alignment: both arenas' base addresses are aligned to it.
  std::uint64_t base_alignment = 1;
  std::uint64_t scratch_bytes() const { return scratch_plan.total; }
};

// Chooses the order (params.schedule), then plans both arenas in it.
// Constants and variables are laid out back to back in the persistent arena
// in index order.
// With OrderStrategy::kJoint, PlanGraphInCandidates chooses among the
// scheduler's candidate orders.
Result<GraphPlan> PlanGraph(const Graph& graph, const GraphPlanParams& params = {});

// Plans the graph in each of schedule.candidates (ScheduleGraph with
// kJoint) with params' strategy, and keeps the smallest scratch arena (ties:
// the earlier candidate, the given order first): its plan, with the
// schedule's order, method and peak set to that candidate's and every
// candidate's arena recorded. params.offsets.time_limit_seconds covers all
// candidates (each gets an equal share of what is left); an order whose
// placement runs out of time is left unplaced. Without candidates, plans in
// schedule.order. params.schedule is not read.
Result<GraphPlan> PlanGraphInCandidates(const Graph& graph, Schedule schedule,
                                        const GraphPlanParams& params);

// Re-plans after sizes changed from node `first_node` on (TFLite's
// ResetAllocationsAfter(first_node - 1) then ExecuteAllocations): scratch
// tensors allocated before `first_node` keep their offsets in `previous`
// (their size and allocation node must be unchanged); the others are placed
// around them with the strategy, in previous.schedule.order (node numbers
// are positions in it). The persistent arena is laid out again.
// The kept tensors are fixed offsets to the strategy, so from_objects (which
// cannot honour them) is refused, InvalidArgument, once any tensor is kept.
Result<GraphPlan> ReplanGraphFrom(const Graph& graph, const GraphPlan& previous,
                                  TaskIndex first_node, const GraphPlanParams& params = {});

// Checks a plan against its graph: placements consistent with the liveness,
// the scratch arena through the one validator (ValidateOffsetsPlan), the
// persistent tensors disjoint and inside their arena, alignments kept.
Status ValidateGraphPlan(const Graph& graph, const GraphPlan& plan);

// ---------------------------------------------------------------- memory

// One aligned allocation per arena; tensor pointer = base + offset.
// Committing a plan that needs more than an arena holds grows it (a new
// block, the old contents copied, the old block freed); an arena never
// shrinks until released. Releasing the scratch arena frees its memory but
// keeps the plan; AcquireScratch allocates it again.
class CommittedArenas {
 public:
  CommittedArenas() = default;
  ~CommittedArenas();
  CommittedArenas(const CommittedArenas&) = delete;
  CommittedArenas& operator=(const CommittedArenas&) = delete;
  CommittedArenas(CommittedArenas&& other) noexcept;
  CommittedArenas& operator=(CommittedArenas&& other) noexcept;

  Status Commit(const GraphPlan& plan);
  void ReleaseScratch();
  Status AcquireScratch();
  void Release();  // both arenas; the plan is kept

  // base + offset, or nullptr when the tensor has no memory, nothing was
  // committed, or its arena is released.
  std::byte* Resolve(int tensor) const;

  std::byte* base(Arena arena) const;
  std::uint64_t capacity(Arena arena) const;    // bytes allocated now
  std::uint64_t alignment(Arena arena) const;   // of the base address
  int reallocations(Arena arena) const;         // allocations made so far

 private:
  struct Block {
    std::byte* data = nullptr;
    std::uint64_t capacity = 0;
    std::uint64_t alignment = 1;
    std::uint64_t needed = 0;  // what the committed plan needs
    int allocations = 0;
  };
  Status Reserve(Block& block, std::uint64_t bytes, std::uint64_t alignment, bool keep);
  static void Free(Block& block);
  const Block& block(Arena arena) const { return arena == Arena::kScratch ? scratch_ : persistent_; }

  Block scratch_, persistent_;
  std::vector<TensorPlacement> placements_;
};

// ---------------------------------------------------------------- checking

struct ExecutionCheckParams {
  // false: every tensor writes and checks an 8-byte pattern word at each
  // tensor start offset of its arena that lies inside it (any two tensors
  // that overlap share one such point, so any overlap is caught), touching
  // little memory; true: every byte is filled and checked.
  bool full = false;
};

struct ExecutionReport {
  std::size_t nodes_run = 0;
  std::size_t tensors_written = 0;
  std::size_t tensor_reads_checked = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_checked = 0;
  double seconds = 0;
};

// Runs the graph in the plan's order (plan.schedule.order; empty = the given
// order) over the committed memory: constants, variables
// and graph inputs get their pattern first; at each node every input is
// checked, the temporaries and outputs are written with their own pattern
// (distinct per tensor and position), then the inputs (except one whose
// memory an output took in place) and temporaries are checked again; at the
// end every graph output is checked. A mismatch is an error naming the node,
// the tensor that was overwritten and, when recognisable, the tensor whose
// pattern is found there.
Result<ExecutionReport> CheckExecution(const Graph& graph, const GraphPlan& plan,
                                       const CommittedArenas& arenas,
                                       const ExecutionCheckParams& params = {});

}  // namespace tensormem
