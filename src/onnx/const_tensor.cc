// SPDX-License-Identifier: Apache-2.0
#include "onnx/const_tensor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/checked_math.h"
#include "onnx/dtype.h"

namespace tensormem::onnx_import {

using onnx::TensorProto;

bool ConstTensor::floating() const { return IsFloating(dtype); }

void ConstTensor::Allocate(std::size_t n) {
  if (floating())
    reals.assign(n, 0.0);
  else
    ints.assign(n, 0);
}

std::optional<std::uint64_t> ElementCount(const std::vector<std::int64_t>& dims,
                                          std::uint64_t limit) {
  std::uint64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (!internal::CheckedMul(n, static_cast<std::uint64_t>(d), &n)) return std::nullopt;
  }
  if (n > limit) return std::nullopt;
  return n;
}

std::int64_t NarrowInt(std::int32_t dtype, std::int64_t v) {
  switch (dtype) {
    case TensorProto::BOOL: return v != 0;
    case TensorProto::INT8: return static_cast<std::int8_t>(v);
    case TensorProto::UINT8: return static_cast<std::uint8_t>(v);
    case TensorProto::INT16: return static_cast<std::int16_t>(v);
    case TensorProto::UINT16: return static_cast<std::uint16_t>(v);
    case TensorProto::INT32: return static_cast<std::int32_t>(v);
    case TensorProto::UINT32: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

double NarrowReal(std::int32_t dtype, double v) {
  return dtype == TensorProto::DOUBLE ? v : static_cast<double>(static_cast<float>(v));
}

namespace {

float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float BFloat16ToFloat(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template <typename T>
T LoadLE(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // ONNX raw data is little-endian, as the host
  return v;
}

// A tensor too large to fold still holds what its shape says: a model
// declaring gigabytes over a few bytes of data is malformed, not large.
// No data at all (a shape only) passes.
Status CheckHeldData(const TensorProto& proto, const std::vector<std::int64_t>& dims, const std::string& what) {
  const std::optional<std::uint64_t> declared = ElementCount(dims, UINT64_MAX);
  if (!declared) return InvalidArgument(what + ": its shape has more than 2^64 elements");
  std::uint64_t held = 0;
  if (proto.has_raw_data()) {
    const std::uint64_t esize = *ElementSize(proto.data_type());
    held = proto.raw_data().size() / esize;
    if (proto.raw_data().size() % esize == 0 && held == *declared) return Status::Ok();
  } else {
    held = static_cast<std::uint64_t>(proto.float_data_size()) + static_cast<std::uint64_t>(proto.double_data_size()) +
           static_cast<std::uint64_t>(proto.int32_data_size()) + static_cast<std::uint64_t>(proto.int64_data_size()) +
           static_cast<std::uint64_t>(proto.uint64_data_size());
    if (held == 0 || held == *declared) return Status::Ok();
  }
  return InvalidArgument(what + ": holds " + std::to_string(held) + " values for a shape of " +
                         std::to_string(*declared) + " elements");
}

void SetElement(ConstTensor& t, std::size_t i, double real, std::int64_t integer) {
  if (t.floating())
    t.reals[i] = real;
  else
    t.ints[i] = NarrowInt(t.dtype, integer);
}

Status Mismatch(const std::string& what, std::size_t got, std::size_t n) {
  return InvalidArgument(what + ": holds " + std::to_string(got) + " values for a shape of " +
                         std::to_string(n) + " elements");
}

// The n values of raw_data into t (allocated); false for an element type
// raw data is not read for.
Result<bool> ReadRawData(const TensorProto& proto, ConstTensor& t, std::size_t n, const std::string& what) {
  const std::string& raw = proto.raw_data();
  const std::uint64_t esize = *ElementSize(t.dtype);
  if (raw.size() != n * esize) return Mismatch(what, raw.size() / esize, n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = raw.data() + i * esize;
    switch (t.dtype) {
      case TensorProto::FLOAT: SetElement(t, i, LoadLE<float>(p), 0); break;
      case TensorProto::DOUBLE: SetElement(t, i, LoadLE<double>(p), 0); break;
      case TensorProto::FLOAT16: SetElement(t, i, HalfToFloat(LoadLE<std::uint16_t>(p)), 0); break;
      case TensorProto::BFLOAT16: SetElement(t, i, BFloat16ToFloat(LoadLE<std::uint16_t>(p)), 0); break;
      case TensorProto::BOOL:
      case TensorProto::UINT8: SetElement(t, i, 0, LoadLE<std::uint8_t>(p)); break;
      case TensorProto::INT8: SetElement(t, i, 0, LoadLE<std::int8_t>(p)); break;
      case TensorProto::UINT16: SetElement(t, i, 0, LoadLE<std::uint16_t>(p)); break;
      case TensorProto::INT16: SetElement(t, i, 0, LoadLE<std::int16_t>(p)); break;
      case TensorProto::UINT32: SetElement(t, i, 0, LoadLE<std::uint32_t>(p)); break;
      case TensorProto::INT32: SetElement(t, i, 0, LoadLE<std::int32_t>(p)); break;
      case TensorProto::UINT64: SetElement(t, i, 0, static_cast<std::int64_t>(LoadLE<std::uint64_t>(p))); break;
      case TensorProto::INT64: SetElement(t, i, 0, LoadLE<std::int64_t>(p)); break;
      default: return false;
    }
  }
  return true;
}

// The n values of the typed field for t's element type into t (allocated).
Status ReadTypedData(const TensorProto& proto, ConstTensor& t, std::size_t n, const std::string& what) {
  switch (t.dtype) {
    case TensorProto::FLOAT:
      if (static_cast<std::size_t>(proto.float_data_size()) != n) return Mismatch(what, proto.float_data_size(), n);
      for (std::size_t i = 0; i < n; ++i) SetElement(t, i, proto.float_data(static_cast<int>(i)), 0);
      break;
    case TensorProto::DOUBLE:
      if (static_cast<std::size_t>(proto.double_data_size()) != n) return Mismatch(what, proto.double_data_size(), n);
      for (std::size_t i = 0; i < n; ++i) SetElement(t, i, proto.double_data(static_cast<int>(i)), 0);
      break;
    case TensorProto::INT64:
      if (static_cast<std::size_t>(proto.int64_data_size()) != n) return Mismatch(what, proto.int64_data_size(), n);
      for (std::size_t i = 0; i < n; ++i) SetElement(t, i, 0, proto.int64_data(static_cast<int>(i)));
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      if (static_cast<std::size_t>(proto.uint64_data_size()) != n) return Mismatch(what, proto.uint64_data_size(), n);
      for (std::size_t i = 0; i < n; ++i)
        SetElement(t, i, 0, static_cast<std::int64_t>(proto.uint64_data(static_cast<int>(i))));
      break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      if (static_cast<std::size_t>(proto.int32_data_size()) != n) return Mismatch(what, proto.int32_data_size(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto bits = static_cast<std::uint16_t>(proto.int32_data(static_cast<int>(i)));
        SetElement(t, i, t.dtype == TensorProto::FLOAT16 ? HalfToFloat(bits) : BFloat16ToFloat(bits), 0);
      }
      break;
    default:  // bool, int8..int32, uint8, uint16 live in int32_data
      if (static_cast<std::size_t>(proto.int32_data_size()) != n) return Mismatch(what, proto.int32_data_size(), n);
      for (std::size_t i = 0; i < n; ++i) SetElement(t, i, 0, proto.int32_data(static_cast<int>(i)));
      break;
  }
  return Status::Ok();
}

}  // namespace

Result<std::optional<ConstTensor>> ReadTensorProto(const TensorProto& proto,
                                                   std::uint64_t max_elements) {
  ConstTensor t;
  t.dtype = proto.data_type();
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  const std::string what = "tensor '" + proto.name() + "'";
  for (std::int64_t d : t.dims)
    if (d < 0) return InvalidArgument(what + ": negative dimension " + std::to_string(d));
  if (proto.data_location() == TensorProto::EXTERNAL) return std::optional<ConstTensor>();
  if (!IsFloating(t.dtype) && !IsIntegral(t.dtype)) return std::optional<ConstTensor>();
  const std::optional<std::uint64_t> count = ElementCount(t.dims, max_elements);
  if (!count) {
    TM_RETURN_IF_ERROR(CheckHeldData(proto, t.dims, what));
    return std::optional<ConstTensor>();
  }
  const auto n = static_cast<std::size_t>(*count);
  t.Allocate(n);
  if (proto.has_raw_data()) {
    TM_ASSIGN_OR_RETURN(const bool read, ReadRawData(proto, t, n, what));
    if (!read) return std::optional<ConstTensor>();
  } else {
    TM_RETURN_IF_ERROR(ReadTypedData(proto, t, n, what));
  }
  return std::optional<ConstTensor>(std::move(t));
}

void WriteTensorProto(const ConstTensor& value, const std::string& name, TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  for (std::int64_t d : value.dims) proto->add_dims(d);
  // Floating values are written as float32 or float64, integers in their
  // own width: shape inference only needs the type and the values.
  const std::int32_t dtype = value.floating()
                                 ? (value.dtype == TensorProto::DOUBLE ? TensorProto::DOUBLE : TensorProto::FLOAT)
                                 : value.dtype;
  proto->set_data_type(dtype);
  const std::uint64_t esize = *ElementSize(dtype);
  std::string raw(value.size() * esize, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) {
    char* p = raw.data() + i * esize;
    if (dtype == TensorProto::FLOAT) {
      const auto f = static_cast<float>(value.reals[i]);
      std::memcpy(p, &f, 4);
    } else if (dtype == TensorProto::DOUBLE) {
      std::memcpy(p, &value.reals[i], 8);
    } else {
      const std::int64_t v = value.ints[i];
      std::memcpy(p, &v, esize);  // little-endian: the low bytes
    }
  }
  proto->set_raw_data(std::move(raw));
}

}  // namespace tensormem::onnx_import
