// SPDX-License-Identifier: Apache-2.0
// ONNX element types: sizes in bytes, names, and families.
#pragma once

#include <cstdint>
#include <string>

#include "tensormem/status.h"

namespace tensormem::onnx_import {

// Bytes per element of an ONNX TensorProto data type; strings and unknown
// types are an error naming the type.
Result<std::uint64_t> ElementSize(std::int32_t dtype);
// "float32", "int64", ... ("type 42" when unknown).
std::string DtypeName(std::int32_t dtype);
bool IsFloating(std::int32_t dtype);  // float16/32/64, bfloat16
bool IsIntegral(std::int32_t dtype);  // signed and unsigned integers, bool

}  // namespace tensormem::onnx_import
