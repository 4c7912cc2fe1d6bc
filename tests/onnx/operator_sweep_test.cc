// SPDX-License-Identifier: Apache-2.0
// Issue 12 item 2: every registered ONNX operator, imported as a one-node
// model with missing, extra and malformed inputs, attributes and
// sub-graphs. None may crash the importer (ONNX's own shape inference
// dereferences what the schema promises); every schema violation is bad
// input (InvalidArgument, or Unimplemented for control flow).
#include <algorithm>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "tensormem/onnx.h"

namespace tensormem {
namespace {

constexpr int kOpset = 17;

// (Not "x" + std::to_string(i): GCC 12 warns -Wrestrict on it.)
std::string Numbered(char prefix, int i) {
  std::string s(1, prefix);
  s += std::to_string(i);
  return s;
}

std::string Model(const onnx::OpSchema& s, int inputs, int outputs,
                  const std::function<void(onnx::NodeProto&)>& attrs,
                  const std::vector<std::int64_t>& input_shape = {2, 3}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(kOpset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("sweep");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(s.Name());
  n->set_name("n");
  for (int i = 0; i < inputs; ++i) {
    const std::string name = Numbered('x', i);
    n->add_input(name);
    onnx::ValueInfoProto* vi = g->add_input();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (const std::int64_t d : input_shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  for (int i = 0; i < outputs; ++i) {
    n->add_output(Numbered('y', i));
    g->add_output()->set_name(Numbered('y', i));
  }
  attrs(*n);
  return m.SerializeAsString();
}

void AddRequired(const onnx::OpSchema& s, onnx::NodeProto& n, const std::string& skip = "") {
  for (const auto& [name, a] : s.attributes()) {
    if (!a.required || name == skip) continue;
    onnx::AttributeProto* p = n.add_attribute();
    p->set_name(name);
    p->set_type(a.type);
    switch (a.type) {
      case onnx::AttributeProto::INT: p->set_i(1); break;
      case onnx::AttributeProto::FLOAT: p->set_f(1); break;
      case onnx::AttributeProto::STRING: p->set_s("a"); break;
      case onnx::AttributeProto::INTS: p->add_ints(1); break;
      case onnx::AttributeProto::FLOATS: p->add_floats(1); break;
      case onnx::AttributeProto::GRAPH: p->mutable_g()->set_name("empty"); break;  // malformed body
      default: break;
    }
  }
}

TEST(OnnxOperatorSweep, EveryOperatorWithMalformedArityAttributesAndSubgraphs) {
  std::set<std::string> names;
  for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas())
    if (s.domain().empty() || s.domain() == "ai.onnx") names.insert(s.Name());
  int operators = 0, models = 0, refused = 0, accepted = 0;
  auto import = [&](const std::string& bytes, bool must_refuse, const std::string& what) {
    ++models;
    Result<OnnxModel> r = ImportOnnxBytes(bytes, what);
    if (r.ok()) {
      ++accepted;
    } else {
      ++refused;
    }
    if (must_refuse) {
      EXPECT_FALSE(r.ok()) << what;
      if (!r.ok()) {
        // Bad input: malformed (InvalidArgument) or control flow (Unimplemented).
        EXPECT_TRUE(r.status().code() == StatusCode::kInvalidArgument ||
                    r.status().code() == StatusCode::kUnimplemented)
            << what << ": " << r.status().message();
      }
    }
  };
  for (const std::string& name : names) {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(name, kOpset, "");
    if (!s || s->Deprecated()) continue;
    ++operators;
    const int min_in = s->min_input(), max_in = s->max_input();
    const int outs = std::max(1, s->min_output());
    auto required = [&](onnx::NodeProto& n) { AddRequired(*s, n); };
    import(Model(*s, 0, outs, required), min_in > 0, name + " without inputs");
    if (min_in > 1) import(Model(*s, min_in - 1, outs, required), true, name + " one input short");
    if (max_in < 64) import(Model(*s, max_in + 1, outs, required), true, name + " one input extra");
    import(Model(*s, min_in, 0, required), s->min_output() > 0, name + " without outputs");
    // Not a structured binding: clang 14 cannot capture one in a lambda (item 19).
    for (const auto& entry : s->attributes()) {
      const std::string& attr = entry.first;
      const onnx::OpSchema::Attribute& a = entry.second;
      if (a.required)
        import(Model(*s, min_in, outs, [&](onnx::NodeProto& n) { AddRequired(*s, n, attr); }), true,
               name + " without required attribute " + attr);
      import(Model(*s, min_in, outs,
                   [&](onnx::NodeProto& n) {
                     AddRequired(*s, n, attr);
                     onnx::AttributeProto* p = n.add_attribute();
                     p->set_name(attr);
                     const bool is_string = a.type == onnx::AttributeProto::STRING;
                     p->set_type(is_string ? onnx::AttributeProto::INT : onnx::AttributeProto::STRING);
                     if (is_string) p->set_i(3); else p->set_s("x");
                   }),
             true, name + " with attribute " + attr + " of the wrong type");
    }
    import(Model(*s, min_in, outs,
                 [&](onnx::NodeProto& n) {
                   required(n);
                   onnx::AttributeProto* p = n.add_attribute();
                   p->set_name("no_such_attribute");
                   p->set_type(onnx::AttributeProto::INT);
                   p->set_i(1);
                 }),
           false, name + " with an unknown attribute");
    import(Model(*s, min_in, outs, required), false, name + " well-formed");
  }
  EXPECT_GT(operators, 100);
  std::cout << "operator sweep: " << operators << " operators, " << models << " models, "
            << refused << " refused, " << accepted << " accepted\n";
}

// Every integer attribute of every operator at 0 and at -1, on inputs of
// rank 4 (where convolution and pooling inference divide by strides and
// space-depth inference by the block size): ONNX's inference divided by
// zero on such models (a Conv with strides 0, found by the ONNX importer
// fuzzer), so they must be refused or imported, never crash.
TEST(OnnxOperatorSweep, EveryIntegerAttributeAtZeroAndBelowNeverCrashes) {
  std::set<std::string> names;
  for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas())
    if (s.domain().empty() || s.domain() == "ai.onnx") names.insert(s.Name());
  int models = 0, refused = 0;
  for (const std::string& name : names) {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(name, kOpset, "");
    if (!s || s->Deprecated()) continue;
    const int outs = std::max(1, s->min_output());
    for (const auto& entry : s->attributes()) {
      const std::string attr = entry.first;
      const auto type = entry.second.type;
      if (type != onnx::AttributeProto::INT && type != onnx::AttributeProto::INTS) continue;
      for (const std::int64_t value : {std::int64_t{0}, std::int64_t{-1}}) {
        const std::string what = name + " with " + attr + " = " + std::to_string(value);
        const std::string bytes = Model(
            *s, s->min_input(), outs,
            [&](onnx::NodeProto& n) {
              AddRequired(*s, n, attr);
              onnx::AttributeProto* p = n.add_attribute();
              p->set_name(attr);
              p->set_type(type);
              if (type == onnx::AttributeProto::INT) {
                p->set_i(value);
              } else {
                p->add_ints(value);
                p->add_ints(value);
              }
            },
            {1, 2, 4, 4});
        ++models;
        Result<OnnxModel> r = ImportOnnxBytes(bytes, what);
        if (!r.ok()) {
          ++refused;
          EXPECT_TRUE(r.status().code() == StatusCode::kInvalidArgument ||
                      r.status().code() == StatusCode::kUnimplemented)
              << what << ": " << r.status().message();
        }
      }
    }
  }
  EXPECT_GT(models, 100);
  std::cout << "integer attributes at 0 and -1: " << models << " models, " << refused << " refused\n";
}

}  // namespace
}  // namespace tensormem
