// SPDX-License-Identifier: Apache-2.0
// Building small ONNX models in tests.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace tensormem::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // dims: >= 0 fixed, -1 unknown; symbols (non-empty) give dim_param names.
  ModelBuilder& Input(const std::string& name, std::vector<std::int64_t> dims,
                      int dtype = onnx::TensorProto::FLOAT, std::vector<std::string> symbols = {}) {
    SetType(model_.mutable_graph()->add_input(), name, dims, dtype, symbols);
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  ModelBuilder& ValueInfo(const std::string& name, std::vector<std::int64_t> dims,
                          int dtype = onnx::TensorProto::FLOAT) {
    SetType(model_.mutable_graph()->add_value_info(), name, dims, dtype, {});
    return *this;
  }
  ModelBuilder& Initializer(const std::string& name, std::vector<std::int64_t> dims,
                            std::vector<std::int64_t> values, int dtype = onnx::TensorProto::INT64) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    FillTensor(t, name, dims, values, dtype);
    return *this;
  }
  ModelBuilder& FloatInitializer(const std::string& name, std::vector<std::int64_t> dims) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (std::int64_t i = 0; i < n; ++i) t->add_float_data(0.5f);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  ModelBuilder& Constant(const std::string& output, std::vector<std::int64_t> dims,
                         std::vector<std::int64_t> values) {
    onnx::NodeProto& n = Node("Constant", {}, {output});
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    FillTensor(a->mutable_t(), "", dims, values, onnx::TensorProto::INT64);
    return *this;
  }
  static void IntAttr(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void IntsAttr(onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
  }

  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  static void FillTensor(onnx::TensorProto* t, const std::string& name,
                         const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& values,
                         int dtype) {
    t->set_name(name);
    t->set_data_type(dtype);
    for (std::int64_t d : dims) t->add_dims(d);
    for (std::int64_t v : values) {
      if (dtype == onnx::TensorProto::INT64)
        t->add_int64_data(v);
      else
        t->add_int32_data(static_cast<std::int32_t>(v));
    }
  }
  static void SetType(onnx::ValueInfoProto* vi, const std::string& name,
                      const std::vector<std::int64_t>& dims, int dtype,
                      const std::vector<std::string>& symbols) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(dtype);
    auto* shape = tt->mutable_shape();
    for (std::size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (i < symbols.size() && !symbols[i].empty())
        d->set_dim_param(symbols[i]);
      else if (dims[i] >= 0)
        d->set_dim_value(dims[i]);
    }
  }

  onnx::ModelProto model_;
};

}  // namespace tensormem::testing
