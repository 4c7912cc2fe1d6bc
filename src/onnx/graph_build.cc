// SPDX-License-Identifier: Apache-2.0
#include "onnx/graph_build.h"

#include <onnx/defs/schema.h>

#include "core/checked_math.h"
#include "onnx/dtype.h"
#include "onnx/schema_check.h"

namespace tensormem::onnx_import {

std::string NodeName(int k, std::string_view name, std::string_view op_type) {
  return "node " + std::to_string(k) + (name.empty() ? "" : " '" + std::string(name) + "'") + " (" +
         std::string(op_type) + ")";
}

namespace {

class GraphBuilder {
 public:
  explicit GraphBuilder(const BuildContext& context) : c_(context) {}

  Result<OnnxModel> Build(Tables tables) {
    OnnxModel out;
    {
      Building b{std::move(tables), {}, {}};
      b.tensor_of.assign(b.t.values.size(), -1);
      b.out.file_nodes = b.t.file_nodes;
      b.out.folded_nodes = c_.folded_nodes;
      b.out.rounds = c_.rounds;
      // No reallocation (the old and new arrays of a million tensors at
      // once) while building.
      b.out.graph.tensors.reserve(b.t.values.size());
      b.out.shapes.reserve(b.t.values.size());
      b.out.dtypes.reserve(b.t.values.size());
      b.out.graph.nodes.reserve(b.t.nodes.size());
      TM_RETURN_IF_ERROR(AddDataInputs(b));
      for (const Tables::Node& n : b.t.nodes) TM_RETURN_IF_ERROR(AddNode(b, n));
      TM_RETURN_IF_ERROR(AddGraphOutputs(b));
      b.out.constant_nodes = c_.constant_nodes;
      out = std::move(b.out);
    }  // the tables go before the check
    TM_RETURN_IF_ERROR(CheckGraph(out.graph).WithContext(c_.source));
    return out;
  }

 private:
  // The graph under construction from the tables: each value's graph
  // tensor, -1 until created.
  struct Building {
    Tables t;
    OnnxModel out;
    std::vector<int> tensor_of;
  };

  std::string NodeName(const Tables& t, const Tables::Node& n) const {
    return onnx_import::NodeName(n.file_index, t.Str(n.name), t.ops[n.op].op_type);
  }

  // Creates the graph tensor of value `v` with a checked size. `writer` is
  // the node that writes it (null for inputs and constants), for messages.
  Result<int> AddTensor(Building& b, int v, TensorKind kind, const Tables::Node* writer) {
    const Tables::Value& value = b.t.values[static_cast<std::size_t>(v)];
    const std::string name(b.t.Str(value.name));
    auto who = [&] {
      return (writer ? NodeName(b.t, *writer) + ": output" : std::string("tensor")) + " '" + name + "'";
    };
    std::optional<ValueType> type = b.t.TypeOf(v);
    if (!type || !type->has_shape)
      return Error(who() + ": shape unknown after ONNX shape inference and folding" + Hint(b.t, writer));
    if (!type->Known()) {
      const std::string sym = type->FirstSymbol();
      if (!sym.empty())
        return Error(who() + " has symbolic dimension '" + sym + "' (shape " + ShapeString(*type) +
                     "): set it with --dim " + sym + "=VALUE" +
                     (value.data_input ? " or --input-shape " + name + "=..." : ""));
      return Error(who() + ": shape " + ShapeString(*type) + " is not fully known" + Hint(b.t, writer));
    }
    Result<std::uint64_t> esize = ElementSize(type->dtype);
    if (!esize.ok()) return Error(who() + ": " + esize.status().message());
    std::uint64_t bytes = *esize;
    for (std::int64_t d : type->dims)
      if (!internal::CheckedMul(bytes, static_cast<std::uint64_t>(d), &bytes))
        return OutOfRange(c_.source + ": " + who() + ": size of shape " + ShapeString(*type) + " overflows 64 bits");
    Graph& graph = b.out.graph;
    const int id = static_cast<int>(graph.tensors.size());
    graph.tensors.push_back({name, bytes, kind, 0});
    b.out.shapes.push_back(std::move(type->dims));
    b.out.dtypes.push_back(DtypeName(type->dtype));
    b.tensor_of[static_cast<std::size_t>(v)] = id;
    return id;
  }

  Status AddDataInputs(Building& b) {
    for (const auto& [v, is_tensor] : b.t.data_inputs) {
      if (!is_tensor)
        return Unimplemented(c_.source + ": graph input '" + std::string(b.t.Name(v)) + "' is not a tensor");
      TM_ASSIGN_OR_RETURN(int id, AddTensor(b, v, TensorKind::kActivation, nullptr));
      b.out.graph.inputs.push_back(id);
    }
    return Status::Ok();
  }

  // The graph tensor of value `v` that node `n` reads: defined already, or
  // a constant first read here.
  Result<int> ReadTensor(Building& b, int v, const Tables::Node& n) {
    if (const int id = b.tensor_of[static_cast<std::size_t>(v)]; id >= 0) return id;
    if (!b.t.values[static_cast<std::size_t>(v)].constant)
      return Error(NodeName(b.t, n) + " reads '" + std::string(b.t.Name(v)) +
                   "', which is no graph input, initializer or output of an earlier node");
    return AddTensor(b, v, TensorKind::kConstant, nullptr);
  }

  Status AddNode(Building& b, const Tables::Node& n) {
    GraphNode node;
    node.name = b.t.Str(n.name);
    node.op = b.t.ops[n.op].graph_op;
    node.inputs.reserve(n.inputs);
    for (std::size_t i = n.io_at; i < n.io_at + n.inputs; ++i) {
      const int v = b.t.io[i];
      if (v == kNoTensor) {
        node.inputs.push_back(kNoTensor);
        continue;
      }
      TM_ASSIGN_OR_RETURN(int id, ReadTensor(b, v, n));
      node.inputs.push_back(id);
    }
    node.outputs.reserve(n.outputs);
    for (std::size_t i = n.io_at + n.inputs; i < n.io_at + n.inputs + n.outputs; ++i) {
      const int v = b.t.io[i];
      if (v == kNoTensor) {
        node.outputs.push_back(kNoTensor);
        continue;
      }
      const Tables::Value& value = b.t.values[static_cast<std::size_t>(v)];
      if (b.tensor_of[static_cast<std::size_t>(v)] >= 0 || value.constant || value.data_input)
        return Error(NodeName(b.t, n) + " writes '" + std::string(b.t.Name(v)) + "', which is already defined");
      TM_ASSIGN_OR_RETURN(int id, AddTensor(b, v, TensorKind::kActivation, &n));
      node.outputs.push_back(id);
    }
    node.in_place = n.in_place;
    b.out.graph.nodes.push_back(std::move(node));
    return Status::Ok();
  }

  Status AddGraphOutputs(Building& b) {
    for (const int v : b.t.outputs) {
      if (const int id = b.tensor_of[static_cast<std::size_t>(v)]; id >= 0) {
        b.out.graph.outputs.push_back(id);
        continue;
      }
      if (!b.t.values[static_cast<std::size_t>(v)].constant)
        return Error("graph output '" + std::string(b.t.Name(v)) + "' is written by no node");
      TM_ASSIGN_OR_RETURN(int id, AddTensor(b, v, TensorKind::kConstant, nullptr));
      b.out.graph.outputs.push_back(id);
    }
    return Status::Ok();
  }

  // Why the output of `writer` has no known shape, when a reason is known.
  std::string Hint(const Tables& t, const Tables::Node* writer) const {
    if (!writer) return "";
    const Tables::Op& op = t.ops[writer->op];
    std::string h;
    if (!IsDefaultDomain(op.domain) || !onnx::OpSchemaRegistry::Schema(op.op_type, c_.opset, op.domain))
      h = " (op " + op.op_type + " is unknown to ONNX shape inference; give its output shapes in the model's value_info)";
    else if (auto it = c_.why_not.find(writer->file_index); it != c_.why_not.end())
      h = " (folding it failed: " + it->second + ")";
    return h;
  }

  Status Error(const std::string& what) const { return InvalidArgument(c_.source + ": " + what); }

  const BuildContext& c_;
};

}  // namespace

Result<OnnxModel> BuildGraph(Tables tables, const BuildContext& context) {
  return GraphBuilder(context).Build(std::move(tables));
}

}  // namespace tensormem::onnx_import
