// SPDX-License-Identifier: Apache-2.0
// The shape-folding evaluator, op by op, against values worked out by hand
// (ONNX semantics: negative indices, clamped slices, truncating integer
// division, Python-style Mod, numpy broadcasting), and its refusals.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include "onnx/shape_folding.h"

namespace tensormem::onnx_import {
namespace {

using Dims = std::vector<std::int64_t>;

ConstTensor Ints(Dims dims, std::vector<std::int64_t> v) {
  ConstTensor t;
  t.dtype = onnx::TensorProto::INT64;
  t.dims = std::move(dims);
  t.ints = std::move(v);
  return t;
}
ConstTensor Floats(Dims dims, std::vector<double> v) {
  ConstTensor t;
  t.dtype = onnx::TensorProto::FLOAT;
  t.dims = std::move(dims);
  t.reals = std::move(v);
  return t;
}

struct Folder {
  onnx::NodeProto node;
  int opset = 13;
  explicit Folder(const std::string& op, int n_inputs = 1) {
    node.set_op_type(op);
    for (int i = 0; i < n_inputs; ++i) node.add_input("in" + std::to_string(i));
    node.add_output("out");
  }
  Folder& Int(const std::string& name, std::int64_t v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_i(v);
    return *this;
  }
  Folder& Ints(const std::string& name, Dims v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    for (auto x : v) a->add_ints(x);
    return *this;
  }
  // Folds with the given input values; fails the test on refusal.
  ConstTensor Fold(std::vector<const ConstTensor*> values) {
    std::vector<FoldInput> in;
    for (const ConstTensor* v : values) in.push_back({v, nullptr});
    std::vector<ConstTensor> out;
    std::string why;
    EXPECT_TRUE(FoldNode(node, opset, in, 1 << 16, &out, &why)) << node.op_type() << ": " << why;
    return out.empty() ? ConstTensor{} : out[0];
  }
  std::string Refuse(std::vector<const ConstTensor*> values, std::uint64_t max = 1 << 16) {
    std::vector<FoldInput> in;
    for (const ConstTensor* v : values) in.push_back({v, nullptr});
    std::vector<ConstTensor> out;
    std::string why;
    EXPECT_FALSE(FoldNode(node, opset, in, max, &out, &why)) << node.op_type();
    return why;
  }
};

TEST(ShapeFolding, ShapeAndSizeFromKnownShapes) {
  Folder f("Shape");
  const Dims shape = {2, 3, 5};
  std::vector<FoldInput> in = {{nullptr, &shape}};
  std::vector<ConstTensor> out;
  std::string why;
  ASSERT_TRUE(FoldNode(f.node, 15, in, 100, &out, &why)) << why;
  EXPECT_EQ(out[0].ints, (std::vector<std::int64_t>{2, 3, 5}));
  f.Int("start", -2);
  ASSERT_TRUE(FoldNode(f.node, 15, in, 100, &out, &why));
  EXPECT_EQ(out[0].ints, (std::vector<std::int64_t>{3, 5}));
  Folder s("Size");
  ASSERT_TRUE(FoldNode(s.node, 13, in, 100, &out, &why));
  EXPECT_EQ(out[0].ints, std::vector<std::int64_t>{30});
  EXPECT_TRUE(out[0].dims.empty());
  std::vector<FoldInput> unknown = {{nullptr, nullptr}};
  EXPECT_FALSE(FoldNode(s.node, 13, unknown, 100, &out, &why));
}

TEST(ShapeFolding, GatherConcatUnsqueezeSqueeze) {
  const ConstTensor shape = Ints({4}, {1, 3, 224, 224});
  const ConstTensor idx = Ints({}, {-1});
  ConstTensor g = Folder("Gather", 2).Int("axis", 0).Fold({&shape, &idx});
  EXPECT_EQ(g.ints, std::vector<std::int64_t>{224});
  EXPECT_TRUE(g.dims.empty());
  const ConstTensor idx2 = Ints({2}, {0, 2});
  EXPECT_EQ(Folder("Gather", 2).Fold({&shape, &idx2}).ints, (std::vector<std::int64_t>{1, 224}));
  const ConstTensor bad = Ints({}, {4});
  EXPECT_NE(Folder("Gather", 2).Refuse({&shape, &bad}).find("out of range"), std::string::npos);
  const ConstTensor axes = Ints({1}, {0});
  ConstTensor u = Folder("Unsqueeze", 2).Fold({&g, &axes});
  EXPECT_EQ(u.dims, Dims{1});
  Folder old("Unsqueeze");  // opset 11: axes as an attribute, negative allowed
  old.opset = 11;
  old.Ints("axes", {-1});
  EXPECT_EQ(old.Fold({&g}).dims, Dims{1});
  const ConstTensor m1 = Ints({1}, {-1});
  ConstTensor c = Folder("Concat", 3).Int("axis", 0).Fold({&u, &m1, &u});
  EXPECT_EQ(c.ints, (std::vector<std::int64_t>{224, -1, 224}));
  const ConstTensor col = Ints({3, 1}, {1, 2, 3});
  EXPECT_EQ(Folder("Squeeze").Fold({&col}).dims, Dims{3});
  const ConstTensor ax1 = Ints({1}, {1});
  EXPECT_EQ(Folder("Squeeze", 2).Fold({&col, &ax1}).dims, Dims{3});
  EXPECT_NE(Folder("Squeeze", 2).Refuse({&col, &axes}).find("bad axes"), std::string::npos);
}

TEST(ShapeFolding, Arithmetic) {
  const ConstTensor a = Ints({3}, {7, -7, 9});
  const ConstTensor b = Ints({}, {2});
  EXPECT_EQ(Folder("Div", 2).Fold({&a, &b}).ints, (std::vector<std::int64_t>{3, -3, 4}));
  EXPECT_EQ(Folder("Mod", 2).Fold({&a, &b}).ints, (std::vector<std::int64_t>{1, 1, 1}));
  const ConstTensor nb = Ints({}, {-2});
  EXPECT_EQ(Folder("Mod", 2).Fold({&a, &nb}).ints, (std::vector<std::int64_t>{-1, -1, -1}));
  EXPECT_EQ(Folder("Mod", 2).Int("fmod", 1).Fold({&a, &nb}).ints, (std::vector<std::int64_t>{1, -1, 1}));
  EXPECT_EQ(Folder("Mul", 2).Fold({&a, &b}).ints, (std::vector<std::int64_t>{14, -14, 18}));
  EXPECT_EQ(Folder("Sub", 2).Fold({&b, &a}).ints, (std::vector<std::int64_t>{-5, 9, -7}));
  EXPECT_EQ(Folder("Max", 2).Fold({&a, &b}).ints, (std::vector<std::int64_t>{7, 2, 9}));
  EXPECT_EQ(Folder("Neg").Fold({&a}).ints, (std::vector<std::int64_t>{-7, 7, -9}));
  const ConstTensor zero = Ints({}, {0});
  EXPECT_NE(Folder("Div", 2).Refuse({&a, &zero}).find("out of domain"), std::string::npos);
  EXPECT_FALSE(Folder("Mod", 2).Refuse({&a, &zero}).empty());
  const ConstTensor row = Ints({1, 3}, {1, 2, 3}), colv = Ints({2, 1}, {10, 20});
  ConstTensor bc = Folder("Add", 2).Fold({&row, &colv});
  EXPECT_EQ(bc.dims, (Dims{2, 3}));
  EXPECT_EQ(bc.ints, (std::vector<std::int64_t>{11, 12, 13, 21, 22, 23}));
  const ConstTensor mismatch = Ints({2}, {1, 2});
  EXPECT_NE(Folder("Add", 2).Refuse({&a, &mismatch}).find("broadcast"), std::string::npos);
  const ConstTensor f = Floats({2}, {2.5, -2.5});
  ConstTensor cast = Folder("Cast").Int("to", onnx::TensorProto::INT64).Fold({&f});
  EXPECT_EQ(cast.ints, (std::vector<std::int64_t>{2, -2}));
  const ConstTensor huge = Floats({1}, {1e30});
  EXPECT_NE(Folder("Cast").Int("to", onnx::TensorProto::INT64).Refuse({&huge}).find("overflows"),
            std::string::npos);
  ConstTensor narrow = Folder("Cast").Int("to", onnx::TensorProto::INT8).Fold({&bc});
  EXPECT_EQ(narrow.ints[5], 23);
  EXPECT_EQ(Folder("Floor").Fold({&f}).reals, (std::vector<double>{2, -3}));
}

TEST(ShapeFolding, ComparisonsAndWhere) {
  const ConstTensor s = Ints({3}, {1, 56, 56});
  const ConstTensor one = Ints({}, {1});
  ConstTensor eq = Folder("Equal", 2).Fold({&s, &one});
  EXPECT_EQ(eq.dtype, onnx::TensorProto::BOOL);
  EXPECT_EQ(eq.ints, (std::vector<std::int64_t>{1, 0, 0}));
  const ConstTensor m1 = Ints({}, {-1});
  EXPECT_EQ(Folder("Where", 3).Fold({&eq, &m1, &s}).ints, (std::vector<std::int64_t>{-1, 56, 56}));
  EXPECT_EQ(Folder("Not").Fold({&eq}).ints, (std::vector<std::int64_t>{0, 1, 1}));
  EXPECT_EQ(Folder("Less", 2).Fold({&one, &s}).ints, (std::vector<std::int64_t>{0, 1, 1}));
}

TEST(ShapeFolding, SliceReshapeTransposeExpandTileRange) {
  const ConstTensor x = Ints({6}, {0, 1, 2, 3, 4, 5});
  const ConstTensor st = Ints({1}, {1}), en = Ints({1}, {INT64_MAX}), ax = Ints({1}, {0});
  EXPECT_EQ(Folder("Slice", 4).Fold({&x, &st, &en, &ax}).ints, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  const ConstTensor rs = Ints({1}, {-1}), re = Ints({1}, {INT64_MIN}), step = Ints({1}, {-2});
  EXPECT_EQ(Folder("Slice", 5).Fold({&x, &rs, &re, &ax, &step}).ints,
            (std::vector<std::int64_t>{5, 3, 1}));
  const ConstTensor zstep = Ints({1}, {0});
  EXPECT_FALSE(Folder("Slice", 5).Refuse({&x, &rs, &re, &ax, &zstep}).empty());
  const ConstTensor shape = Ints({2}, {0, -1});
  const ConstTensor m = Ints({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(Folder("Reshape", 2).Fold({&m, &shape}).dims, (Dims{2, 3}));
  const ConstTensor shape2 = Ints({2}, {3, -1});
  EXPECT_EQ(Folder("Reshape", 2).Fold({&m, &shape2}).dims, (Dims{3, 2}));
  const ConstTensor bad = Ints({2}, {4, -1});
  EXPECT_FALSE(Folder("Reshape", 2).Refuse({&m, &bad}).empty());
  ConstTensor tr = Folder("Transpose").Fold({&m});
  EXPECT_EQ(tr.dims, (Dims{3, 2}));
  EXPECT_EQ(tr.ints, (std::vector<std::int64_t>{0, 3, 1, 4, 2, 5}));
  const ConstTensor col = Ints({2, 1}, {7, 8}), to = Ints({2}, {2, 3});
  EXPECT_EQ(Folder("Expand", 2).Fold({&col, &to}).ints, (std::vector<std::int64_t>{7, 7, 7, 8, 8, 8}));
  const ConstTensor reps = Ints({2}, {1, 2});
  EXPECT_EQ(Folder("Tile", 2).Fold({&col, &reps}).ints, (std::vector<std::int64_t>{7, 7, 8, 8}));
  const ConstTensor a = Ints({}, {0}), b = Ints({}, {10}), d = Ints({}, {3});
  EXPECT_EQ(Folder("Range", 3).Fold({&a, &b, &d}).ints, (std::vector<std::int64_t>{0, 3, 6, 9}));
  const ConstTensor dims = Ints({2}, {2, 2});
  ConstTensor zeros = Folder("ConstantOfShape").Fold({&dims});
  EXPECT_EQ(zeros.dtype, onnx::TensorProto::FLOAT);
  EXPECT_EQ(zeros.reals, (std::vector<double>(4, 0.0)));
  EXPECT_EQ(Folder("Flatten").Int("axis", 0).Fold({&m}).dims, (Dims{1, 6}));
}

TEST(ShapeFolding, RefusesWhatItCannotOrShouldNotFold) {
  const ConstTensor dims = Ints({2}, {1000, 1000});
  EXPECT_NE(Folder("ConstantOfShape").Refuse({&dims}).find("too large"), std::string::npos);
  const ConstTensor a = Ints({}, {0}), b = Ints({}, {1000000000}), d = Ints({}, {1});
  EXPECT_NE(Folder("Range", 3).Refuse({&a, &b, &d}).find("too large"), std::string::npos);
  const ConstTensor x = Ints({1}, {1});
  EXPECT_NE(Folder("Conv", 1).Refuse({&x}).find("not folded"), std::string::npos);
  EXPECT_NE(Folder("Add", 2).Refuse({&x, nullptr}).find("not a known value"), std::string::npos);
  Folder custom("Add", 2);
  custom.node.set_domain("com.example");
  EXPECT_FALSE(IsFoldableOp(custom.node));
}

}  // namespace
}  // namespace tensormem::onnx_import

namespace tensormem::onnx_import {
namespace {

// Issue 12 item 1: Not, And, Or, Xor, Equal, Less, Greater, Slice (and
// every other folded op) with too few inputs are refused, never a crash.
TEST(ShapeFoldingHardening, EveryOpWithTooFewInputsIsRefused) {
  const char* ops[] = {"Abs", "Add", "And", "Cast", "Ceil", "Concat", "ConstantOfShape", "Div",
                       "Equal", "Expand", "Flatten", "Floor", "Gather", "Greater",
                       "GreaterOrEqual", "Identity", "Less", "LessOrEqual", "Max", "Min", "Mod",
                       "Mul", "Neg", "Not", "Or", "Pow", "Range", "Reciprocal", "Reshape",
                       "Shape", "Sign", "Size", "Slice", "Sqrt", "Squeeze", "Sub", "Sum", "Tile",
                       "Transpose", "Unsqueeze", "Where", "Xor"};
  const ConstTensor v = Ints({2}, {1, 2});
  int refused = 0;
  for (const char* op : ops) {
    for (int opset : {9, 13}) {
      for (int n = 0; n <= 2; ++n) {
        Folder f(op, 0);
        f.opset = opset;
        // n values given, for nodes declaring n inputs (0: none at all).
        std::vector<FoldInput> in;
        for (int i = 0; i < n; ++i) {
          f.node.add_input("in" + std::to_string(i));
          in.push_back({&v, nullptr});
        }
        std::vector<ConstTensor> out;
        std::string why;
        const bool folded = FoldNode(f.node, opset, in, 1 << 16, &out, &why);
        if (n == 0 && std::string(op) != "Sum" && std::string(op) != "Max" &&
            std::string(op) != "Min" && std::string(op) != "Add" && std::string(op) != "Mul" &&
            std::string(op) != "Sub" && std::string(op) != "Div" && std::string(op) != "Mod" &&
            std::string(op) != "Pow") {
          EXPECT_FALSE(folded) << op << " with no inputs";
        }
        refused += folded ? 0 : 1;
      }
    }
  }
  EXPECT_GT(refused, 42);
}

}  // namespace
}  // namespace tensormem::onnx_import
