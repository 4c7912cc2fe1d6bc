// SPDX-License-Identifier: Apache-2.0
// The graph built from what the importer read of the model: the values and
// nodes in compact tables (the parsed model is released before the graph,
// as large, is built), each tensor's size checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnx/value_type.h"
#include "tensormem/onnx.h"

namespace tensormem::onnx_import {

// What the graph build reads of the model once inference and folding are
// done: each name the graph uses is a value (its type, whether it is a
// constant or a data input), each graph node its op and its values. Copied
// out of the parsed model, so that the model (hundreds of MB for a graph of
// a million nodes, with the types inference added) is released before the
// graph, as large, is built.
struct Tables {
  struct TextRef {  // in `text`
    std::size_t at = 0;
    std::uint32_t size = 0;
  };
  struct Value {
    TextRef name;
    std::int32_t dtype = 0;
    std::uint32_t rank = 0;
    std::size_t dims_at = 0;  // in `dims`
    bool typed = false, has_shape = false, constant = false, data_input = false;
  };
  struct Op {
    std::string op_type, domain;
    std::string graph_op;  // GraphNode::op
  };
  struct Node {
    int file_index = 0;
    TextRef name;
    std::uint32_t op = 0;  // in `ops`
    std::uint32_t inputs = 0, outputs = 0;
    std::size_t io_at = 0;  // in `io`: the inputs' values, then the outputs'
    InPlace in_place = InPlace::kNone;
  };

  std::string text;
  std::vector<Value> values;
  std::vector<std::int64_t> dims;
  std::unordered_map<int, std::vector<std::string>> symbols;  // of values with a symbolic dimension
  std::vector<Op> ops;
  std::vector<Node> nodes;
  std::vector<int> io;                            // kNoTensor: absent
  std::vector<std::pair<int, bool>> data_inputs;  // value, and whether it is a tensor
  std::vector<int> outputs;
  std::size_t file_nodes = 0;

  TextRef Add(std::string_view s) {
    const TextRef r{text.size(), static_cast<std::uint32_t>(s.size())};
    text.append(s);
    return r;
  }
  std::string_view Str(TextRef r) const { return std::string_view(text).substr(r.at, r.size); }
  std::string_view Name(int v) const { return Str(values[static_cast<std::size_t>(v)].name); }

  std::optional<ValueType> TypeOf(int v) const {
    const Value& value = values[static_cast<std::size_t>(v)];
    if (!value.typed) return std::nullopt;
    ValueType type;
    type.dtype = value.dtype;
    type.has_shape = value.has_shape;
    type.dims.assign(dims.begin() + static_cast<std::ptrdiff_t>(value.dims_at),
                     dims.begin() + static_cast<std::ptrdiff_t>(value.dims_at + value.rank));
    if (auto it = symbols.find(v); it != symbols.end()) type.symbols = it->second;
    return type;
  }
};

// What the graph reports beyond the tables, and what its messages name.
struct BuildContext {
  std::string source;  // the file, for messages
  int opset = 0;
  int rounds = 0;  // of inference and folding
  std::size_t folded_nodes = 0, constant_nodes = 0;
  std::unordered_map<int, std::string> why_not;  // file node -> why folding it failed
};

// "node 12 'name' (Conv)": file node k in messages.
std::string NodeName(int k, std::string_view name, std::string_view op_type);

// The graph of the tables' nodes, in order; an error names the value or
// node and the file. The graph is checked (CheckGraph) once the tables are gone.
Result<OnnxModel> BuildGraph(Tables tables, const BuildContext& context);

}  // namespace tensormem::onnx_import
