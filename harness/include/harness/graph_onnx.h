// SPDX-License-Identifier: Apache-2.0
// Generated graphs as ONNX files (internal, not installed; built with the
// ONNX importer), so that the CLI and Python plan them as they plan a model.
#pragma once

#include <string>

#include "tensormem/graph.h"
#include "tensormem/status.h"

namespace tensormem::internal {

// Writes `graph` as an ONNX model that ImportOnnxFile reads back to the same
// nodes, in the same order, with the same tensor bytes: every node an op of
// the domain "tensormem.generated" named after its op (ONNX's shape
// inference does not know it, so every tensor's shape is in the value_info:
// a UINT8 vector of its bytes); the graph's inputs are data inputs. Graphs
// with temporaries or in-place nodes (which ONNX cannot say) are refused.
Status WriteGraphOnnx(const Graph& graph, const std::string& path);

}  // namespace tensormem::internal
