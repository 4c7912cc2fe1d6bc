// SPDX-License-Identifier: Apache-2.0
// A value's element type and shape as ONNX knows them (declared, inferred,
// or from a constant), and its shape as messages print it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx/const_tensor.h"

namespace tensormem::onnx_import {

// A value's type as ONNX knows it: element type and, per dimension, a fixed
// value (>= 0) or -1 with, when the dimension is a symbol (dim_param), that
// symbol. `symbols` stays empty when no dimension is a symbol: a graph of
// millions of tensors would otherwise hold a string per dimension.
struct ValueType {
  std::int32_t dtype = 0;
  bool has_shape = false;
  std::vector<std::int64_t> dims;
  std::vector<std::string> symbols;

  bool Known() const {
    if (!has_shape) return false;
    return std::all_of(dims.begin(), dims.end(), [](std::int64_t d) { return d >= 0; });
  }
  std::string FirstSymbol() const {
    for (const std::string& s : symbols)
      if (!s.empty()) return s;
    return "";
  }
  std::string_view Symbol(std::size_t i) const { return i < symbols.size() ? std::string_view(symbols[i]) : std::string_view(); }
};

ValueType TypeOf(const onnx::TypeProto& type);
ValueType TypeOf(const onnx::TensorProto& t);
ValueType TypeOf(const ConstTensor& t);
// "1x3x224x224", a symbol or "?" for an unknown dimension, "scalar", "unknown".
std::string ShapeString(const ValueType& v);

}  // namespace tensormem::onnx_import
