// SPDX-License-Identifier: Apache-2.0
// The ONNX importer on small models built here: weights, data inputs,
// shapes through inference and folding, user dimensions, in-place flags, and
// every kind of bad input ending in a clear error (never a crash).
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "onnx/onnx_test_util.h"
#include "tensormem/onnx.h"
#include "test_util.h"

namespace tensormem {
namespace {

using testing::ModelBuilder;

int Find(const OnnxModel& m, const std::string& name) {
  for (std::size_t t = 0; t < m.graph.tensors.size(); ++t)
    if (m.graph.tensors[t].name == name) return static_cast<int>(t);
  return -1;
}

Result<OnnxModel> Import(const ModelBuilder& b, const OnnxImportParams& p = {}) {
  return ImportOnnxBytes(b.Bytes(), "test.onnx", p);
}

TEST(OnnxImport, SmallConvNet) {
  ModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Input("w", {4, 3, 3, 3}).Input("bias", {4});
  onnx::NodeProto& conv = b.Node("Conv", {"x", "w", "bias"}, {"c"});
  ModelBuilder::IntsAttr(conv, "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"});
  b.Node("Flatten", {"r"}, {"f"});
  b.Output("f");
  Result<OnnxModel> m = Import(b);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // No initializers at all: only the first input is data, the rest are weights.
  ASSERT_EQ(m->graph.inputs.size(), 1u);
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(m->graph.inputs[0])].name, "x");
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "w"))].kind, TensorKind::kConstant);
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "w"))].bytes, 4u * 3 * 3 * 3 * 4);
  const int c = Find(*m, "c"), f = Find(*m, "f");
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(c)].bytes, 4u * 8 * 8 * 4);
  EXPECT_EQ(m->shapes[static_cast<std::size_t>(f)], (std::vector<std::int64_t>{1, 256}));
  EXPECT_EQ(m->dtypes[static_cast<std::size_t>(f)], "float32");
  ASSERT_EQ(m->graph.nodes.size(), 3u);
  EXPECT_EQ(m->graph.nodes[0].op, "Conv");
  EXPECT_EQ(m->graph.nodes[2].in_place, InPlace::kInput0Unmodified);  // Flatten
  EXPECT_EQ(m->graph.nodes[1].in_place, InPlace::kNone);
  EXPECT_EQ(m->graph.outputs, std::vector<int>{f});
  // It plans and runs.
  Result<GraphPlan> plan = PlanGraph(m->graph);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->liveness.in_place_shared, 0u);  // f is a graph output
  EXPECT_EQ(plan->persistent_bytes, 448u + 16);   // w (432 bytes), then bias at 448 (aligned to 64)
}

TEST(OnnxImport, WeightsFromInitializersConstantsAndDataInputsByRule) {
  ModelBuilder b;
  b.Input("x", {2, 4}).Input("y", {2, 4}).FloatInitializer("w", {2, 4});
  b.Constant("k", {2}, {4, 2});
  b.Node("Add", {"x", "w"}, {"a"});
  b.Node("Mul", {"a", "y"}, {"m"});
  b.Node("Reshape", {"m", "k"}, {"r"});
  b.Node("Relu", {"r"}, {"out"});
  b.Output("out");
  Result<OnnxModel> m = Import(b);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // With initializers, every graph input without one is data.
  EXPECT_EQ(m->graph.inputs.size(), 2u);
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "w"))].kind, TensorKind::kConstant);
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "k"))].kind, TensorKind::kConstant);
  EXPECT_EQ(m->constant_nodes, 1u);
  EXPECT_EQ(m->shapes[static_cast<std::size_t>(Find(*m, "r"))], (std::vector<std::int64_t>{4, 2}));
  // Reshape shares its input's memory (the input dies there).
  Result<GraphPlan> plan = PlanGraph(m->graph);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->placements[static_cast<std::size_t>(Find(*m, "r"))].offset,
            plan->placements[static_cast<std::size_t>(Find(*m, "m"))].offset);
  EXPECT_EQ(plan->liveness.in_place_shared, 1u);
  // Naming the data inputs overrides the rule.
  OnnxImportParams p;
  p.data_inputs = {"x"};
  m = Import(b, p);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->graph.inputs.size(), 1u);
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "y"))].kind, TensorKind::kConstant);
  p.data_inputs = {"nope"};
  m = Import(b, p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("no graph input named 'nope'"), std::string::npos);
}

// Shape(x) -> Gather -> Unsqueeze -> Concat(-1) -> Reshape(x): folded away.
ModelBuilder ShapeSubgraph(std::vector<std::int64_t> dims, std::vector<std::string> symbols = {}) {
  ModelBuilder b;
  b.Input("x", dims, onnx::TensorProto::FLOAT, symbols);
  b.Initializer("zero", {}, {0}).Initializer("axes", {1}, {0}).Initializer("minus1", {1}, {-1});
  b.Node("Relu", {"x"}, {"x1"});
  b.Node("Shape", {"x1"}, {"s"});
  onnx::NodeProto& g = b.Node("Gather", {"s", "zero"}, {"d0"});
  ModelBuilder::IntAttr(g, "axis", 0);
  b.Node("Unsqueeze", {"d0", "axes"}, {"d0v"});
  onnx::NodeProto& c = b.Node("Concat", {"d0v", "minus1"}, {"shape"});
  ModelBuilder::IntAttr(c, "axis", 0);
  b.Node("Reshape", {"x1", "shape"}, {"y"});
  b.Node("Relu", {"y"}, {"out"});
  b.Output("out");
  return b;
}

TEST(OnnxImport, FoldsShapeSubgraphs) {
  Result<OnnxModel> m = Import(ShapeSubgraph({2, 3, 4}));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->folded_nodes, 4u);  // Shape, Gather, Unsqueeze, Concat
  EXPECT_EQ(m->graph.nodes.size(), 3u);
  EXPECT_EQ(m->shapes[static_cast<std::size_t>(Find(*m, "out"))], (std::vector<std::int64_t>{2, 12}));
  // The folded shape feeds the Reshape as a constant; the folded
  // intermediates are gone.
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "shape"))].kind, TensorKind::kConstant);
  EXPECT_EQ(Find(*m, "s"), -1);
  EXPECT_EQ(Find(*m, "d0"), -1);
}

TEST(OnnxImport, SymbolicDimensionsNeedValues) {
  const ModelBuilder b = ShapeSubgraph({-1, 3, 4}, {"batch"});
  Result<OnnxModel> m = Import(b);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("symbolic dimension 'batch'"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("--dim batch=VALUE"), std::string::npos);
  OnnxImportParams p;
  p.dims["batch"] = 5;
  m = Import(b, p);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->shapes[static_cast<std::size_t>(Find(*m, "out"))], (std::vector<std::int64_t>{5, 12}));
  p.dims["nonexistent"] = 1;
  m = Import(b, p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("no dimension named 'nonexistent'"), std::string::npos);
  // --input-shape replaces the input's shape.
  OnnxImportParams s;
  s.input_shapes["x"] = {7, 2, 2};
  m = Import(b, s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->shapes[static_cast<std::size_t>(Find(*m, "out"))], (std::vector<std::int64_t>{7, 4}));
  // Another rank than the declared one is refused up front, not at the
  // first node as an unknown shape.
  OnnxImportParams rank;
  rank.input_shapes["x"] = {7, 4};
  m = Import(b, rank);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("--input-shape x: 2 dimensions given, the model declares 3"),
            std::string::npos)
      << m.status().message();
  s.dims["batch"] = -3;
  EXPECT_FALSE(Import(b, s).ok());
}

TEST(OnnxImport, UnknownOpsNameTheNodeAndTensor) {
  ModelBuilder b;
  b.Input("x", {4, 4});
  b.Node("Relu", {"x"}, {"r"});
  b.Node("MysteryOp", {"r"}, {"m"}, "the_mystery");
  b.Node("Relu", {"m"}, {"out"});
  b.Output("out");
  Result<OnnxModel> m = Import(b);
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.status().message();
  EXPECT_NE(msg.find("'the_mystery' (MysteryOp)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("output 'm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown to ONNX shape inference"), std::string::npos) << msg;
  // The documented fallback: shapes given in value_info are used.
  b.ValueInfo("m", {4, 4});
  m = Import(b);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->graph.nodes[1].op, "MysteryOp");
}

TEST(OnnxImport, CustomDomainOpsAreKeptWithGivenShapes) {
  ModelBuilder b;
  b.model().add_opset_import()->set_domain("com.example");
  b.model().mutable_opset_import(1)->set_version(1);
  b.Input("x", {2, 2});
  b.Node("Fancy", {"x"}, {"y"}).set_domain("com.example");
  b.ValueInfo("y", {2, 8}, onnx::TensorProto::FLOAT16);
  b.Output("y");
  Result<OnnxModel> m = Import(b);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->graph.nodes[0].op, "com.example.Fancy");
  EXPECT_EQ(m->graph.tensors[static_cast<std::size_t>(Find(*m, "y"))].bytes, 2u * 8 * 2);
}

TEST(OnnxImport, RejectsMalformedGraphs) {
  {
    ModelBuilder b;  // reads a name nothing defines
    b.Input("x", {2});
    b.Node("Relu", {"ghost"}, {"y"}, "reader");
    b.Output("y");
    Result<OnnxModel> m = Import(b);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("'reader'"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("'ghost'"), std::string::npos);
  }
  {
    ModelBuilder b;  // writes a name twice
    b.Input("x", {2});
    b.Node("Relu", {"x"}, {"y"});
    b.Node("Neg", {"x"}, {"y"}, "twice");
    b.Output("y");
    Result<OnnxModel> m = Import(b);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("already defined"), std::string::npos) << m.status().message();
  }
  {
    ModelBuilder b;  // strings have no size
    b.Input("x", {2}, onnx::TensorProto::STRING);
    b.Node("Identity", {"x"}, {"y"});
    b.Output("y");
    Result<OnnxModel> m = Import(b);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("string"), std::string::npos) << m.status().message();
  }
  {
    ModelBuilder b;  // sizes beyond 64 bits
    b.Input("x", {1LL << 40, 1LL << 40});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y");
    Result<OnnxModel> m = Import(b);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kOutOfRange) << m.status().ToString();
  }
  {
    ModelBuilder b;  // control flow
    b.Input("c", {}, onnx::TensorProto::BOOL);
    onnx::NodeProto& n = b.Node("If", {"c"}, {"y"}, "branch");
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name("then");
    b.Output("y");
    Result<OnnxModel> m = Import(b);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(m.status().message().find("'branch'"), std::string::npos);
  }
  {
    ModelBuilder b;  // an initializer of 2^29 floats declared over 16 bytes
    b.Input("x", {4});
    onnx::TensorProto* w = b.model().mutable_graph()->add_initializer();
    w->set_name("huge");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(std::int64_t{1} << 29);
    w->set_raw_data(std::string(16, '\0'));
    b.Node("Add", {"x", "huge"}, {"y"});
    b.Output("y");
    Result<OnnxModel> m = Import(b);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("tensor 'huge': holds 4 values for a shape of 536870912 elements"),
              std::string::npos)
        << m.status().message();
  }
  {
    ModelBuilder b;  // no default-domain opset
    b.model().mutable_opset_import(0)->set_domain("com.other");
    b.Input("x", {2});
    EXPECT_FALSE(Import(b).ok());
  }
}

// The graph is built after the parsed model is released, from tables
// copied out of it: its messages still name the node (file index, name, op)
// and the tensor in full.
TEST(OnnxImport, GraphBuildMessagesNameNodeAndTensor) {
  auto message = [](const ModelBuilder& b, const OnnxImportParams& p = {}) {
    Result<OnnxModel> m = Import(b, p);
    return m.ok() ? std::string("ok") : m.status().message();
  };
  {
    ModelBuilder b;
    b.Input("x", {2});
    b.Node("Relu", {"x"}, {"a"}, "first");
    b.Node("Relu", {"ghost"}, {"y"}, "reader");
    b.Output("y");
    EXPECT_EQ(message(b), "test.onnx: node 1 'reader' (Relu) reads 'ghost', which is no graph input, "
                          "initializer or output of an earlier node");
  }
  {
    ModelBuilder b;
    b.Input("x", {2});
    b.Node("Relu", {"x"}, {"y"});
    b.Node("Neg", {"x"}, {"y"}, "twice");
    b.Output("y");
    EXPECT_EQ(message(b), "test.onnx: node 1 'twice' (Neg) writes 'y', which is already defined");
  }
  {
    ModelBuilder b;
    b.Input("x", {2});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y").Output("nowhere");
    EXPECT_EQ(message(b), "test.onnx: graph output 'nowhere' is written by no node");
  }
  {
    ModelBuilder b;
    b.Input("x", {-1, 2}, onnx::TensorProto::FLOAT, {"batch", ""});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y");
    EXPECT_EQ(message(b), "test.onnx: tensor 'x' has symbolic dimension 'batch' (shape batchx2): set it with "
                          "--dim batch=VALUE or --input-shape x=...");
  }
  {
    ModelBuilder b;
    b.Input("x", {2});
    b.Node("MysteryOp", {"x"}, {"m"}, "odd");
    b.Output("m");
    EXPECT_EQ(message(b), "test.onnx: node 0 'odd' (MysteryOp): output 'm': shape unknown after ONNX shape "
                          "inference and folding (op MysteryOp is unknown to ONNX shape inference; give its "
                          "output shapes in the model's value_info)");
  }
}

TEST(OnnxImport, NonOnnxBytesAreRefused) {
  for (const std::string& bytes :
       {std::string(), std::string("id,lower,upper,size\na,0,1,8\n"), std::string("\x08\x07", 2),
        std::string(1000, '\xff')}) {
    Result<OnnxModel> m = ImportOnnxBytes(bytes, "junk.onnx");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("junk.onnx"), std::string::npos);
  }
  EXPECT_EQ(ImportOnnxFile("/nonexistent/model.onnx").status().code(), StatusCode::kNotFound);
  // A device (or a pipe) has no size to read a model whole by: said so.
  const Status device = ImportOnnxFile("/dev/null").status();
  EXPECT_EQ(device.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device.message(), "/dev/null: not a regular file (a pipe or a device): give the model file's path");
  OnnxImportParams small;
  small.max_file_bytes = 10;
  EXPECT_FALSE(ImportOnnxBytes(ShapeSubgraph({2, 3, 4}).Bytes(), "big.onnx", small).ok());
}

// The fuzzer's find: the bundled ResNet-18 with a Conv's stride made 0,
// which ONNX's shape inference divides by (SIGFPE). Refused, naming it.
TEST(OnnxImport, AZeroStrideIsRefusedBeforeOnnxInferenceDividesByIt) {
  const std::string path = std::string(TENSORMEM_SOURCE_DIR) + "/fuzz/corpus/onnx/conv_stride_zero.onnx";
  Result<OnnxModel> m = ImportOnnxFile(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("attribute 'strides' is 0"), std::string::npos) << m.status().ToString();
  EXPECT_NE(m.status().message().find("(Conv)"), std::string::npos) << m.status().ToString();
}

// Every prefix and thousands of mutations of a real model: errors or
// imports, never a crash or hang.
TEST(OnnxImport, TruncatedAndCorruptedFilesNeverCrash) {
  const std::string path = std::string(TENSORMEM_SOURCE_DIR) + "/examples/resnet18.onnx";
  const std::string good = testing::ReadFile(path);
  ASSERT_GT(good.size(), 1000u);
  ASSERT_TRUE(ImportOnnxBytes(good, "resnet18").ok());
  int refused = 0;
  for (std::size_t len = 0; len < good.size(); len += 1 + len / 16) {
    Result<OnnxModel> m = ImportOnnxBytes(std::string_view(good).substr(0, len), "truncated");
    refused += !m.ok();
  }
  EXPECT_GT(refused, 0);
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    for (int k = 0; k < 1 + trial % 8; ++k)
      bad[std::uniform_int_distribution<std::size_t>(0, bad.size() - 1)(rng)] =
          static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    Result<OnnxModel> m = ImportOnnxBytes(bad, "mutated");
    if (m.ok()) {  // whatever imported must plan and run
      Result<GraphPlan> plan = PlanGraph(m->graph);
      if (plan.ok() && plan->scratch_bytes() < (1u << 30) && plan->persistent_bytes < (1u << 30)) {
        CommittedArenas arenas;
        ASSERT_TRUE(arenas.Commit(*plan).ok());
        EXPECT_TRUE(CheckExecution(m->graph, *plan, arenas).ok());
      }
    }
  }
}

}  // namespace
}  // namespace tensormem

namespace tensormem {
namespace {

// ONNX's STFT inference reads frame_step, frame_length and the window's
// shape as the schema promises them; each malformed variant (wrong type,
// wrong rank, no data) must be refused or imported, never crash.
TEST(OnnxImport, StftWithMalformedInputsNeverCrashes) {
  struct Variant {
    std::string name;
    std::function<void(ModelBuilder&, std::vector<std::string>&)> add;
  };
  auto scalar = [](ModelBuilder& b, const std::string& name, std::vector<std::int64_t> dims,
                   std::vector<std::int64_t> values, int dtype) { b.Initializer(name, dims, values, dtype); };
  const std::vector<Variant> variants = {
      {"int64 step", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT64); in = {"signal", "step"}; }},
      {"int32 step", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT32); in = {"signal", "step"}; }},
      {"float step", [&](ModelBuilder& b, auto& in) {
         onnx::TensorProto* t = b.model().mutable_graph()->add_initializer();
         t->set_name("step"); t->set_data_type(onnx::TensorProto::FLOAT); t->add_float_data(4.0f);
         in = {"signal", "step"}; }},
      {"empty step", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {0}, {}, onnx::TensorProto::INT64); in = {"signal", "step"}; }},
      {"step without data", [&](ModelBuilder& b, auto& in) {
         onnx::TensorProto* t = b.model().mutable_graph()->add_initializer();
         t->set_name("step"); t->set_data_type(onnx::TensorProto::INT64);
         in = {"signal", "step"}; }},
      {"two steps", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {2}, {4, 4}, onnx::TensorProto::INT64); in = {"signal", "step"}; }},
      {"window", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT64); b.Input("w", {8}); in = {"signal", "step", "w"}; }},
      {"window rank 2", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT64); b.Input("w", {8, 2}); in = {"signal", "step", "w"}; }},
      {"window rank 0", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT64); b.Input("w", {}); in = {"signal", "step", "w"}; }},
      {"window unknown", [&](ModelBuilder& b, auto& in) {
         scalar(b, "step", {}, {4}, onnx::TensorProto::INT64);
         onnx::ValueInfoProto* vi = b.model().mutable_graph()->add_input(); vi->set_name("w");
         vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
         in = {"signal", "step", "w"}; }},
      {"empty window name", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT64); in = {"signal", "step", ""}; }},
      {"float length", [&](ModelBuilder& b, auto& in) {
         scalar(b, "step", {}, {4}, onnx::TensorProto::INT64);
         onnx::TensorProto* t = b.model().mutable_graph()->add_initializer();
         t->set_name("len"); t->set_data_type(onnx::TensorProto::FLOAT); t->add_float_data(8.0f);
         in = {"signal", "step", "", "len"}; }},
      {"empty length", [&](ModelBuilder& b, auto& in) { scalar(b, "step", {}, {4}, onnx::TensorProto::INT64); scalar(b, "len", {0}, {}, onnx::TensorProto::INT64); in = {"signal", "step", "", "len"}; }},
  };
  for (const std::vector<std::int64_t>& signal : std::vector<std::vector<std::int64_t>>{{1, 16, 1}, {1, 16}, {16}, {1, 16, 3}}) {
    for (const Variant& v : variants) {
      ModelBuilder b(17);
      b.Input("signal", signal);
      std::vector<std::string> inputs;
      v.add(b, inputs);
      b.Node("STFT", inputs, {"y"}, "stft");
      b.Output("y");
      const std::string bytes = b.Bytes();
      EXPECT_EXIT(
          {
            Result<OnnxModel> m = ImportOnnxBytes(bytes, "stft.onnx");
            std::exit(m.ok() || m.status().code() == StatusCode::kInvalidArgument ? 0 : 1);
          },
          ::testing::ExitedWithCode(0), "")
          << v.name << ", signal rank " << signal.size();
    }
  }
  // The rank-1 signal that crashed ONNX's inference is refused.
  ModelBuilder b(17);
  b.Input("signal", {16});
  b.Initializer("step", {}, {4});
  b.Node("STFT", {"signal", "step"}, {"y"}, "stft");
  b.Output("y");
  Result<OnnxModel> m = Import(b);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
  EXPECT_NE(m.status().message().find("'stft' (STFT): output 'y': shape unknown"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace tensormem
