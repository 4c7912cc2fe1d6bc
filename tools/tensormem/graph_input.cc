// SPDX-License-Identifier: Apache-2.0
#include "graph_input.h"

#include <charconv>

#include "tensormem/defaults.h"
#include "tensormem/io.h"
#if TENSORMEM_HAVE_ONNX
#include "tensormem/onnx.h"
#endif

namespace tensormem::cli {

void AddGraphInputOptions(CLI::App* cmd, GraphInputOptions* o) {
  cmd->add_option("--dim", o->dims, "ONNX: value of a symbolic dimension, NAME=VALUE (repeatable)");
  cmd->add_option("--input-shape", o->input_shapes,
                  "ONNX: shape of a graph input, NAME=1x3x224x224 (repeatable; makes it a data "
                  "input)");
  cmd->add_option("--data-input", o->data_inputs,
                  "ONNX: a graph input that is data, not weights (repeatable; default: inputs "
                  "without initializers, or only the first one in a model exported without "
                  "weights)");
  cmd->add_option("--order", o->order,
                  "ONNX: the node order to plan in: given (the file's), best (the best of the "
                  "heuristic orders and the given one), exact (best, then a search that proves "
                  "the lowest peak of live bytes where it can, within the time limit) or joint "
                  "(each distinct order exact met, planned with the strategy: the smallest arena)")
      ->capture_default_str();
}

bool IsGraphInput(const std::string& path) {
  Result<InputFormat> f = DetectInputFormat(path);
  return f.ok() && *f == InputFormat::kOnnx;
}

#if TENSORMEM_HAVE_ONNX

namespace {

Result<std::int64_t> ParseInt(const std::string& text, const std::string& what) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || v < 0)
    return InvalidArgument(what + ": '" + text + "' is not a non-negative integer");
  return v;
}

Result<std::pair<std::string, std::string>> SplitAssign(const std::string& arg, const char* flag) {
  const std::size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    return InvalidArgument(std::string(flag) + " " + arg + ": expected NAME=VALUE");
  return std::make_pair(arg.substr(0, eq), arg.substr(eq + 1));
}

}  // namespace

Result<GraphInput> LoadGraphInput(const std::string& path, const GraphInputOptions& o,
                                  std::uint64_t alignment) {
  if (IsStreamInput(path)) return OnnxNotFromAFileError(path);
  OnnxImportParams ip;
  for (const std::string& d : o.dims) {
    TM_ASSIGN_OR_RETURN(auto kv, SplitAssign(d, "--dim"));
    TM_ASSIGN_OR_RETURN(ip.dims[kv.first], ParseInt(kv.second, "--dim " + kv.first));
  }
  for (const std::string& s : o.input_shapes) {
    TM_ASSIGN_OR_RETURN(auto kv, SplitAssign(s, "--input-shape"));
    std::vector<std::int64_t> dims;
    std::size_t start = 0;
    while (start <= kv.second.size()) {
      const std::size_t x = kv.second.find('x', start);
      const std::string part = kv.second.substr(start, x == std::string::npos ? std::string::npos : x - start);
      TM_ASSIGN_OR_RETURN(std::int64_t d, ParseInt(part, "--input-shape " + kv.first));
      dims.push_back(d);
      if (x == std::string::npos) break;
      start = x + 1;
    }
    ip.input_shapes[kv.first] = std::move(dims);
  }
  ip.data_inputs = o.data_inputs;
  TM_ASSIGN_OR_RETURN(OnnxModel model, ImportOnnxFile(path, ip));
  GraphInput in;
  in.graph = std::move(model.graph);
  in.file_nodes = model.file_nodes;
  in.folded_nodes = model.folded_nodes;
  in.import_seconds = model.seconds;
  in.params.alignment = alignment;
  TM_ASSIGN_OR_RETURN(in.params.schedule.order, ParseOrderStrategy(o.order));
  in.params.schedule.time_limit_seconds = o.order_time_limit;
  TM_ASSIGN_OR_RETURN(in.plan, PlanGraph(in.graph, in.params));
  return in;
}

#else

Result<GraphInput> LoadGraphInput(const std::string& path, const GraphInputOptions&,
                                  std::uint64_t) {
  return Unimplemented(InputName(path) + ": an ONNX model, but this tensormem was built without the ONNX "
                                         "importer (libonnx and protobuf were not found)");
}

#endif

Result<Problem> LoadProblemOrModel(const std::string& path) {
  if (!IsGraphInput(path)) return LoadProblem(path);
  TM_ASSIGN_OR_RETURN(GraphInput in, LoadGraphInput(path, {}, defaults::kTensorAlignment));
  return std::move(in.plan.scratch);
}

Result<GraphPlan> PlanScratchArena(const GraphInput& input, OffsetsStrategy strategy,
                                   const PlanParams& params) {
  GraphPlanParams p = input.params;
  p.strategy = strategy;
  p.offsets = params;
  // The order (or the joint candidates) was chosen once, by LoadGraphInput.
  return PlanGraphInCandidates(input.graph, input.plan.schedule, p);
}

}  // namespace tensormem::cli
