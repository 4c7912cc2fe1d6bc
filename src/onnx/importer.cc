// SPDX-License-Identifier: Apache-2.0
// ONNX model -> Graph. Parses the protobuf with bounded limits onto an
// arena, applies the user's dimensions, then alternates ONNX shape inference
// and shape folding (shape_folding.h) on the working model (the parsed one,
// changed in place), where folded nodes are replaced by initializers holding
// their values, until a round folds nothing. What the graph needs of the
// model is then copied into compact tables and the model released: the
// remaining nodes, in file order, become the graph; every tensor they touch
// must have a fully known shape and a sized element type.
#include "tensormem/onnx.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

// After ONNX's headers: its parser declares names that <sys/mman.h> defines as macros.
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/checked_math.h"
#include "core/name_map.h"
#include "onnx/const_tensor.h"
#include "onnx/dtype.h"
#include "onnx/shape_folding.h"

namespace tensormem {
namespace {

using namespace onnx_import;
using Dims = std::vector<std::int64_t>;

// ONNX's STFT inference reads the signal's dimension 1 without checking its
// rank: a signal of rank 1 (a graph input, or any node's output) crashed the
// process. Each registered STFT schema's inference is wrapped, once per
// process, to refuse such a signal first (an inference error, which the
// import reports as an unknown shape, never a crash).
// Test: OnnxImport.StftWithMalformedInputsNeverCrashes.
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

// A value's type as ONNX knows it: element type and, per dimension, a fixed
// value (>= 0) or -1 with, when the dimension is a symbol (dim_param), that
// symbol. `symbols` stays empty when no dimension is a symbol: a graph of
// millions of tensors would otherwise hold a string per dimension.
struct ValueType {
  std::int32_t dtype = 0;
  bool has_shape = false;
  Dims dims;
  std::vector<std::string> symbols;

  bool Known() const {
    if (!has_shape) return false;
    return std::all_of(dims.begin(), dims.end(), [](std::int64_t d) { return d >= 0; });
  }
  std::string FirstSymbol() const {
    for (const std::string& s : symbols)
      if (!s.empty()) return s;
    return "";
  }
  std::string_view Symbol(std::size_t i) const { return i < symbols.size() ? std::string_view(symbols[i]) : std::string_view(); }
};

ValueType TypeOf(const onnx::TypeProto& type) {
  ValueType v;
  if (!type.has_tensor_type()) return v;
  const auto& tt = type.tensor_type();
  v.dtype = tt.elem_type();
  if (!tt.has_shape()) return v;
  v.has_shape = true;
  v.dims.reserve(static_cast<std::size_t>(tt.shape().dim_size()));
  for (const auto& d : tt.shape().dim()) {
    v.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
    if (d.has_dim_param()) {
      v.symbols.resize(v.dims.size());
      v.symbols.back() = d.dim_param();
    }
  }
  return v;
}

ValueType TypeOf(const onnx::TensorProto& t) {
  ValueType v;
  v.dtype = t.data_type();
  v.has_shape = true;
  v.dims.assign(t.dims().begin(), t.dims().end());
  return v;
}

ValueType TypeOf(const ConstTensor& t) {
  ValueType v;
  v.dtype = t.dtype;
  v.has_shape = true;
  v.dims = t.dims;
  return v;
}

std::string ShapeString(const ValueType& v) {
  if (!v.has_shape) return "unknown";
  std::string s;
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    if (i) s += "x";
    s += v.dims[i] >= 0 ? std::to_string(v.dims[i])
                        : (v.Symbol(i).empty() ? std::string("?") : std::string(v.Symbol(i)));
  }
  return s.empty() ? "scalar" : s;
}

// What the graph build reads of the model once inference and folding are
// done: each name the graph uses is a value (its type, whether it is a
// constant or a data input), each graph node its op and its values. Copied
// out of the parsed model, so that the model (hundreds of MB for a graph of
// a million nodes, with the types inference added) is released before the
// graph, as large, is built.
struct Tables {
  struct TextRef {  // in `text`
    std::size_t at = 0;
    std::uint32_t size = 0;
  };
  struct Value {
    TextRef name;
    std::int32_t dtype = 0;
    std::uint32_t rank = 0;
    std::size_t dims_at = 0;  // in `dims`
    bool typed = false, has_shape = false, constant = false, data_input = false;
  };
  struct Op {
    std::string op_type, domain;
    std::string graph_op;  // GraphNode::op
  };
  struct Node {
    int file_index = 0;
    TextRef name;
    std::uint32_t op = 0;  // in `ops`
    std::uint32_t inputs = 0, outputs = 0;
    std::size_t io_at = 0;  // in `io`: the inputs' values, then the outputs'
    InPlace in_place = InPlace::kNone;
  };

  std::string text;
  std::vector<Value> values;
  std::vector<std::int64_t> dims;
  std::unordered_map<int, std::vector<std::string>> symbols;  // of values with a symbolic dimension
  std::vector<Op> ops;
  std::vector<Node> nodes;
  std::vector<int> io;                            // kNoTensor: absent
  std::vector<std::pair<int, bool>> data_inputs;  // value, and whether it is a tensor
  std::vector<int> outputs;
  std::size_t file_nodes = 0;

  TextRef Add(std::string_view s) {
    const TextRef r{text.size(), static_cast<std::uint32_t>(s.size())};
    text.append(s);
    return r;
  }
  std::string_view Str(TextRef r) const { return std::string_view(text).substr(r.at, r.size); }
  std::string_view Name(int v) const { return Str(values[static_cast<std::size_t>(v)].name); }

  std::optional<ValueType> TypeOf(int v) const {
    const Value& value = values[static_cast<std::size_t>(v)];
    if (!value.typed) return std::nullopt;
    ValueType type;
    type.dtype = value.dtype;
    type.has_shape = value.has_shape;
    type.dims.assign(dims.begin() + static_cast<std::ptrdiff_t>(value.dims_at),
                     dims.begin() + static_cast<std::ptrdiff_t>(value.dims_at + value.rank));
    if (auto it = symbols.find(v); it != symbols.end()) type.symbols = it->second;
    return type;
  }
};

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

bool IsConstantNode(const onnx::NodeProto& n) { return n.op_type() == "Constant" && IsDefaultDomain(n.domain()); }

// Keeps the elements of `field` for which keep(index) holds, in order,
// without copying any: the dropped ones stay alive on the arena (pointers to
// them, as Importer::original_ holds, remain valid).
template <typename T, typename Keep>
void KeepOnArena(google::protobuf::RepeatedPtrField<T>* field, Keep keep) {
  int kept = 0;
  for (int k = 0; k < field->size(); ++k) {
    if (!keep(k)) continue;
    if (kept != k) field->SwapElements(kept, k);
    ++kept;
  }
  while (field->size() > kept) field->UnsafeArenaReleaseLast();
}

// Blocks of 2 MB and more are mapped on their own and advised as
// transparent huge pages (Linux, where the system offers them; advice,
// ignored elsewhere): a model of a million nodes fills hundreds of MB of
// blocks, and first touching them 4 KB at a time cost nearly as much as
// the parse that fills them.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

void* AllocateArenaBlock(std::size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (size >= kHugePage) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, size, MADV_HUGEPAGE);
    return p;
  }
#endif
  return ::operator new(size);
}

void FreeArenaBlock(void* p, std::size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (size >= kHugePage) {
    munmap(p, size);
    return;
  }
#endif
  ::operator delete(p);
}

// Large blocks: a model of a million nodes is hundreds of MB of messages.
google::protobuf::ArenaOptions ModelArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 8 << 20;
  options.block_alloc = AllocateArenaBlock;
  options.block_dealloc = FreeArenaBlock;
  return options;
}

// The import, in steps. The model is parsed onto an arena (one allocation
// per block, not per message: a million-node model is millions of strings
// and messages, freed at once) and then becomes the working model in place:
// Constant nodes and folded nodes leave its node list, but stay alive on the
// arena, where original_ points at every node of the file in file order.
// Once folding is done, the model is resolved into Tables and the arena
// released before the graph is built from the tables.
class Importer {
 public:
  Importer(std::string_view source, const OnnxImportParams& params)
      : source_(source),
        params_(params),
        arena_(ModelArenaOptions()),
        model_(google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&*arena_)) {}

  // `owned`, when given, holds `bytes` and is emptied once they are parsed.
  Result<OnnxModel> Run(std::string_view bytes, std::string* owned) {
    const auto start = std::chrono::steady_clock::now();
    TM_RETURN_IF_ERROR(Parse(bytes));
    if (owned) std::string().swap(*owned);
    TM_RETURN_IF_ERROR(Collect());
    TM_RETURN_IF_ERROR(MakeWorkingModel());
    TM_RETURN_IF_ERROR(InferAndFold());
    Tables tables = Resolve();
    ReleaseModel();
    TM_ASSIGN_OR_RETURN(OnnxModel out, Build(std::move(tables)));
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

 private:
  Status Error(const std::string& what) const { return InvalidArgument(source_ + ": " + what); }

  // Original node k of the file.
  const onnx::NodeProto& Node(int k) const { return *original_[static_cast<std::size_t>(k)]; }

  static std::string NodeName(int k, std::string_view name, std::string_view op_type) {
    return "node " + std::to_string(k) + (name.empty() ? "" : " '" + std::string(name) + "'") + " (" +
           std::string(op_type) + ")";
  }
  std::string NodeName(int k) const { return NodeName(k, Node(k).name(), Node(k).op_type()); }

  Status Parse(std::string_view bytes) {
    if (bytes.size() > params_.max_file_bytes || bytes.size() > static_cast<std::size_t>(INT_MAX))
      return Error("file of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                   std::to_string(std::min<std::uint64_t>(params_.max_file_bytes, INT_MAX)) + " bytes");
    google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetTotalBytesLimit(static_cast<int>(bytes.size()));
    in.SetRecursionLimit(64);
    if (!model_->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
      return Error("not an ONNX model: protobuf parsing failed (truncated, corrupt or not a ModelProto)");
    if (model_->ir_version() <= 0 || !model_->has_graph())
      return Error("not an ONNX model: no IR version or no graph");
    bool found = false;
    for (const auto& op : model_->opset_import())
      if (IsDefaultDomain(op.domain())) {
        opset_ = static_cast<int>(op.version());
        found = true;
      }
    if (!found || opset_ <= 0) return Error("no opset version for the default ONNX domain");
    return Status::Ok();
  }

  Status Collect() {
    TM_RETURN_IF_ERROR(CollectInitializers());
    TM_RETURN_IF_ERROR(CollectNodes());
    return CollectInputs();
  }

  Status CollectInitializers() {
    const onnx::GraphProto& g = model_->graph();
    for (const auto& t : g.initializer()) {
      if (!initializer_.emplace(t.name(), &t).second)
        return Error("initializer '" + t.name() + "' is defined twice");
      TM_ASSIGN_OR_RETURN(std::optional<ConstTensor> v, ReadTensorProto(t, params_.max_folded_elements));
      if (v) values_[t.name()] = std::move(*v);
    }
    for (const auto& t : g.sparse_initializer()) {
      onnx::TensorProto dense;
      dense.set_name(t.values().name());
      dense.set_data_type(t.values().data_type());
      for (std::int64_t d : t.dims()) dense.add_dims(d);
      sparse_.push_back(std::move(dense));
    }
    for (const auto& t : sparse_) initializer_.emplace(t.name(), &t);
    return Status::Ok();
  }

  Status CollectNodes() {
    const onnx::GraphProto& g = model_->graph();
    original_.reserve(static_cast<std::size_t>(g.node_size()));
    for (const onnx::NodeProto& n : g.node()) original_.push_back(&n);
    for (int k = 0; k < g.node_size(); ++k) {
      const onnx::NodeProto& n = g.node(k);
      for (const auto& a : n.attribute())
        if (a.has_g() || a.graphs_size() > 0)
          return Unimplemented(source_ + ": " + NodeName(k) +
                               " has a sub-graph (control flow); such models are not supported");
      if (IsConstantNode(n)) TM_RETURN_IF_ERROR(ReadConstantNode(k));
    }
    return Status::Ok();
  }

  // Which graph inputs are data (activations) and which parameters.
  Status CollectInputs() {
    const onnx::GraphProto& g = model_->graph();
    std::unordered_set<std::string> named(params_.data_inputs.begin(), params_.data_inputs.end());
    for (const auto& [name, shape] : params_.input_shapes) named.insert(name);
    std::unordered_set<std::string> inputs;
    for (const auto& vi : g.input()) inputs.insert(vi.name());
    for (const std::string& n : named)
      if (!inputs.count(n)) return Error("no graph input named '" + n + "' (" + InputList() + ")");
    bool first = true;
    for (const auto& vi : g.input()) {
      bool data;
      if (!named.empty())
        data = named.count(vi.name()) > 0;
      else if (initializer_.count(vi.name()))
        data = false;
      else
        data = g.initializer_size() > 0 || first;  // no initializers at all: weights are inputs
      if (!initializer_.count(vi.name())) first = false;
      (data ? data_inputs_ : param_inputs_).insert(vi.name());
    }
    return Status::Ok();
  }

  std::string InputList() const {
    std::string s = "graph inputs:";
    int shown = 0;
    for (const auto& vi : model_->graph().input()) {
      if (++shown > 8) {
        s += " ...";
        break;
      }
      s += " '" + vi.name() + "'";
    }
    return s;
  }

  Status ReadConstantNode(int k) {
    const onnx::NodeProto& n = Node(k);
    if (n.output_size() != 1 || n.attribute_size() != 1)
      return Error(NodeName(k) + ": a Constant needs one output and one value attribute");
    const onnx::AttributeProto& a = n.attribute(0);
    onnx::TensorProto t;
    if (a.name() == "value" && a.has_t()) {
      t = a.t();
    } else if (a.name() == "value_int") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_int64_data(a.i());
    } else if (a.name() == "value_ints") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(a.ints_size());
      for (std::int64_t v : a.ints()) t.add_int64_data(v);
    } else if (a.name() == "value_float") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_float_data(a.f());
    } else if (a.name() == "value_floats") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(a.floats_size());
      for (float v : a.floats()) t.add_float_data(v);
    } else if (a.name() == "sparse_value" && a.has_sparse_tensor()) {
      t.set_data_type(a.sparse_tensor().values().data_type());
      for (std::int64_t d : a.sparse_tensor().dims()) t.add_dims(d);
    } else {
      return Error(NodeName(k) + ": Constant attribute '" + a.name() + "' is not supported");
    }
    t.set_name(n.output(0));
    TM_ASSIGN_OR_RETURN(std::optional<ConstTensor> v, ReadTensorProto(t, params_.max_folded_elements));
    if (v) values_[n.output(0)] = std::move(*v);
    constants_.emplace(n.output(0), std::move(t));
    return Status::Ok();
  }

  // The parsed model becomes the working model: Constant nodes become
  // initializers, then the user's shapes and dimensions apply.
  Status MakeWorkingModel() {
    for (const auto& vi : model_->graph().input()) input_is_tensor_.push_back(vi.type().has_tensor_type());
    onnx::GraphProto* g = model_->mutable_graph();
    model_->set_ir_version(std::max<std::int64_t>(model_->ir_version(), 4));
    for (int k = 0; k < g->node_size(); ++k) {
      const onnx::NodeProto& n = g->node(k);
      if (IsConstantNode(n))
        *g->add_initializer() = constants_.at(n.output(0));
      else
        working_index_.push_back(k);
    }
    KeepOnArena(g->mutable_node(), [&](int k) { return !IsConstantNode(g->node(k)); });
    TM_RETURN_IF_ERROR(ApplyInputShapes());
    return ApplyDims();
  }

  Status ApplyInputShapes() {
    onnx::GraphProto* g = model_->mutable_graph();
    for (const auto& [name, dims] : params_.input_shapes) {
      for (auto& vi : *g->mutable_input()) {
        if (vi.name() != name) continue;
        auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
        // A declared rank is the graph's contract: another one fails only
        // later, at the first node, as an unknown shape.
        if (vi.type().tensor_type().has_shape() && shape->dim_size() > 0 &&
            static_cast<std::size_t>(shape->dim_size()) != dims.size())
          return Error("--input-shape " + name + ": " + std::to_string(dims.size()) +
                       " dimensions given, the model declares " + std::to_string(shape->dim_size()));
        shape->clear_dim();
        for (std::int64_t d : dims) {
          if (d < 0) return Error("--input-shape " + name + ": negative dimension");
          shape->add_dim()->set_dim_value(d);
        }
      }
    }
    return Status::Ok();
  }

  Status ApplyDims() {
    onnx::GraphProto* g = model_->mutable_graph();
    // No structured binding here: clang 14 (Debian 12's default) refuses a
    // lambda capturing one.
    for (const auto& entry : params_.dims) {
      const std::string& symbol = entry.first;
      const auto value = entry.second;
      if (value < 0) return Error("--dim " + symbol + "=" + std::to_string(value) + ": negative");
      int replaced = 0;
      auto fix = [&](onnx::ValueInfoProto& vi) {
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
        for (auto& d : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
          if (d.has_dim_param() && d.dim_param() == symbol) {
            d.set_dim_value(value);
            ++replaced;
          }
      };
      for (auto& vi : *g->mutable_input()) fix(vi);
      for (auto& vi : *g->mutable_output()) fix(vi);
      for (auto& vi : *g->mutable_value_info()) fix(vi);
      if (!replaced) return Error("--dim " + symbol + ": the model has no dimension named '" + symbol + "'");
    }
    return Status::Ok();
  }

  Status Infer() {
    GuardStftInference();
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                          /*data_prop=*/false);
      onnx::shape_inference::InferShapes(*model_, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      return Error(std::string("ONNX shape inference failed: ") + e.what());
    } catch (...) {
      return Error("ONNX shape inference failed");
    }
    ReadInferredTypes();
    return Status::Ok();
  }

  // types_ from the working model; its keys and values are the model's own
  // strings and messages (converted when read: most are read once).
  void ReadInferredTypes() {
    types_.Clear();
    const onnx::GraphProto& g = model_->graph();
    types_.Reserve(static_cast<std::size_t>(g.initializer_size() + g.input_size() + g.value_info_size() +
                                            g.output_size()));
    for (const auto& t : g.initializer()) types_.Assign(t.name(), {nullptr, &t});
    for (const auto& vi : g.input()) types_.Assign(vi.name(), {&vi.type(), nullptr});
    for (const auto& vi : g.value_info()) types_.Assign(vi.name(), {&vi.type(), nullptr});
    for (const auto& vi : g.output()) {
      const bool has_shape = vi.type().has_tensor_type() && vi.type().tensor_type().has_shape();
      if (has_shape || !types_.Find(vi.name())) types_.Assign(vi.name(), {&vi.type(), nullptr});
    }
  }

  bool FoldableType(std::int32_t dtype) const {
    if (IsIntegral(dtype)) return true;
    return params_.fold_floating &&
           (dtype == onnx::TensorProto::FLOAT || dtype == onnx::TensorProto::DOUBLE);
  }

  // Every node (sub-graphs included) against its schema: input and output
  // counts, required inputs, required attributes (sub-graphs too),
  // attribute types. ONNX's own inference dereferences what the schema promises
  // (Scan without its body, STFT with one input crashed it), so nothing
  // that breaks a schema reaches it.
  // Integer attributes that ONNX's shape inference divides by, or that
  // make no sense below 1: it divided by a Conv's zero stride (SIGFPE, found
  // by the ONNX importer fuzzer), so such values are refused before it runs.
  // Test: OnnxOperatorSweep.EveryIntegerAttributeAtZeroAndBelowNeverCrashes.
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

  // The file's nodes, Constant nodes included (the working model has none).
  Status CheckSchemas() const {
    for (const onnx::NodeProto* n : original_) TM_RETURN_IF_ERROR(CheckSchema(*n, 0));
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
      for (const auto& imp : model_->opset_import())
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

  // Shape inference, then folding of what it made known, until a round
  // folds nothing (or the round limit).
  Status InferAndFold() {
    TM_RETURN_IF_ERROR(CheckSchemas());
    for (rounds_ = 1;; ++rounds_) {
      TM_RETURN_IF_ERROR(Infer());
      if (rounds_ > params_.max_rounds) break;
      const std::vector<char> folded = FoldRound();
      if (std::find(folded.begin(), folded.end(), 1) == folded.end()) break;
      DropFolded(folded);
    }
    return Status::Ok();
  }

  // Folds every working node whose inputs are known; 1 per folded node.
  std::vector<char> FoldRound() {
    const onnx::GraphProto& g = model_->graph();
    std::vector<char> folded(static_cast<std::size_t>(g.node_size()), 0);
    for (int k = 0; k < g.node_size(); ++k)
      if (IsFoldableOp(g.node(k)) && TryFold(k)) {
        folded[static_cast<std::size_t>(k)] = 1;
        folded_original_.insert(working_index_[static_cast<std::size_t>(k)]);
      }
    return folded;
  }

  // Working node k's inputs for FoldNode, or nothing while one is unknown:
  // Shape and Size need their input's shape, every other op its values.
  // `shapes` holds the inferred types the inputs point at.
  std::optional<std::vector<FoldInput>> FoldInputs(const onnx::NodeProto& n, std::vector<ValueType>* shapes) const {
    const bool by_shape = n.op_type() == "Shape" || n.op_type() == "Size";
    std::vector<FoldInput> in(static_cast<std::size_t>(n.input_size()));
    shapes->reserve(in.size());  // no reallocation: `in` points into it
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) continue;
      FoldInput& f = in[static_cast<std::size_t>(i)];
      if (auto it = values_.find(n.input(i)); it != values_.end()) {
        f.value = &it->second;
        f.shape = &it->second.dims;
      } else if (const TypeRef* t = types_.Find(n.input(i)); by_shape && t) {
        const ValueType& type = shapes->emplace_back(t->Get());
        if (type.Known()) f.shape = &type.dims;
      }
      if (by_shape ? f.shape == nullptr : f.value == nullptr) return std::nullopt;
    }
    return in;
  }

  // Folds working node k when its inputs are known and its outputs of a
  // foldable type; the values go to values_.
  bool TryFold(int k) {
    const onnx::NodeProto& n = model_->graph().node(k);
    std::vector<ValueType> shapes;
    const std::optional<std::vector<FoldInput>> in = FoldInputs(n, &shapes);
    if (!in) return false;
    std::vector<ConstTensor> outs;
    std::string why;
    if (!FoldNode(n, opset_, *in, params_.max_folded_elements, &outs, &why)) {
      why_not_[working_index_[static_cast<std::size_t>(k)]] = why;
      return false;
    }
    if (!std::all_of(outs.begin(), outs.end(), [&](const ConstTensor& t) { return FoldableType(t.dtype); }))
      return false;
    for (int o = 0; o < n.output_size(); ++o)
      if (!n.output(o).empty()) values_[n.output(o)] = std::move(outs[static_cast<std::size_t>(o)]);
    return true;
  }

  // Folded nodes leave the working model; their outputs become initializers.
  void DropFolded(const std::vector<char>& folded) {
    onnx::GraphProto* g = model_->mutable_graph();
    std::vector<int> keep_index;
    for (int k = 0; k < g->node_size(); ++k) {
      if (folded[static_cast<std::size_t>(k)]) {
        for (const std::string& o : g->node(k).output())
          if (!o.empty()) WriteTensorProto(values_.at(o), o, g->add_initializer());
        continue;
      }
      keep_index.push_back(working_index_[static_cast<std::size_t>(k)]);
    }
    KeepOnArena(g->mutable_node(), [&](int k) { return !folded[static_cast<std::size_t>(k)]; });
    working_index_ = std::move(keep_index);
    // A folded value is an initializer now: an earlier inferred type (maybe
    // with generated symbols) would shadow it.
    KeepOnArena(g->mutable_value_info(), [&](int k) { return !values_.count(g->value_info(k).name()); });
  }

  // Where the last inference left a value's type: a declared or inferred
  // type, or an initializer.
  struct TypeRef {
    const onnx::TypeProto* type = nullptr;
    const onnx::TensorProto* tensor = nullptr;
    int value = -1;  // in the tables, once resolved
    ValueType Get() const { return type ? TypeOf(*type) : TypeOf(*tensor); }
  };

  // The type of a named value the graph reads: from inference (`typed`, its
  // types_ entry, when it has one), else from the initializer/constant that
  // defines it.
  std::optional<ValueType> TypeOfName(const std::string& name, const TypeRef* typed) const {
    if (auto it = values_.find(name); it != values_.end()) return TypeOf(it->second);
    if (typed) return typed->Get();
    if (auto it = initializer_.find(name); it != initializer_.end()) return TypeOf(*it->second);
    if (auto it = constants_.find(name); it != constants_.end()) return TypeOf(it->second);
    return std::nullopt;
  }

  bool IsConstantName(const std::string& name) const {
    return initializer_.count(name) || constants_.count(name) || param_inputs_.count(name) ||
           values_.count(name);
  }

  // Resolving the model into tables: the value of each name, made on its
  // first use. A name's value is on its types_ entry (every inferred value
  // has one), else in `untyped`; both are keyed by the model's own strings.
  struct Resolving {
    Tables t;
    internal::NameMap<int> untyped;
    std::map<std::pair<std::string_view, std::string_view>, std::uint32_t> ops;  // (domain, op type)
  };

  int ValueOf(Resolving& r, const std::string& name) {
    TypeRef* typed = types_.Find(name);
    int* value = typed ? &typed->value : r.untyped.TryEmplace(name, -1).first;
    if (*value >= 0) return *value;
    *value = static_cast<int>(r.t.values.size());
    Tables::Value v;
    v.name = r.t.Add(name);
    if (std::optional<ValueType> type = TypeOfName(name, typed)) {
      v.typed = true;
      v.has_shape = type->has_shape;
      v.dtype = type->dtype;
      v.dims_at = r.t.dims.size();
      v.rank = static_cast<std::uint32_t>(type->dims.size());
      r.t.dims.insert(r.t.dims.end(), type->dims.begin(), type->dims.end());
      if (!type->symbols.empty()) r.t.symbols.emplace(*value, std::move(type->symbols));
    }
    v.constant = IsConstantName(name);
    v.data_input = data_inputs_.count(name) > 0;
    r.t.values.push_back(v);
    return *value;
  }

  std::uint32_t OpOf(Resolving& r, const onnx::NodeProto& n) {
    const auto [it, inserted] =
        r.ops.try_emplace({n.domain(), n.op_type()}, static_cast<std::uint32_t>(r.t.ops.size()));
    if (inserted)
      r.t.ops.push_back({n.op_type(), n.domain(),
                         IsDefaultDomain(n.domain()) ? n.op_type() : n.domain() + "." + n.op_type()});
    return it->second;
  }

  // Original node k, a graph node (neither a Constant nor folded).
  void ResolveNode(Resolving& r, int k) {
    const onnx::NodeProto& n = Node(k);
    Tables::Node node;
    node.file_index = k;
    node.name = r.t.Add(n.name());
    node.op = OpOf(r, n);
    node.in_place = InPlaceOf(n);
    node.io_at = r.t.io.size();
    node.inputs = static_cast<std::uint32_t>(n.input_size());
    node.outputs = static_cast<std::uint32_t>(n.output_size());
    for (const std::string& name : n.input()) r.t.io.push_back(name.empty() ? kNoTensor : ValueOf(r, name));
    for (const std::string& name : n.output()) r.t.io.push_back(name.empty() ? kNoTensor : ValueOf(r, name));
    r.t.nodes.push_back(node);
  }

  // Everything the graph build reads of the model, in the order it reads it.
  Tables Resolve() {
    Resolving r;
    const onnx::GraphProto& g = model_->graph();
    r.t.file_nodes = original_.size();
    r.t.nodes.reserve(original_.size() - constants_.size() - folded_original_.size());
    r.t.values.reserve(types_.size());
    for (int i = 0; i < g.input_size(); ++i)
      if (data_inputs_.count(g.input(i).name()))
        r.t.data_inputs.push_back({ValueOf(r, g.input(i).name()), input_is_tensor_[static_cast<std::size_t>(i)] != 0});
    for (int k = 0; k < static_cast<int>(original_.size()); ++k)
      // Their outputs are constants now (IsConstantName).
      if (!IsConstantNode(Node(k)) && !folded_original_.count(k)) ResolveNode(r, k);
    for (const auto& vi : g.output()) r.t.outputs.push_back(ValueOf(r, vi.name()));
    return std::move(r.t);
  }

  // The parsed model goes: the graph is built from the tables alone.
  void ReleaseModel() {
    types_ = {};
    initializer_ = {};
    original_ = {};
    model_ = nullptr;
    arena_.reset();
  }

  // The graph under construction from the tables: each value's graph
  // tensor, -1 until created.
  struct Building {
    Tables t;
    OnnxModel out;
    std::vector<int> tensor_of;
  };

  Result<OnnxModel> Build(Tables tables) {
    OnnxModel out;
    {
      Building b{std::move(tables), {}, {}};
      b.tensor_of.assign(b.t.values.size(), -1);
      b.out.file_nodes = b.t.file_nodes;
      b.out.folded_nodes = folded_original_.size();
      b.out.rounds = rounds_;
      // No reallocation (the old and new arrays of a million tensors at
      // once) while building.
      b.out.graph.tensors.reserve(b.t.values.size());
      b.out.shapes.reserve(b.t.values.size());
      b.out.dtypes.reserve(b.t.values.size());
      b.out.graph.nodes.reserve(b.t.nodes.size());
      TM_RETURN_IF_ERROR(AddDataInputs(b));
      for (const Tables::Node& n : b.t.nodes) TM_RETURN_IF_ERROR(AddNode(b, n));
      TM_RETURN_IF_ERROR(AddGraphOutputs(b));
      b.out.constant_nodes = constants_.size();
      out = std::move(b.out);
    }  // the tables go before the check
    TM_RETURN_IF_ERROR(CheckGraph(out.graph).WithContext(source_));
    return out;
  }

  std::string NodeName(const Tables& t, const Tables::Node& n) const {
    return NodeName(n.file_index, t.Str(n.name), t.ops[n.op].op_type);
  }

  // Creates the graph tensor of value `v` with a checked size. `writer` is
  // the node that writes it (null for inputs and constants), for messages.
  Result<int> AddTensor(Building& b, int v, TensorKind kind, const Tables::Node* writer) {
    const Tables::Value& value = b.t.values[static_cast<std::size_t>(v)];
    const std::string name(b.t.Str(value.name));
    auto who = [&] {
      return (writer ? NodeName(b.t, *writer) + ": output" : std::string("tensor")) + " '" + name + "'";
    };
    std::optional<ValueType> type = b.t.TypeOf(v);
    if (!type || !type->has_shape)
      return Error(who() + ": shape unknown after ONNX shape inference and folding" + Hint(b.t, writer));
    if (!type->Known()) {
      const std::string sym = type->FirstSymbol();
      if (!sym.empty())
        return Error(who() + " has symbolic dimension '" + sym + "' (shape " + ShapeString(*type) +
                     "): set it with --dim " + sym + "=VALUE" +
                     (value.data_input ? " or --input-shape " + name + "=..." : ""));
      return Error(who() + ": shape " + ShapeString(*type) + " is not fully known" + Hint(b.t, writer));
    }
    Result<std::uint64_t> esize = ElementSize(type->dtype);
    if (!esize.ok()) return Error(who() + ": " + esize.status().message());
    std::uint64_t bytes = *esize;
    for (std::int64_t d : type->dims)
      if (!internal::CheckedMul(bytes, static_cast<std::uint64_t>(d), &bytes))
        return OutOfRange(source_ + ": " + who() + ": size of shape " + ShapeString(*type) + " overflows 64 bits");
    Graph& graph = b.out.graph;
    const int id = static_cast<int>(graph.tensors.size());
    graph.tensors.push_back({name, bytes, kind, 0});
    b.out.shapes.push_back(std::move(type->dims));
    b.out.dtypes.push_back(DtypeName(type->dtype));
    b.tensor_of[static_cast<std::size_t>(v)] = id;
    return id;
  }

  Status AddDataInputs(Building& b) {
    for (const auto& [v, is_tensor] : b.t.data_inputs) {
      if (!is_tensor)
        return Unimplemented(source_ + ": graph input '" + std::string(b.t.Name(v)) + "' is not a tensor");
      TM_ASSIGN_OR_RETURN(int id, AddTensor(b, v, TensorKind::kActivation, nullptr));
      b.out.graph.inputs.push_back(id);
    }
    return Status::Ok();
  }

  // The graph tensor of value `v` that node `n` reads: defined already, or
  // a constant first read here.
  Result<int> ReadTensor(Building& b, int v, const Tables::Node& n) {
    if (const int id = b.tensor_of[static_cast<std::size_t>(v)]; id >= 0) return id;
    if (!b.t.values[static_cast<std::size_t>(v)].constant)
      return Error(NodeName(b.t, n) + " reads '" + std::string(b.t.Name(v)) +
                   "', which is no graph input, initializer or output of an earlier node");
    return AddTensor(b, v, TensorKind::kConstant, nullptr);
  }

  Status AddNode(Building& b, const Tables::Node& n) {
    GraphNode node;
    node.name = b.t.Str(n.name);
    node.op = b.t.ops[n.op].graph_op;
    node.inputs.reserve(n.inputs);
    for (std::size_t i = n.io_at; i < n.io_at + n.inputs; ++i) {
      const int v = b.t.io[i];
      if (v == kNoTensor) {
        node.inputs.push_back(kNoTensor);
        continue;
      }
      TM_ASSIGN_OR_RETURN(int id, ReadTensor(b, v, n));
      node.inputs.push_back(id);
    }
    node.outputs.reserve(n.outputs);
    for (std::size_t i = n.io_at + n.inputs; i < n.io_at + n.inputs + n.outputs; ++i) {
      const int v = b.t.io[i];
      if (v == kNoTensor) {
        node.outputs.push_back(kNoTensor);
        continue;
      }
      const Tables::Value& value = b.t.values[static_cast<std::size_t>(v)];
      if (b.tensor_of[static_cast<std::size_t>(v)] >= 0 || value.constant || value.data_input)
        return Error(NodeName(b.t, n) + " writes '" + std::string(b.t.Name(v)) + "', which is already defined");
      TM_ASSIGN_OR_RETURN(int id, AddTensor(b, v, TensorKind::kActivation, &n));
      node.outputs.push_back(id);
    }
    node.in_place = n.in_place;
    b.out.graph.nodes.push_back(std::move(node));
    return Status::Ok();
  }

  Status AddGraphOutputs(Building& b) {
    for (const int v : b.t.outputs) {
      if (const int id = b.tensor_of[static_cast<std::size_t>(v)]; id >= 0) {
        b.out.graph.outputs.push_back(id);
        continue;
      }
      if (!b.t.values[static_cast<std::size_t>(v)].constant)
        return Error("graph output '" + std::string(b.t.Name(v)) + "' is written by no node");
      TM_ASSIGN_OR_RETURN(int id, AddTensor(b, v, TensorKind::kConstant, nullptr));
      b.out.graph.outputs.push_back(id);
    }
    return Status::Ok();
  }

  InPlace InPlaceOf(const onnx::NodeProto& n) const {
    if (!IsDefaultDomain(n.domain())) return InPlace::kNone;
    const std::string& op = n.op_type();
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity")
      return InPlace::kInput0Unmodified;
    // Dropout at inference passes its input through (training_mode absent).
    if (op == "Dropout" && n.input_size() < 3) return InPlace::kInput0Unmodified;
    return InPlace::kNone;
  }

  // Why the output of `writer` has no known shape, when a reason is known.
  std::string Hint(const Tables& t, const Tables::Node* writer) const {
    if (!writer) return "";
    const Tables::Op& op = t.ops[writer->op];
    std::string h;
    if (!IsDefaultDomain(op.domain) || !onnx::OpSchemaRegistry::Schema(op.op_type, opset_, op.domain))
      h = " (op " + op.op_type + " is unknown to ONNX shape inference; give its output shapes in the model's value_info)";
    else if (auto it = why_not_.find(writer->file_index); it != why_not_.end())
      h = " (folding it failed: " + it->second + ")";
    return h;
  }

  std::string source_;
  const OnnxImportParams& params_;
  std::optional<google::protobuf::Arena> arena_;  // until the model is resolved into tables
  onnx::ModelProto* model_;  // on arena_: as parsed, then the working model
  std::vector<const onnx::NodeProto*> original_;  // the file's nodes, in order (on arena_)
  int opset_ = 0;
  int rounds_ = 0;
  std::unordered_map<std::string_view, const onnx::TensorProto*> initializer_;
  std::vector<onnx::TensorProto> sparse_;
  std::unordered_map<std::string, onnx::TensorProto> constants_;  // Constant node outputs
  std::unordered_map<std::string, ConstTensor> values_;           // known small values
  internal::NameMap<TypeRef> types_;
  std::unordered_set<std::string> data_inputs_, param_inputs_;
  std::vector<char> input_is_tensor_;  // per graph input, before --input-shape made it one
  std::vector<int> working_index_;  // working node -> original node
  std::unordered_set<int> folded_original_;
  std::unordered_map<int, std::string> why_not_;
};

}  // namespace

namespace {

// `owned`: as Importer::Run.
Result<OnnxModel> Import(std::string_view bytes, std::string_view source, const OnnxImportParams& params,
                         std::string* owned) {
  try {
    Importer importer(source, params);
    return importer.Run(bytes, owned);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(std::string(source) + ": out of memory while importing");
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(source) + ": import failed: " + e.what());
  }
}

}  // namespace

Result<OnnxModel> ImportOnnxBytes(std::string_view bytes, std::string_view source,
                                  const OnnxImportParams& params) {
  return Import(bytes, source, params, nullptr);
}

Result<OnnxModel> ImportOnnxFile(const std::string& path, const OnnxImportParams& params) {
  // A directory opens as a stream on Linux, and its "size" is 2^63 - 1.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) return InvalidArgument(path + ": is a directory, not a file");
  // A pipe or a device has no size to read the model whole by.
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    return InvalidArgument(path + ": not a regular file (a pipe or a device): give the model file's path");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFound(path + ": cannot open: " + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) return NotFound(path + ": cannot read");
  if (static_cast<std::uint64_t>(size) > params.max_file_bytes)
    return InvalidArgument(path + ": file of " + std::to_string(size) + " bytes exceeds the limit of " +
                           std::to_string(params.max_file_bytes) + " bytes");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) return NotFound(path + ": read failed");
  in.close();
  return Import(bytes, path, params, &bytes);  // the file's bytes go once parsed
}

}  // namespace tensormem
