// SPDX-License-Identifier: Apache-2.0
// ONNX models as CLI input: importing them (when tensormem::onnx was built),
// the options that shape the import, and planning their scratch arena with
// the graph planner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tensormem/defaults.h"
#include "tensormem/graph.h"
#include "tensormem/planning.h"
#include "tensormem/problem.h"

namespace tensormem::cli {

struct GraphInputOptions {
  std::vector<std::string> dims;          // NAME=VALUE
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224
  std::vector<std::string> data_inputs;
  std::string order{defaults::kOrder};  // OrderStrategy name
  // The exact order search's seconds (`plan` passes its --time-limit).
  double order_time_limit = defaults::kOrderTimeLimitSeconds;
};

// --dim, --input-shape, --data-input, --order.
void AddGraphInputOptions(CLI::App* cmd, GraphInputOptions* options);

// True when the file is an ONNX model (by content or extension).
bool IsGraphInput(const std::string& path);

// An imported model: the graph, and its scratch arena as a problem (one
// buffer per tensor owning memory, ids = tensor names).
struct GraphInput {
  Graph graph;
  std::size_t file_nodes = 0;
  std::size_t folded_nodes = 0;
  double import_seconds = 0;
  GraphPlanParams params;  // alignment as asked
  GraphPlan plan;          // with the default strategy: order, liveness, problem, arenas
};

// Fails with a clear message when the ONNX importer was not built.
Result<GraphInput> LoadGraphInput(const std::string& path, const GraphInputOptions& options,
                                  std::uint64_t alignment);

// The problem in a file: a problem file as LoadProblem reads it, or an ONNX
// model's scratch arena (its records, tensors aligned to
// defaults::kTensorAlignment), as `plan` and Python's load_problem read one.
Result<Problem> LoadProblemOrModel(const std::string& path);

// The graph planned with `strategy` (for `arena`, TFLite's order computed
// from the graph) in the node order of input.plan, or (--order joint) in
// each of its candidate orders, the smallest scratch arena kept.
Result<GraphPlan> PlanScratchArena(const GraphInput& input, OffsetsStrategy strategy,
                                   const PlanParams& params);

}  // namespace tensormem::cli
