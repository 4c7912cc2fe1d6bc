// SPDX-License-Identifier: Apache-2.0
// ONNX import (library tensormem::onnx, built when libonnx and protobuf are
// found): an ONNX model becomes a Graph ready for PlanGraph.
//
// - Weights (persistent arena): initializers, Constant node outputs, and
//   graph inputs other than the data inputs (models exported without weights
//   keep their parameters as graph inputs with shapes). Constants that no
//   remaining node reads are dropped.
// - Data inputs: the graph inputs named in `data_inputs` or `input_shapes`;
//   when neither names any, every graph input without an initializer, except
//   in a model with no initializers at all (exported without weights), where
//   only the first graph input is data.
// - Shapes: ONNX shape inference, plus folding of the small sub-graphs that
//   compute shapes (and of other small data-independent values, see
//   fold_floating) (Shape, Gather, Concat, Unsqueeze, Squeeze, Add, Sub, Mul,
//   Div, Mod, Where, Equal, Slice, Cast, ConstantOfShape, Range, Expand,
//   Reshape, ... of known values), alternated until nothing changes. Folded
//   nodes leave the graph; a folded value a remaining node reads becomes a
//   constant. Every remaining tensor must end with a fully known shape, or
//   the import fails naming the node and tensor.
// - Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference Dropout are
//   in-place candidates (InPlace::kInput0Unmodified).
// - Bytes = elements x element size of the dtype; nodes run in file order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/graph.h"
#include "tensormem/status.h"

namespace tensormem {

struct OnnxImportParams {
  // Values of symbolic dimensions (dim_param), e.g. {"batch", 1}.
  std::map<std::string, std::int64_t> dims;
  // Shapes of graph inputs, replacing what the file says, e.g.
  // {"input", {1, 3, 224, 224}}. Inputs named here are data inputs.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  // Graph inputs that are data (see the header comment for the default).
  std::vector<std::string> data_inputs;
  // Refuse larger files (protobuf parsing is bounded by this).
  std::uint64_t max_file_bytes = (std::uint64_t{1} << 31) - 1;
  // Fold only results with at most this many elements.
  std::uint64_t max_folded_elements = std::uint64_t{1} << 16;
  // Fold floating-point results too: data computed from shapes alone, like
  // Swin's shifted-window attention masks, becomes a constant as a runtime's
  // constant folding would make it. false: only integer and boolean results
  // (the sub-graphs that compute shapes) are folded.
  bool fold_floating = true;
  // Rounds of shape inference and folding before giving up.
  int max_rounds = 200;
};

struct OnnxModel {
  Graph graph;
  // Per graph tensor: its shape and element type name ("float32").
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::string> dtypes;
  std::size_t file_nodes = 0;      // nodes in the file
  std::size_t constant_nodes = 0;  // Constant nodes (now constants)
  std::size_t folded_nodes = 0;    // shape sub-graph nodes folded away
  int rounds = 0;                  // shape inference + folding rounds
  double seconds = 0;              // import time
};

Result<OnnxModel> ImportOnnxFile(const std::string& path, const OnnxImportParams& params = {});
// `source` names the bytes in messages.
Result<OnnxModel> ImportOnnxBytes(std::string_view bytes, std::string_view source,
                                  const OnnxImportParams& params = {});

}  // namespace tensormem
