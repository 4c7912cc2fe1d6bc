// SPDX-License-Identifier: Apache-2.0
// ONNX model -> Graph. Parses the protobuf with bounded limits onto an
// arena, applies the user's dimensions, then alternates ONNX shape inference
// and shape folding (shape_folding.h) on the working model (the parsed one,
// changed in place), where folded nodes are replaced by initializers holding
// their values, until a round folds nothing. What the graph needs of the
// model is then copied into compact tables and the model released: the
// remaining nodes, in file order, become the graph (graph_build.h); every
// tensor they touch must have a fully known shape and a sized element type.
// Every node is checked against its schema before inference runs
// (schema_check.h).
#include "tensormem/onnx.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <optional>
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

#include "core/name_map.h"
#include "onnx/const_tensor.h"
#include "onnx/dtype.h"
#include "onnx/graph_build.h"
#include "onnx/schema_check.h"
#include "onnx/shape_folding.h"
#include "onnx/value_type.h"

namespace tensormem {
namespace {

using namespace onnx_import;

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
    TM_ASSIGN_OR_RETURN(OnnxModel out, BuildGraph(std::move(tables), BuildContextOf()));
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

 private:
  Status Error(const std::string& what) const { return InvalidArgument(source_ + ": " + what); }

  // Original node k of the file.
  const onnx::NodeProto& Node(int k) const { return *original_[static_cast<std::size_t>(k)]; }

  std::string NodeName(int k) const { return onnx_import::NodeName(k, Node(k).name(), Node(k).op_type()); }

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

  // Shape inference, then folding of what it made known, until a round
  // folds nothing (or the round limit).
  Status InferAndFold() {
    TM_RETURN_IF_ERROR(CheckSchemas(original_, *model_, opset_, source_));
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

  // What the graph reports beyond the tables (the model is gone by then).
  BuildContext BuildContextOf() {
    BuildContext c;
    c.source = source_;
    c.opset = opset_;
    c.rounds = rounds_;
    c.folded_nodes = folded_original_.size();
    c.constant_nodes = constants_.size();
    c.why_not = std::move(why_not_);
    return c;
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
