// SPDX-License-Identifier: Apache-2.0
// Folding the small sub-graphs that compute shapes: evaluates one ONNX node
// whose inputs are all known values (for Shape and Size, whose input shape is
// known), numpy-style broadcasting included. Supported ops: Shape, Size,
// Gather, Concat, Unsqueeze, Squeeze, Reshape, Flatten, Transpose, Slice,
// Expand, Tile, Range, ConstantOfShape, Cast, Identity, Where, Add, Sub, Mul,
// Div, Mod, Pow, Max, Min, Sum, Neg, Abs, Floor, Ceil, Sqrt, Reciprocal,
// Sign, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "onnx/const_tensor.h"

namespace onnx {
class NodeProto;
}

namespace tensormem::onnx_import {

// One node input as folding sees it: its value when known, and its shape
// when known (all dimensions fixed). Both null for an unknown or absent input.
struct FoldInput {
  const ConstTensor* value = nullptr;
  const std::vector<std::int64_t>* shape = nullptr;
};

bool IsFoldableOp(const onnx::NodeProto& node);

// Evaluates the node into `outputs` (one per node output). Returns false,
// with the reason in `why_not`, when an input is unknown, an output would
// exceed `max_elements`, or the values are out of the op's domain (index out
// of range, division by zero, ...): the node is then left to run.
bool FoldNode(const onnx::NodeProto& node, int opset, std::span<const FoldInput> inputs,
              std::uint64_t max_elements, std::vector<ConstTensor>* outputs, std::string* why_not);

}  // namespace tensormem::onnx_import
