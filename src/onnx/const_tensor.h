// SPDX-License-Identifier: Apache-2.0
// A small tensor of known values, the currency of shape folding: integers
// (and booleans) as int64, floating types as double, row-major.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensormem/status.h"

namespace onnx {
class TensorProto;
}

namespace tensormem::onnx_import {

struct ConstTensor {
  std::int32_t dtype = 0;  // onnx::TensorProto data type
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> ints;  // integral dtypes
  std::vector<double> reals;       // floating dtypes

  bool floating() const;
  std::size_t size() const { return floating() ? reals.size() : ints.size(); }
  double Real(std::size_t i) const { return floating() ? reals[i] : static_cast<double>(ints[i]); }
  // Resizes the value vector of this dtype's family to `n` (zeros).
  void Allocate(std::size_t n);
};

// Element count of `dims`; nullopt when a dimension is negative or the
// product exceeds `limit`.
std::optional<std::uint64_t> ElementCount(const std::vector<std::int64_t>& dims,
                                          std::uint64_t limit);

// The value of an initializer or Constant attribute with at most
// `max_elements` elements; nullopt when larger, stored outside the file, or
// of a type folding does not handle (strings, complex). A tensor whose data
// does not match its shape is an error naming it.
Result<std::optional<ConstTensor>> ReadTensorProto(const onnx::TensorProto& proto,
                                                   std::uint64_t max_elements);

// Writes `value` as an initializer (raw data), named `name`.
void WriteTensorProto(const ConstTensor& value, const std::string& name, onnx::TensorProto* proto);

// Rounds a value to what the dtype can hold (float32 precision, integer
// width and signedness, bool as 0/1).
std::int64_t NarrowInt(std::int32_t dtype, std::int64_t v);
double NarrowReal(std::int32_t dtype, double v);

}  // namespace tensormem::onnx_import
