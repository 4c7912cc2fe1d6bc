// SPDX-License-Identifier: Apache-2.0
// tensormem records MODEL.onnx [--out RECORDS.csv] [--align N] [--dim ...]
//                              [--input-shape ...] [--data-input ...]
//                              [--preserve-all-tensors] [--no-in-place]
//
// Writes the usage records of a model's scratch arena as MiniMalloc CSV
// (half-open lifetimes, one row per tensor owning memory, ids = tensor
// names, each tensor's alignment), the input every planner here (and
// MiniMalloc itself) takes.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "graph_input.h"
#include "tensormem/io.h"

namespace tensormem::cli {
namespace {

struct RecordsOptions {
  std::string input;
  std::string out = "-";
  std::uint64_t align = defaults::kTensorAlignment;
  bool preserve_all_tensors = false;
  bool no_in_place = false;
  GraphInputOptions graph;
};

int RunRecords(const RecordsOptions& o) {
  if (Status st = CheckNotAnInput(o.out, {o.input}); !st.ok()) return ReportError(st);
  if (o.preserve_all_tensors && o.no_in_place)
    return ReportError(NotApplicable("--no-in-place", "changes nothing with --preserve-all-tensors, under which "
                                                      "no tensor shares memory"));
  // A missing or unreadable file says so, not "not an ONNX model".
  if (Result<InputFormat> f = DetectInputFormat(o.input); !f.ok()) return ReportError(f.status());
  if (!IsGraphInput(o.input))
    return ReportError(InvalidArgument(InputName(o.input) + ": not an ONNX model (records are derived from a "
                                                  "graph; problem files already are records)"));
  Result<GraphInput> g = LoadGraphInput(o.input, o.graph, o.align);
  if (!g.ok()) return ReportError(g.status());
  GraphPlanParams params = g->params;
  params.liveness.preserve_all_tensors = o.preserve_all_tensors;
  params.liveness.in_place = !o.no_in_place;
  Result<GraphPlan> plan = PlanGraph(g->graph, params);
  if (!plan.ok()) return ReportError(plan.status());
  Status st = WriteOutput(o.out, {o.input},
                          [&](std::ostream& f) { return WriteProblemCsv(f, plan->scratch); });
  if (st.ok() && o.out != "-")
    std::cerr << o.out << ": " << plan->scratch.buffers.size() << " records over "
              << g->graph.nodes.size() << " nodes\n";
  return st.ok() ? kExitOk : ReportError(st);
}

}  // namespace

void AddRecordsCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RecordsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "records", "Write the usage records (scratch arena) of an ONNX model as MiniMalloc CSV");
  cmd->add_option("MODEL", o->input, "an ONNX model")->required();
  cmd->add_option("--out,-o", o->out, "output CSV ('-' = standard output)")->capture_default_str();
  cmd->add_option("--align", o->align, "tensor alignment in bytes (a power of two)")
      ->capture_default_str()
      ->check(PowerOfTwoAlign());
  cmd->add_flag("--preserve-all-tensors", o->preserve_all_tensors,
                "debugging: nothing is freed, every tensor keeps its own memory");
  cmd->add_flag("--no-in-place", o->no_in_place, "ignore in-place (reshape-like) sharing");
  AddGraphInputOptions(cmd, &o->graph);
  cmd->callback([o, exit_code] { *exit_code = RunRecords(*o); });
}

}  // namespace tensormem::cli
