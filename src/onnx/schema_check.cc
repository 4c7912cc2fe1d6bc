// SPDX-License-Identifier: Apache-2.0
#include "onnx/schema_check.h"

#include <mutex>
#include <set>
#include <string>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

namespace tensormem::onnx_import {

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

namespace {

class SchemaChecker {
 public:
  SchemaChecker(const onnx::ModelProto& model, int opset, const std::string& source)
      : model_(model), opset_(opset), source_(source) {}

  Status CheckPositive(const std::string& where, const onnx::AttributeProto& a) const {
    static const std::set<std::string> kPositive = {"strides", "dilations", "kernel_shape", "blocksize",
                                                    "group", "num_outputs"};
    if (!kPositive.count(a.name())) return Status::Ok();
    auto bad = [&](std::int64_t v, int index) {
      return Error(where + ": attribute '" + a.name() + "' is " + std::to_string(v) +
                   (index < 0 ? std::string() : " at index " + std::to_string(index)) + ": it must be at least 1");
    };
    if (a.type() == onnx::AttributeProto::INT && a.i() < 1) return bad(a.i(), -1);
    for (int i = 0; i < a.ints_size(); ++i)
      if (a.ints(i) < 1) return bad(a.ints(i), i);
    return Status::Ok();
  }

  Status CheckSchemas(const onnx::GraphProto& g, int depth) const {
    if (depth > 32) return Error("sub-graphs nested deeper than 32 levels");
    for (const onnx::NodeProto& n : g.node()) TM_RETURN_IF_ERROR(CheckSchema(n, depth));
    return Status::Ok();
  }

  // `n` in a graph at `depth`: against its schema, then its sub-graphs.
  Status CheckSchema(const onnx::NodeProto& n, int depth) const {
    int version = IsDefaultDomain(n.domain()) ? opset_ : -1;
    if (version < 0)
      for (const auto& imp : model_.opset_import())
        if (imp.domain() == n.domain()) version = static_cast<int>(imp.version());
    const onnx::OpSchema* schema =
        version < 0 ? nullptr : onnx::OpSchemaRegistry::Schema(n.op_type(), version, n.domain());
    if (schema) TM_RETURN_IF_ERROR(CheckAgainst(n, *schema));
    for (const auto& a : n.attribute()) {
      if (a.has_g()) TM_RETURN_IF_ERROR(CheckSchemas(a.g(), depth + 1));
      for (const auto& sub : a.graphs()) TM_RETURN_IF_ERROR(CheckSchemas(sub, depth + 1));
    }
    return Status::Ok();
  }

  Status CheckAgainst(const onnx::NodeProto& n, const onnx::OpSchema& schema) const {
    const std::string where = "node '" + n.name() + "' (" + n.op_type() + ")";
    if (n.input_size() < schema.min_input() || n.input_size() > schema.max_input())
      return Error(where + ": " + std::to_string(n.input_size()) + " inputs, the schema takes " +
                   std::to_string(schema.min_input()) + " to " + std::to_string(schema.max_input()));
    if (n.output_size() < schema.min_output() || n.output_size() > schema.max_output())
      return Error(where + ": " + std::to_string(n.output_size()) + " outputs, the schema takes " +
                   std::to_string(schema.min_output()) + " to " + std::to_string(schema.max_output()));
    // Required inputs (not optional, not variadic tails) must be named.
    const auto& formals = schema.inputs();
    for (int i = 0; i < n.input_size() && i < static_cast<int>(formals.size()); ++i)
      if (n.input(i).empty() && formals[static_cast<std::size_t>(i)].GetOption() == onnx::OpSchema::Single)
        return Error(where + ": required input " + std::to_string(i) + " is empty");
    const auto& attrs = schema.attributes();
    for (const auto& [name, attr] : attrs) {
      if (!attr.required) continue;
      bool present = false;
      for (const auto& a : n.attribute()) present |= a.name() == name;
      if (!present) return Error(where + ": required attribute '" + name + "' is missing");
    }
    for (const auto& a : n.attribute()) {
      auto it = attrs.find(a.name());
      if (it == attrs.end()) continue;  // unknown: ignored, as inference ignores it
      if (a.has_type() && a.type() != it->second.type)
        return Error(where + ": attribute '" + a.name() + "' has the wrong type");
      if (it->second.type == onnx::AttributeProto::GRAPH && !a.has_g())
        return Error(where + ": attribute '" + a.name() + "' holds no graph");
      TM_RETURN_IF_ERROR(CheckPositive(where, a));
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const { return InvalidArgument(source_ + ": " + what); }

  const onnx::ModelProto& model_;
  int opset_;
  const std::string& source_;
};

}  // namespace

Status CheckSchemas(const std::vector<const onnx::NodeProto*>& nodes, const onnx::ModelProto& model, int opset,
                    const std::string& source) {
  const SchemaChecker checker(model, opset, source);
  for (const onnx::NodeProto* n : nodes) TM_RETURN_IF_ERROR(checker.CheckSchema(*n, 0));
  return Status::Ok();
}

void GuardStftInference() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::set<const onnx::OpSchema*> schemas;
    for (int version = 1; version <= onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second;
         ++version)
      if (const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema("STFT", version, "")) schemas.insert(s);
    for (const onnx::OpSchema* s : schemas) {
      // The registry owns its schemas, not const: only this wrapper changes.
      auto* schema = const_cast<onnx::OpSchema*>(s);
      onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
      schema->TypeAndShapeInferenceFunction([original](onnx::InferenceContext& ctx) {
        if (onnx::hasInputShape(ctx, 0) && onnx::getInputShape(ctx, 0).dim_size() < 2)
          fail_shape_inference("STFT: the signal has rank ", onnx::getInputShape(ctx, 0).dim_size(),
                               "; it needs at least 2 ([batch][length]...)");
        if (original) original(ctx);
      });
    }
  });
}

}  // namespace tensormem::onnx_import
