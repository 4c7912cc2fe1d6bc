// SPDX-License-Identifier: Apache-2.0
// The ONNX importer on arbitrary bytes: a model or an error with a message,
// never a crash or a hang; an imported graph is well formed and plans to a
// plan the graph validator accepts. Seeds: fuzz/corpus/onnx (the bundled
// weight-free ResNet-18).
#include <cstdint>
#include <string_view>

#include "reader_fuzz_common.h"
#include "tensormem/graph.h"
#include "tensormem/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tensormem;
  OnnxImportParams params;
  params.max_rounds = 20;  // keep each run fast
  Result<OnnxModel> model =
      ImportOnnxBytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx", params);
  if (!model.ok()) {
    fuzz::Check(!model.status().message().empty(), "errors carry a message");
    return 0;
  }
  fuzz::Check(CheckGraph(model->graph).ok(), "imported graphs are well formed");
  Result<GraphPlan> plan = PlanGraph(model->graph);
  if (!plan.ok()) {
    fuzz::Check(!plan.status().message().empty(), "planning errors carry a message");
    return 0;
  }
  fuzz::Check(ValidateGraphPlan(model->graph, *plan).ok(), "plans validate");
  return 0;
}
