// SPDX-License-Identifier: Apache-2.0
// Generated graphs as ONNX files (see graph_onnx.h).
#include "harness/graph_onnx.h"

#include <fstream>

#include <onnx/onnx_pb.h>

namespace tensormem::internal {
namespace {

constexpr const char* kDomain = "tensormem.generated";

void SetType(onnx::ValueInfoProto* vi, const GraphTensor& t) {
  vi->set_name(t.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::UINT8);
  tt->mutable_shape()->add_dim()->set_dim_value(static_cast<std::int64_t>(t.bytes));
}

Status CheckWritable(const Graph& graph) {
  TM_RETURN_IF_ERROR(CheckGraph(graph));
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    const GraphNode& n = graph.nodes[v];
    if (!n.temporaries.empty() || n.in_place != InPlace::kNone)
      return InvalidArgument(NodeLabel(graph, v) + ": temporaries and in-place nodes have no ONNX form");
  }
  for (const GraphTensor& t : graph.tensors)
    if (t.name.empty() || t.kind != TensorKind::kActivation)
      return InvalidArgument("tensor '" + t.name + "': only named activations have an ONNX form here");
  return Status::Ok();
}

}  // namespace

Status WriteGraphOnnx(const Graph& graph, const std::string& path) {
  TM_RETURN_IF_ERROR(CheckWritable(graph));
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* custom = model.add_opset_import();
  custom->set_domain(kDomain);
  custom->set_version(1);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("generated");
  auto name = [&](int t) { return t == kNoTensor ? std::string() : graph.tensors[static_cast<std::size_t>(t)].name; };
  for (int t : graph.inputs)
    if (t != kNoTensor) SetType(g->add_input(), graph.tensors[static_cast<std::size_t>(t)]);
  for (int t : graph.outputs)
    if (t != kNoTensor) SetType(g->add_output(), graph.tensors[static_cast<std::size_t>(t)]);
  for (const GraphNode& n : graph.nodes) {
    onnx::NodeProto* node = g->add_node();
    node->set_name(n.name);
    node->set_op_type(n.op);
    node->set_domain(kDomain);
    for (int t : n.inputs) node->add_input(name(t));
    for (int t : n.outputs) {
      node->add_output(name(t));
      SetType(g->add_value_info(), graph.tensors[static_cast<std::size_t>(t)]);
    }
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !model.SerializeToOstream(&f) || !f.flush())
    return InvalidArgument(path + ": cannot write the ONNX model");
  return Status::Ok();
}

}  // namespace tensormem::internal
