// SPDX-License-Identifier: Apache-2.0
// The evaluator behind shape folding. Values are int64 (integers, bools) or
// double (floating types); every op checks its arguments and refuses, rather
// than guesses, anything outside its domain, so a hostile model can only
// make folding stop, never crash or loop.
#include "onnx/shape_folding.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_set>

#include <onnx/onnx_pb.h>

#include "core/checked_math.h"
#include "onnx/dtype.h"

namespace tensormem::onnx_import {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

const AttributeProto* FindAttr(const NodeProto& node, std::string_view name) {
  for (const AttributeProto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
std::int64_t AttrInt(const NodeProto& node, std::string_view name, std::int64_t fallback) {
  const AttributeProto* a = FindAttr(node, name);
  return a && a->has_i() ? a->i() : fallback;
}
std::optional<Dims> AttrInts(const NodeProto& node, std::string_view name) {
  const AttributeProto* a = FindAttr(node, name);
  if (!a) return std::nullopt;
  return Dims(a->ints().begin(), a->ints().end());
}

// Failure reporting shared by the ops: the reason is kept for messages.
struct Fold {
  std::uint64_t max_elements;
  std::string why;

  bool Fail(std::string reason) {
    why = std::move(reason);
    return false;
  }
  // Sets the output's dims and allocates it; fails when too large.
  bool Shape(ConstTensor& out, Dims dims) {
    const std::optional<std::uint64_t> n = ElementCount(dims, max_elements);
    if (!n) return Fail("result too large to fold (more than " + std::to_string(max_elements) + " elements)");
    out.dims = std::move(dims);
    out.Allocate(static_cast<std::size_t>(*n));
    return true;
  }
};

bool NormalizeAxis(std::int64_t axis, std::int64_t rank, std::int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

std::size_t Product(const Dims& d, std::size_t from, std::size_t to) {
  std::size_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= static_cast<std::size_t>(d[i]);
  return p;
}

std::optional<Dims> Broadcast(const std::vector<const Dims*>& shapes) {
  std::size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  Dims out(rank, 1);
  for (const Dims* s : shapes) {
    const std::size_t off = rank - s->size();
    for (std::size_t i = 0; i < s->size(); ++i) {
      const std::int64_t d = (*s)[i];
      std::int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return std::nullopt;
    }
  }
  return out;
}

// For each element of `out_dims`, the flat index of the broadcast element of
// `in_dims`.
std::vector<std::size_t> BroadcastIndex(const Dims& in_dims, const Dims& out_dims) {
  const std::size_t rank = out_dims.size(), off = rank - in_dims.size();
  std::vector<std::size_t> stride(rank, 0);
  std::size_t s = 1;
  for (std::size_t i = in_dims.size(); i-- > 0;) {
    stride[off + i] = in_dims[i] == 1 ? 0 : s;
    s *= static_cast<std::size_t>(in_dims[i]);
  }
  const std::size_t n = Product(out_dims, 0, rank);
  std::vector<std::size_t> map(n, 0);
  Dims idx(rank, 0);
  std::size_t flat = 0;
  for (std::size_t k = 0; k < n; ++k) {
    map[k] = flat;
    for (std::size_t d = rank; d-- > 0;) {
      flat += stride[d];
      if (++idx[d] < out_dims[d]) break;
      flat -= stride[d] * static_cast<std::size_t>(out_dims[d]);
      idx[d] = 0;
    }
  }
  return map;
}

// Row-major element strides of an array of shape `dims`.
std::vector<std::size_t> RowMajorStrides(const Dims& dims) {
  std::vector<std::size_t> stride(dims.size(), 1);
  for (std::size_t d = dims.size(); d-- > 1;) stride[d - 1] = stride[d] * static_cast<std::size_t>(dims[d]);
  return stride;
}

// Calls fn(idx, k) for the first `count` indices of shape `dims` in row-major
// order (k = flat index): the loop of every gather-style op.
template <typename Fn>
void ForEachIndex(const Dims& dims, std::size_t count, Fn fn) {
  Dims idx(dims.size(), 0);
  for (std::size_t k = 0; k < count; ++k) {
    fn(static_cast<const Dims&>(idx), k);
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

std::int64_t WrapAdd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t WrapSub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t WrapMul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

bool RealToInt(double v, std::int64_t* out) {
  if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18)) return false;  // NaN too
  *out = static_cast<std::int64_t>(v);
  return true;
}

void Store(ConstTensor& out, std::size_t i, double real, std::int64_t integer) {
  if (out.floating())
    out.reals[i] = NarrowReal(out.dtype, real);
  else
    out.ints[i] = NarrowInt(out.dtype, integer);
}

// Copies element `from` of `in` to element `to` of `out` (same family).
void CopyElement(const ConstTensor& in, std::size_t from, ConstTensor& out, std::size_t to) {
  if (out.floating())
    out.reals[to] = in.reals[from];
  else
    out.ints[to] = in.ints[from];
}

ConstTensor Like(const ConstTensor& t) {
  ConstTensor out;
  out.dtype = t.dtype;
  return out;
}

std::optional<Dims> IntsOf(const ConstTensor* t) {
  if (!t || t->floating()) return std::nullopt;
  return t->ints;
}

class Evaluator {
 public:
  Evaluator(const NodeProto& node, int opset, std::span<const FoldInput> in, std::uint64_t max)
      : node_(node), opset_(opset), in_(in), f_{max, {}} {}

  bool Run(std::vector<ConstTensor>* outs) {
    const std::string& op = node_.op_type();
    outs->assign(static_cast<std::size_t>(node_.output_size()), ConstTensor{});
    if (outs->empty()) return f_.Fail("no outputs");
    ConstTensor& out = (*outs)[0];
    if ((op == "Shape" || op == "Size") && node_.input_size() < 1)
      return f_.Fail(op + " needs 1 input");
    if (op == "Shape") return ShapeOp(out);
    if (op == "Size") return SizeOp(out);
    if (!InputsKnown(op)) return false;
    for (auto group : {&Evaluator::StructuralOp, &Evaluator::UnaryOp, &Evaluator::ArithOp, &Evaluator::CompareOp})
      if (const std::optional<bool> folded = (this->*group)(op, out)) return *folded;
    return f_.Fail("op " + op + " is not folded");
  }

  bool InputsKnown(const std::string& op) {
    // Every op but Shape and Size needs the values of its present inputs.
    for (int i = 0; i < node_.input_size(); ++i)
      if (!node_.input(i).empty() && !Value(i))
        return f_.Fail("input '" + node_.input(i) + "' is not a known value");
    // Every evaluator below reads its leading inputs without checking: a
    // node with too few (a hostile model: Not, Equal, Slice without inputs)
    // is refused here, once, for every op.
    const int need = MinInputs(op);
    for (int i = 0; i < need; ++i)
      if (!Value(i))
        return f_.Fail(op + " needs at least " + std::to_string(need) + " input(s), input " +
                       std::to_string(i) + " is missing");
    return true;
  }

  // Ops that move, select or make values; nothing when `op` is none of them.
  std::optional<bool> StructuralOp(const std::string& op, ConstTensor& out) {
    if (op == "Identity") return Copy(out, *Value(0));
    if (op == "Cast") return CastOp(out);
    if (op == "Gather") return GatherOp(out);
    if (op == "Concat") return ConcatOp(out);
    if (op == "Unsqueeze") return UnsqueezeOp(out);
    if (op == "Squeeze") return SqueezeOp(out);
    if (op == "Reshape") return ReshapeOp(out);
    if (op == "Flatten") return FlattenOp(out);
    if (op == "Transpose") return TransposeOp(out);
    if (op == "Slice") return SliceOp(out);
    if (op == "Expand") return ExpandOp(out);
    if (op == "Tile") return TileOp(out);
    if (op == "Range") return RangeOp(out);
    if (op == "ConstantOfShape") return ConstantOfShapeOp(out);
    if (op == "Where") return WhereOp(out);
    return std::nullopt;
  }

  // Element-wise ops of one input; nothing when `op` is none of them.
  std::optional<bool> UnaryOp(const std::string& op, ConstTensor& out) {
    if (op == "Not") return Unary(out, [](double) { return 0.0; }, [](std::int64_t a) { return std::int64_t{!a}; });
    if (op == "Neg") return Unary(out, [](double a) { return -a; }, [](std::int64_t a) { return WrapSub(0, a); });
    if (op == "Abs") return Unary(out, [](double a) { return std::fabs(a); }, [](std::int64_t a) { return a < 0 ? WrapSub(0, a) : a; });
    if (op == "Sign") return Unary(out, [](double a) { return static_cast<double>((a > 0) - (a < 0)); }, [](std::int64_t a) { return std::int64_t{(a > 0) - (a < 0)}; });
    if (op == "Floor") return Unary(out, [](double a) { return std::floor(a); }, [](std::int64_t a) { return a; });
    if (op == "Ceil") return Unary(out, [](double a) { return std::ceil(a); }, [](std::int64_t a) { return a; });
    if (op == "Sqrt") return FloatOnly(out) && Unary(out, [](double a) { return std::sqrt(a); }, nullptr);
    if (op == "Reciprocal") return FloatOnly(out) && Unary(out, [](double a) { return 1.0 / a; }, nullptr);
    return std::nullopt;
  }

  // Element-wise arithmetic of two or more inputs; nothing when `op` is none of them.
  std::optional<bool> ArithOp(const std::string& op, ConstTensor& out) {
    if (op == "Add" || op == "Sum") return Arith(out, [](double a, double b) { return a + b; }, [](std::int64_t a, std::int64_t b, std::int64_t* r) { *r = WrapAdd(a, b); return true; });
    if (op == "Sub") return Arith(out, [](double a, double b) { return a - b; }, [](std::int64_t a, std::int64_t b, std::int64_t* r) { *r = WrapSub(a, b); return true; });
    if (op == "Mul") return Arith(out, [](double a, double b) { return a * b; }, [](std::int64_t a, std::int64_t b, std::int64_t* r) { *r = WrapMul(a, b); return true; });
    if (op == "Div") return Arith(out, [](double a, double b) { return a / b; }, [](std::int64_t a, std::int64_t b, std::int64_t* r) {
      if (b == 0 || (a == kI64Min && b == -1)) return false;
      *r = a / b;  // truncation toward zero, as ONNX runtimes do
      return true;
    });
    if (op == "Mod") {
      const bool fmod = AttrInt(node_, "fmod", 0) != 0;
      return Arith(out, [](double a, double b) { return std::fmod(a, b); }, [fmod](std::int64_t a, std::int64_t b, std::int64_t* r) {
        if (b == 0 || (a == kI64Min && b == -1)) return false;
        std::int64_t m = a % b;
        if (!fmod && m != 0 && ((m < 0) != (b < 0))) m += b;  // the divisor's sign
        *r = m;
        return true;
      });
    }
    if (op == "Pow") return Arith(out, [](double a, double b) { return std::pow(a, b); }, [](std::int64_t a, std::int64_t b, std::int64_t* r) {
      return RealToInt(std::pow(static_cast<double>(a), static_cast<double>(b)), r);
    });
    if (op == "Max") return Arith(out, [](double a, double b) { return std::max(a, b); }, [](std::int64_t a, std::int64_t b, std::int64_t* r) { *r = std::max(a, b); return true; });
    if (op == "Min") return Arith(out, [](double a, double b) { return std::min(a, b); }, [](std::int64_t a, std::int64_t b, std::int64_t* r) { *r = std::min(a, b); return true; });
    return std::nullopt;
  }

  // Comparisons and logic, to bool; nothing when `op` is none of them.
  std::optional<bool> CompareOp(const std::string& op, ConstTensor& out) {
    if (op == "Equal") return Compare(out, std::equal_to<>());
    if (op == "Less") return Compare(out, std::less<>());
    if (op == "Greater") return Compare(out, std::greater<>());
    if (op == "LessOrEqual") return Compare(out, std::less_equal<>());
    if (op == "GreaterOrEqual") return Compare(out, std::greater_equal<>());
    if (op == "And") return Compare(out, [](auto a, auto b) { return a != 0 && b != 0; });
    if (op == "Or") return Compare(out, [](auto a, auto b) { return a != 0 || b != 0; });
    if (op == "Xor") return Compare(out, [](auto a, auto b) { return (a != 0) != (b != 0); });
    return std::nullopt;
  }

  const std::string& why() const { return f_.why; }

 private:
  // The inputs an op's evaluator dereferences unconditionally.
  int MinInputs(const std::string& op) const {
    if (op == "Where" || op == "Range") return 3;
    if (op == "Slice") return opset_ >= 10 ? 3 : 1;
    for (const char* binary : {"Gather", "Equal", "Less", "Greater", "LessOrEqual",
                               "GreaterOrEqual", "And", "Or", "Xor", "Expand", "Tile", "Reshape"})
      if (op == binary) return 2;
    return 1;
  }

  const ConstTensor* Value(int i) const {
    return i < static_cast<int>(in_.size()) ? in_[static_cast<std::size_t>(i)].value : nullptr;
  }
  bool Present(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }

  bool Copy(ConstTensor& out, const ConstTensor& from) {
    out = from;
    return true;
  }

  bool FloatOnly(const ConstTensor&) {
    return Value(0)->floating() || f_.Fail("op needs a floating input");
  }

  bool ShapeOp(ConstTensor& out) {
    const FoldInput& x = in_.empty() ? kNone : in_[0];
    const Dims* shape = x.shape ? x.shape : (x.value ? &x.value->dims : nullptr);
    if (!shape) return f_.Fail("the shape of input '" + node_.input(0) + "' is not known");
    const auto rank = static_cast<std::int64_t>(shape->size());
    std::int64_t start = AttrInt(node_, "start", 0), end = AttrInt(node_, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, 0, rank);
    out.dtype = TensorProto::INT64;
    out.dims = {std::max<std::int64_t>(end - start, 0)};
    out.ints.assign(shape->begin() + start, shape->begin() + std::max(start, end));
    return true;
  }

  bool SizeOp(ConstTensor& out) {
    const FoldInput& x = in_.empty() ? kNone : in_[0];
    const Dims* shape = x.shape ? x.shape : (x.value ? &x.value->dims : nullptr);
    if (!shape) return f_.Fail("the shape of input '" + node_.input(0) + "' is not known");
    const std::optional<std::uint64_t> n = ElementCount(*shape, static_cast<std::uint64_t>(kI64Max));
    if (!n) return f_.Fail("size overflows");
    out.dtype = TensorProto::INT64;
    out.dims = {};
    out.ints = {static_cast<std::int64_t>(*n)};
    return true;
  }

  bool CastOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    out.dtype = static_cast<std::int32_t>(AttrInt(node_, "to", 0));
    if (!IsFloating(out.dtype) && !IsIntegral(out.dtype)) return f_.Fail("cast to an unsupported type");
    if (!f_.Shape(out, x.dims)) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (out.floating()) {
        Store(out, i, x.Real(i), 0);
      } else if (x.floating()) {
        std::int64_t v;
        if (out.dtype == TensorProto::BOOL) {
          v = x.reals[i] != 0;
        } else if (!RealToInt(x.reals[i], &v)) {
          return f_.Fail("cast of " + std::to_string(x.reals[i]) + " to an integer overflows");
        }
        Store(out, i, 0, v);
      } else {
        Store(out, i, 0, x.ints[i]);
      }
    }
    return true;
  }

  bool GatherOp(ConstTensor& out) {
    const ConstTensor& data = *Value(0);
    const std::optional<Dims> idx = IntsOf(Value(1));
    if (!idx) return f_.Fail("indices are not integers");
    const auto rank = static_cast<std::int64_t>(data.dims.size());
    std::int64_t axis;
    if (!NormalizeAxis(AttrInt(node_, "axis", 0), rank, &axis)) return f_.Fail("axis out of range");
    const auto a = static_cast<std::size_t>(axis);
    Dims dims(data.dims.begin(), data.dims.begin() + axis);
    dims.insert(dims.end(), Value(1)->dims.begin(), Value(1)->dims.end());
    dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    out = Like(data);
    if (!f_.Shape(out, dims)) return false;
    const std::size_t outer = Product(data.dims, 0, a), inner = Product(data.dims, a + 1, data.dims.size());
    const std::int64_t extent = data.dims[a];
    std::size_t k = 0;
    for (std::size_t o = 0; o < outer; ++o)
      for (std::int64_t i : *idx) {
        if (i < -extent || i >= extent) return f_.Fail("index " + std::to_string(i) + " out of range");
        const auto j = static_cast<std::size_t>(i < 0 ? i + extent : i);
        for (std::size_t r = 0; r < inner; ++r)
          CopyElement(data, (o * static_cast<std::size_t>(extent) + j) * inner + r, out, k++);
      }
    return true;
  }

  bool ConcatOp(ConstTensor& out) {
    const ConstTensor& first = *Value(0);
    const auto rank = static_cast<std::int64_t>(first.dims.size());
    std::int64_t axis;
    if (!NormalizeAxis(AttrInt(node_, "axis", 0), rank, &axis)) return f_.Fail("axis out of range");
    const auto a = static_cast<std::size_t>(axis);
    Dims dims = first.dims;
    dims[a] = 0;
    for (int i = 0; i < node_.input_size(); ++i) {
      const ConstTensor* t = Value(i);
      if (!t) continue;
      if (t->dims.size() != first.dims.size() || t->floating() != first.floating())
        return f_.Fail("inputs differ in rank or type");
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (d != a && t->dims[d] != first.dims[d]) return f_.Fail("inputs differ in shape");
      dims[a] += t->dims[a];
    }
    out = Like(first);
    if (!f_.Shape(out, dims)) return false;
    const std::size_t outer = Product(first.dims, 0, a);
    std::size_t k = 0;
    for (std::size_t o = 0; o < outer; ++o)
      for (int i = 0; i < node_.input_size(); ++i) {
        const ConstTensor* t = Value(i);
        if (!t) continue;
        const std::size_t chunk = Product(t->dims, a, t->dims.size());
        for (std::size_t r = 0; r < chunk; ++r) CopyElement(*t, o * chunk + r, out, k++);
      }
    return true;
  }

  // Axes from input 1 (opset >= 13) or from the attribute.
  std::optional<Dims> Axes() const {
    if (opset_ >= 13) return Present(1) ? IntsOf(Value(1)) : std::nullopt;
    return AttrInts(node_, "axes");
  }

  bool UnsqueezeOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const std::optional<Dims> axes = Axes();
    if (!axes) return f_.Fail("axes unknown");
    const auto rank = static_cast<std::int64_t>(x.dims.size() + axes->size());
    std::vector<char> inserted(static_cast<std::size_t>(rank), 0);
    for (std::int64_t ax : *axes) {
      std::int64_t a;
      if (!NormalizeAxis(ax, rank, &a) || inserted[static_cast<std::size_t>(a)]) return f_.Fail("bad axes");
      inserted[static_cast<std::size_t>(a)] = 1;
    }
    Dims dims;
    std::size_t k = 0;
    for (std::int64_t d = 0; d < rank; ++d) dims.push_back(inserted[static_cast<std::size_t>(d)] ? 1 : x.dims[k++]);
    out = x;
    out.dims = dims;
    return true;
  }

  bool SqueezeOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    std::vector<char> drop(x.dims.size(), 0);
    const std::optional<Dims> axes = Axes();
    if (axes) {
      for (std::int64_t ax : *axes) {
        std::int64_t a;
        if (!NormalizeAxis(ax, rank, &a) || x.dims[static_cast<std::size_t>(a)] != 1) return f_.Fail("bad axes");
        drop[static_cast<std::size_t>(a)] = 1;
      }
    } else {
      for (std::size_t d = 0; d < x.dims.size(); ++d) drop[d] = x.dims[d] == 1;
    }
    out = x;
    out.dims.clear();
    for (std::size_t d = 0; d < x.dims.size(); ++d)
      if (!drop[d]) out.dims.push_back(x.dims[d]);
    return true;
  }

  bool ReshapeOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const std::optional<Dims> shape = IntsOf(Value(1));
    if (!shape) return f_.Fail("shape unknown");
    const bool allowzero = AttrInt(node_, "allowzero", 0) != 0;
    Dims dims = *shape;
    int infer = -1;
    std::uint64_t known = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 0 && !allowzero) {
        if (d >= x.dims.size()) return f_.Fail("0 beyond the input's rank");
        dims[d] = x.dims[d];
      }
      if (dims[d] == -1) {
        if (infer >= 0) return f_.Fail("two -1 dimensions");
        infer = static_cast<int>(d);
        continue;
      }
      if (dims[d] < 0) return f_.Fail("negative dimension");
      known *= static_cast<std::uint64_t>(dims[d]);
    }
    const std::uint64_t total = x.size();
    if (infer >= 0) {
      if (known == 0 || total % known != 0) return f_.Fail("cannot infer the -1 dimension");
      dims[static_cast<std::size_t>(infer)] = static_cast<std::int64_t>(total / known);
    } else if (known != total) {
      return f_.Fail("element count changes");
    }
    out = x;
    out.dims = dims;
    return true;
  }

  bool FlattenOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    std::int64_t axis = AttrInt(node_, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return f_.Fail("axis out of range");
    out = x;
    out.dims = {static_cast<std::int64_t>(Product(x.dims, 0, static_cast<std::size_t>(axis))),
                static_cast<std::int64_t>(Product(x.dims, static_cast<std::size_t>(axis), x.dims.size()))};
    return true;
  }

  bool TransposeOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const std::size_t rank = x.dims.size();
    Dims perm = AttrInts(node_, "perm").value_or(Dims{});
    if (perm.empty())
      for (std::size_t d = rank; d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
    if (perm.size() != rank) return f_.Fail("perm of the wrong length");
    std::vector<char> seen(rank, 0);
    for (std::int64_t p : perm) {
      if (p < 0 || static_cast<std::size_t>(p) >= rank || seen[static_cast<std::size_t>(p)]) return f_.Fail("bad perm");
      seen[static_cast<std::size_t>(p)] = 1;
    }
    Dims dims(rank);
    for (std::size_t d = 0; d < rank; ++d) dims[d] = x.dims[static_cast<std::size_t>(perm[d])];
    out = Like(x);
    if (!f_.Shape(out, dims)) return false;
    const std::vector<std::size_t> in_stride = RowMajorStrides(x.dims);
    ForEachIndex(dims, out.size(), [&](const Dims& idx, std::size_t k) {
      std::size_t from = 0;
      for (std::size_t d = 0; d < rank; ++d) from += static_cast<std::size_t>(idx[d]) * in_stride[static_cast<std::size_t>(perm[d])];
      CopyElement(x, from, out, k);
    });
    return true;
  }

  bool SliceOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    std::optional<Dims> starts, ends, axes, steps;
    if (opset_ < 10) {
      starts = AttrInts(node_, "starts");
      ends = AttrInts(node_, "ends");
      axes = AttrInts(node_, "axes");
    } else {
      starts = IntsOf(Value(1));
      ends = IntsOf(Value(2));
      if (Present(3)) axes = IntsOf(Value(3));
      if (Present(4)) steps = IntsOf(Value(4));
    }
    if (!starts || !ends || starts->size() != ends->size()) return f_.Fail("starts/ends unknown");
    if (!axes) {
      axes.emplace();
      for (std::size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<std::int64_t>(i));
    }
    if (!steps) steps = Dims(starts->size(), 1);
    if (axes->size() != starts->size() || steps->size() != starts->size()) return f_.Fail("bad slice arguments");
    Dims begin(x.dims.size(), 0), step(x.dims.size(), 1), dims = x.dims;
    std::vector<char> seen(x.dims.size(), 0);
    for (std::size_t i = 0; i < starts->size(); ++i) {
      std::int64_t a;
      if (!NormalizeAxis((*axes)[i], rank, &a) || seen[static_cast<std::size_t>(a)]) return f_.Fail("bad axes");
      seen[static_cast<std::size_t>(a)] = 1;
      const std::int64_t dim = x.dims[static_cast<std::size_t>(a)], st = (*steps)[i];
      if (st == 0 || st == kI64Min) return f_.Fail("bad step");
      std::int64_t s = (*starts)[i], e = (*ends)[i];
      if (s < 0) s = s < -dim ? 0 : s + dim;  // avoids overflow on INT64_MIN
      if (e < 0) e = e < -dim ? -1 : e + dim;
      std::int64_t count;
      if (st > 0) {
        s = std::clamp<std::int64_t>(s, 0, dim);
        e = std::clamp<std::int64_t>(e, 0, dim);
        count = e > s ? (e - s + st - 1) / st : 0;
      } else {
        s = std::clamp<std::int64_t>(s, 0, dim - 1);
        e = std::clamp<std::int64_t>(e, -1, dim - 1);
        count = s > e ? (s - e - st - 1) / -st : 0;
      }
      begin[static_cast<std::size_t>(a)] = s;
      step[static_cast<std::size_t>(a)] = st;
      dims[static_cast<std::size_t>(a)] = count;
    }
    out = Like(x);
    if (!f_.Shape(out, dims)) return false;
    const std::size_t r = x.dims.size();
    const std::vector<std::size_t> stride = RowMajorStrides(x.dims);
    ForEachIndex(dims, out.size(), [&](const Dims& idx, std::size_t k) {
      std::size_t from = 0;
      for (std::size_t d = 0; d < r; ++d)
        from += static_cast<std::size_t>(begin[d] + idx[d] * step[d]) * stride[d];
      CopyElement(x, from, out, k);
    });
    return true;
  }

  bool BroadcastTo(ConstTensor& out, const ConstTensor& x, const Dims& dims) {
    out = Like(x);
    if (!f_.Shape(out, dims)) return false;
    const std::vector<std::size_t> map = BroadcastIndex(x.dims, dims);
    for (std::size_t k = 0; k < map.size(); ++k) CopyElement(x, map[k], out, k);
    return true;
  }

  bool ExpandOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const std::optional<Dims> shape = IntsOf(Value(1));
    if (!shape) return f_.Fail("shape unknown");
    const std::optional<Dims> dims = Broadcast({&x.dims, &*shape});
    if (!dims) return f_.Fail("shapes do not broadcast");
    for (std::int64_t d : *dims)
      if (d < 0) return f_.Fail("negative dimension");
    return BroadcastTo(out, x, *dims);
  }

  bool TileOp(ConstTensor& out) {
    const ConstTensor& x = *Value(0);
    const std::optional<Dims> reps = IntsOf(Value(1));
    if (!reps || reps->size() != x.dims.size()) return f_.Fail("repeats unknown");
    Dims dims = x.dims;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if ((*reps)[d] < 0) return f_.Fail("negative repeat");
      std::uint64_t v;
      if (!internal::CheckedMul(static_cast<std::uint64_t>(dims[d]), static_cast<std::uint64_t>((*reps)[d]), &v) ||
          v > f_.max_elements)
        return f_.Fail("result too large to fold");
      dims[d] = static_cast<std::int64_t>(v);
    }
    out = Like(x);
    if (!f_.Shape(out, dims)) return false;
    const std::size_t r = dims.size();
    const std::vector<std::size_t> stride = RowMajorStrides(x.dims);
    ForEachIndex(dims, out.size(), [&](const Dims& idx, std::size_t k) {
      std::size_t from = 0;
      for (std::size_t d = 0; d < r; ++d) from += static_cast<std::size_t>(idx[d] % x.dims[d]) * stride[d];
      CopyElement(x, from, out, k);
    });
    return true;
  }

  bool RangeOp(ConstTensor& out) {
    const ConstTensor *s = Value(0), *l = Value(1), *d = Value(2);
    if (s->size() != 1 || l->size() != 1 || d->size() != 1) return f_.Fail("range arguments must be scalars");
    out = Like(*s);
    double count_real;
    if (s->floating()) {
      if (d->Real(0) == 0) return f_.Fail("zero delta");
      count_real = std::ceil((l->Real(0) - s->Real(0)) / d->Real(0));
    } else {
      const std::int64_t st = s->ints[0], li = l->ints[0], de = d->ints[0];
      if (de == 0) return f_.Fail("zero delta");
      count_real = std::ceil((static_cast<double>(li) - static_cast<double>(st)) / static_cast<double>(de));
    }
    if (!(count_real < static_cast<double>(f_.max_elements) + 1)) return f_.Fail("result too large to fold");
    const auto count = static_cast<std::int64_t>(std::max(count_real, 0.0));
    if (!f_.Shape(out, {count})) return false;
    for (std::int64_t i = 0; i < count; ++i) {
      if (out.floating())
        Store(out, static_cast<std::size_t>(i), s->Real(0) + static_cast<double>(i) * d->Real(0), 0);
      else
        Store(out, static_cast<std::size_t>(i), 0, WrapAdd(s->ints[0], WrapMul(i, d->ints[0])));
    }
    return true;
  }

  bool ConstantOfShapeOp(ConstTensor& out) {
    const std::optional<Dims> dims = IntsOf(Value(0));
    if (!dims) return f_.Fail("shape unknown");
    ConstTensor fill;
    fill.dtype = TensorProto::FLOAT;
    fill.reals = {0.0};
    if (const AttributeProto* a = FindAttr(node_, "value"); a && a->has_t()) {
      Result<std::optional<ConstTensor>> v = ReadTensorProto(a->t(), 1);
      if (!v.ok() || !v->has_value() || (*v)->size() != 1) return f_.Fail("value is not one element");
      fill = std::move(**v);
    }
    out = Like(fill);
    if (!f_.Shape(out, *dims)) return false;
    for (std::size_t k = 0; k < out.size(); ++k) CopyElement(fill, 0, out, k);
    return true;
  }

  bool WhereOp(ConstTensor& out) {
    const ConstTensor &c = *Value(0), &x = *Value(1), &y = *Value(2);
    if (c.floating() || x.floating() != y.floating()) return f_.Fail("bad types");
    const std::optional<Dims> dims = Broadcast({&c.dims, &x.dims, &y.dims});
    if (!dims) return f_.Fail("shapes do not broadcast");
    out = Like(x);
    if (!f_.Shape(out, *dims)) return false;
    const auto mc = BroadcastIndex(c.dims, *dims), mx = BroadcastIndex(x.dims, *dims),
               my = BroadcastIndex(y.dims, *dims);
    for (std::size_t k = 0; k < out.size(); ++k)
      c.ints[mc[k]] ? CopyElement(x, mx[k], out, k) : CopyElement(y, my[k], out, k);
    return true;
  }

  template <typename RealFn, typename IntFn>
  bool Unary(ConstTensor& out, RealFn real, IntFn integer) {
    const ConstTensor& x = *Value(0);
    out = Like(x);
    if (!f_.Shape(out, x.dims)) return false;
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (x.floating())
        Store(out, k, real(x.reals[k]), 0);
      else if constexpr (!std::is_same_v<IntFn, std::nullptr_t>)
        Store(out, k, 0, integer(x.ints[k]));
    }
    return true;
  }

  // Variadic elementwise arithmetic folded left to right; all inputs of one family.
  template <typename RealFn, typename IntFn>
  bool Arith(ConstTensor& out, RealFn real, IntFn integer) {
    std::vector<const ConstTensor*> xs;
    std::vector<const Dims*> shapes;
    for (int i = 0; i < node_.input_size(); ++i)
      if (const ConstTensor* t = Value(i)) {
        xs.push_back(t);
        shapes.push_back(&t->dims);
      }
    if (xs.empty()) return f_.Fail("no inputs");
    for (const ConstTensor* t : xs)
      if (t->floating() != xs[0]->floating()) return f_.Fail("mixed types");
    const std::optional<Dims> dims = Broadcast(shapes);
    if (!dims) return f_.Fail("shapes do not broadcast");
    out = Like(*xs[0]);
    if (!f_.Shape(out, *dims)) return false;
    std::vector<std::vector<std::size_t>> maps;
    for (const ConstTensor* t : xs) maps.push_back(BroadcastIndex(t->dims, *dims));
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (out.floating()) {
        double acc = xs[0]->reals[maps[0][k]];
        for (std::size_t j = 1; j < xs.size(); ++j) acc = real(acc, xs[j]->reals[maps[j][k]]);
        Store(out, k, acc, 0);
      } else {
        std::int64_t acc = xs[0]->ints[maps[0][k]];
        for (std::size_t j = 1; j < xs.size(); ++j)
          if (!integer(acc, xs[j]->ints[maps[j][k]], &acc)) return f_.Fail("integer arithmetic out of domain");
        Store(out, k, 0, acc);
      }
    }
    return true;
  }

  template <typename Cmp>
  bool Compare(ConstTensor& out, Cmp cmp) {
    const ConstTensor &a = *Value(0), &b = *Value(1);
    const std::optional<Dims> dims = Broadcast({&a.dims, &b.dims});
    if (!dims) return f_.Fail("shapes do not broadcast");
    out.dtype = TensorProto::BOOL;
    if (!f_.Shape(out, *dims)) return false;
    const auto ma = BroadcastIndex(a.dims, *dims), mb = BroadcastIndex(b.dims, *dims);
    const bool real = a.floating() || b.floating();
    for (std::size_t k = 0; k < out.size(); ++k)
      out.ints[k] = real ? cmp(a.Real(ma[k]), b.Real(mb[k])) : cmp(a.ints[ma[k]], b.ints[mb[k]]);
    return true;
  }

  static inline const FoldInput kNone{};
  const NodeProto& node_;
  int opset_;
  std::span<const FoldInput> in_;
  Fold f_;
};

}  // namespace

bool IsFoldableOp(const NodeProto& node) {
  static const std::unordered_set<std::string_view> kOps = {
      "Shape", "Size", "Identity", "Cast", "Gather", "Concat", "Unsqueeze", "Squeeze", "Reshape",
      "Flatten", "Transpose", "Slice", "Expand", "Tile", "Range", "ConstantOfShape", "Where",
      "Not", "Neg", "Abs", "Sign", "Floor", "Ceil", "Sqrt", "Reciprocal", "Add", "Sum", "Sub",
      "Mul", "Div", "Mod", "Pow", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor"};
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  return kOps.count(node.op_type()) > 0;
}

bool FoldNode(const NodeProto& node, int opset, std::span<const FoldInput> inputs,
              std::uint64_t max_elements, std::vector<ConstTensor>* outputs, std::string* why_not) {
  if (!IsFoldableOp(node)) {
    *why_not = "op " + node.op_type() + " is not folded";
    return false;
  }
  Evaluator e(node, opset, inputs, max_elements);
  if (!e.Run(outputs)) {
    *why_not = e.why();
    return false;
  }
  for (ConstTensor& out : *outputs) {
    if (out.dtype == 0 && &out != &(*outputs)[0]) {
      *why_not = "more than one output";
      return false;
    }
    if (!ElementCount(out.dims, max_elements) || *ElementCount(out.dims, max_elements) != out.size()) {
      *why_not = "result too large to fold";
      return false;
    }
  }
  return true;
}

}  // namespace tensormem::onnx_import
