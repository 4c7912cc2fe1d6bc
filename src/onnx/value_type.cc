// SPDX-License-Identifier: Apache-2.0
#include "onnx/value_type.h"

namespace tensormem::onnx_import {

ValueType TypeOf(const onnx::TypeProto& type) {
  ValueType v;
  if (!type.has_tensor_type()) return v;
  const auto& tt = type.tensor_type();
  v.dtype = tt.elem_type();
  if (!tt.has_shape()) return v;
  v.has_shape = true;
  v.dims.reserve(static_cast<std::size_t>(tt.shape().dim_size()));
  for (const auto& d : tt.shape().dim()) {
    v.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
    if (d.has_dim_param()) {
      v.symbols.resize(v.dims.size());
      v.symbols.back() = d.dim_param();
    }
  }
  return v;
}

ValueType TypeOf(const onnx::TensorProto& t) {
  ValueType v;
  v.dtype = t.data_type();
  v.has_shape = true;
  v.dims.assign(t.dims().begin(), t.dims().end());
  return v;
}

ValueType TypeOf(const ConstTensor& t) {
  ValueType v;
  v.dtype = t.dtype;
  v.has_shape = true;
  v.dims = t.dims;
  return v;
}

std::string ShapeString(const ValueType& v) {
  if (!v.has_shape) return "unknown";
  std::string s;
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    if (i) s += "x";
    s += v.dims[i] >= 0 ? std::to_string(v.dims[i])
                        : (v.Symbol(i).empty() ? std::string("?") : std::string(v.Symbol(i)));
  }
  return s.empty() ? "scalar" : s;
}

}  // namespace tensormem::onnx_import
