// SPDX-License-Identifier: Apache-2.0
#include "onnx/dtype.h"

#include <onnx/onnx_pb.h>

namespace tensormem::onnx_import {

using onnx::TensorProto;

Result<std::uint64_t> ElementSize(std::int32_t dtype) {
  switch (dtype) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8: return std::uint64_t{1};
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: return std::uint64_t{2};
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::FLOAT: return std::uint64_t{4};
    case TensorProto::INT64:
    case TensorProto::UINT64:
    case TensorProto::DOUBLE:
    case TensorProto::COMPLEX64: return std::uint64_t{8};
    case TensorProto::COMPLEX128: return std::uint64_t{16};
    default:
      return InvalidArgument("element type " + DtypeName(dtype) +
                             " has no fixed size (strings and unknown types cannot be planned)");
  }
}

std::string DtypeName(std::int32_t dtype) {
  switch (dtype) {
    case TensorProto::FLOAT: return "float32";
    case TensorProto::UINT8: return "uint8";
    case TensorProto::INT8: return "int8";
    case TensorProto::UINT16: return "uint16";
    case TensorProto::INT16: return "int16";
    case TensorProto::INT32: return "int32";
    case TensorProto::INT64: return "int64";
    case TensorProto::STRING: return "string";
    case TensorProto::BOOL: return "bool";
    case TensorProto::FLOAT16: return "float16";
    case TensorProto::DOUBLE: return "float64";
    case TensorProto::UINT32: return "uint32";
    case TensorProto::UINT64: return "uint64";
    case TensorProto::COMPLEX64: return "complex64";
    case TensorProto::COMPLEX128: return "complex128";
    case TensorProto::BFLOAT16: return "bfloat16";
    case TensorProto::UNDEFINED: return "undefined";
    default: return "type " + std::to_string(dtype);
  }
}

bool IsFloating(std::int32_t dtype) {
  return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE ||
         dtype == TensorProto::FLOAT16 || dtype == TensorProto::BFLOAT16;
}

bool IsIntegral(std::int32_t dtype) {
  switch (dtype) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::INT64:
    case TensorProto::UINT64: return true;
    default: return false;
  }
}

}  // namespace tensormem::onnx_import
