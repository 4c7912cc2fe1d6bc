// SPDX-License-Identifier: Apache-2.0
// tensormem._tensormem: the pybind11 binding of the C++ library.
//
// Arrays come in as NumPy arrays (or anything np.asarray takes) and are read
// in C++ without per-element Python objects; offsets go out as NumPy arrays
// that view the plan's own vector (no copy). The GIL is released around
// planning, solving, ONNX import and replay. Library errors (Status) become
// Python exceptions carrying the message: ValueError (invalid argument, out
// of range), FileNotFoundError (a missing file), MemoryError (resource
// exhausted), tensormem.TensormemError (everything else, with .code).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "harness/replay.h"
#include "tensormem/allocators/system_allocator.h"
#include "tensormem/defaults.h"
#include "tensormem/trace.h"
#include "tensormem/graph.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/solver.h"
#include "tensormem/solver_tuning.h"
#include "tensormem/validator.h"
#include "tensormem/version.h"
#if TENSORMEM_PY_HAVE_ONNX
#include "tensormem/onnx.h"
#endif
#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/vmm_allocator.h"

namespace py = pybind11;
using namespace tensormem;

namespace {

// The C++ side of tensormem.TensormemError.
struct TensormemError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void RaisePython(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

// Status -> Python exception. `file` says a NotFound names a file. An
// exception Python has pending (a KeyboardInterrupt that stopped a read)
// is the one raised.
// Long words are cut as the CLI cuts them (CutLongWords).
[[noreturn]] void Raise(const Status& st, bool file = true) {
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  const std::string message = CutLongWords(st.message());
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      throw py::value_error(message);
    case StatusCode::kNotFound:
      if (file) RaisePython(PyExc_FileNotFoundError, message);
      break;
    case StatusCode::kResourceExhausted:
      RaisePython(PyExc_MemoryError, message);
    default:
      break;
  }
  throw TensormemError(std::string(StatusCodeName(st.code())) + ": " + message);
}

void Check(const Status& st, bool file = true) {
  if (!st.ok()) Raise(st, file);
}

template <typename T>
T Take(Result<T>&& r, bool file = true) {
  if (!r.ok()) Raise(r.status(), file);
  return std::move(r).value();
}

// ---- arrays in -------------------------------------------------------------

// A 1-D integer array from anything np.asarray accepts; ValueError naming
// `name` otherwise. Empty inputs of any dtype are fine.
py::array IntArray(const py::handle& obj, const char* name) {
  py::array a;
  try {
    a = py::array::ensure(obj);
  } catch (const py::error_already_set&) {
  }
  if (!a) throw py::value_error(std::string(name) + ": not convertible to an array");
  if (a.ndim() != 1)
    throw py::value_error(std::string(name) + ": expected a 1-D array, got " +
                          std::to_string(a.ndim()) + " dimensions");
  const char kind = a.dtype().kind();
  if (a.size() > 0 && kind != 'i' && kind != 'u')
    throw py::value_error(std::string(name) + ": dtype " + std::string(py::str(a.dtype())) +
                          " is not an integer type");
  return a;
}

// An integer array as Out (uint64 sizes, int64 task indices; the library
// checks the ranges it needs): a value Out cannot hold is a ValueError
// naming the element.
template <typename Out>
std::vector<Out> ToIntegers(const py::handle& obj, const char* name) {
  py::array a = IntArray(obj, name);
  const auto n = static_cast<std::size_t>(a.size());
  std::vector<Out> out(n);
  if (n == 0) return out;
  auto convert = [&](auto dummy) {
    using In = decltype(dummy);
    auto typed = py::array_t<In, py::array::c_style | py::array::forcecast>::ensure(a);
    const In* p = typed.data();
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::in_range<Out>(p[i]))
        throw py::value_error(std::string(name) + "[" + std::to_string(i) + "] is " +
                              (std::cmp_less(p[i], 0) ? "negative" : "out of range") + " (" + std::to_string(p[i]) + ")");
      out[i] = static_cast<Out>(p[i]);
    }
  };
  if (a.dtype().kind() == 'u') convert(std::uint64_t{});
  else convert(std::int64_t{});
  return out;
}

std::vector<UsageRecord> ToRecords(const py::handle& sizes, const py::handle& first,
                                   const py::handle& last) {
  const std::vector<std::uint64_t> s = ToIntegers<std::uint64_t>(sizes, "sizes");
  const std::vector<std::int64_t> f = ToIntegers<std::int64_t>(first, "first");
  const std::vector<std::int64_t> l = ToIntegers<std::int64_t>(last, "last");
  if (f.size() != s.size() || l.size() != s.size())
    throw py::value_error("sizes, first and last must have the same length (got " +
                          std::to_string(s.size()) + ", " + std::to_string(f.size()) + ", " +
                          std::to_string(l.size()) + ")");
  std::vector<UsageRecord> records(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) records[i] = {s[i], f[i], l[i]};
  return records;
}

// ---- arrays out ------------------------------------------------------------

template <typename T>
py::array_t<T> View(const std::vector<T>& v, const py::object& owner) {
  return py::array_t<T>({static_cast<py::ssize_t>(v.size())}, {static_cast<py::ssize_t>(sizeof(T))},
                        v.data(), owner);
}

template <typename T>
py::array_t<T> Copy(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// ---- problems and plans ----------------------------------------------------

struct PyProblem {
  Problem problem;
  std::string source;
};

struct PyPlan {
  std::shared_ptr<const Problem> problem;  // when planned from a problem
  std::vector<UsageRecord> records;        // when planned from arrays
  bool objects = false;
  OffsetsPlan offsets;   // offsets plan; for objects, the objects laid back to back
  ObjectsPlan object_plan;
  std::uint64_t alignment = 1;
  std::optional<Schedule> schedule;  // a model's: the order planned in

  const Problem& GetProblem() {
    if (!problem) problem = std::make_shared<Problem>(FromRecords(records));
    return *problem;
  }
};


// A non-negative integer argument (an int, or anything with __index__ such
// as a NumPy integer; not a bool): TypeError naming it otherwise, ValueError
// when negative, OverflowError above 2^64 - 1. (An unsigned parameter would
// fail as a TypeError listing the whole signature.) The one check of counts:
// the Python wrappers call it as _non_negative.
std::uint64_t NonNegative(const py::object& value, const std::string& name) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw py::type_error(name + " must be an integer, not " +
                         std::string(Py_TYPE(value.ptr())->tp_name));
  const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  const int negative = PyObject_RichCompareBool(index.ptr(), py::int_(0).ptr(), Py_LT);
  if (negative < 0) throw py::error_already_set();
  if (negative == 1) throw py::value_error(name + " must be non-negative, got " + py::str(index).cast<std::string>());
  const unsigned long long v = PyLong_AsUnsignedLongLong(index.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  return static_cast<std::uint64_t>(v);
}

OffsetsStrategy OffsetsByName(const std::string& name) { return Take(ParseOffsetsStrategy(name)); }
ObjectsStrategy ObjectsByName(const std::string& name) { return Take(ParseObjectsStrategy(name)); }

// The time limit and thread count as Python names them ("plan: time_limit
// ..."), checked here so that no C++ parameter struct's name reaches a caller.
void CheckTimeAndThreads(const char* function, double time_limit, std::uint64_t threads,
                         unsigned max_threads) {
  if (!(time_limit >= 0)) {
    std::ostringstream why;
    why << function << ": time_limit must be >= 0 seconds (math.inf for none), got " << time_limit;
    throw py::value_error(why.str());
  }
  if (threads > max_threads)
    throw py::value_error(std::string(function) + ": threads must be at most " + std::to_string(max_threads) +
                          " (0: one per hardware thread), got " + std::to_string(threads));
}

// Ctrl-C during a call that releases the GIL: the library polls the
// callback; at most every 50 ms it takes the GIL and runs Python's signal
// handlers. An exception they raise (KeyboardInterrupt) stops the call and
// is raised when it returns (ThrowIfInterrupted, with the GIL).
class Interruptible {
 public:
  std::function<bool()> Callback() {
    return [this] {
      const auto now = std::chrono::steady_clock::now();
      if (interrupted_ || now - last_ < std::chrono::milliseconds(50)) return interrupted_;
      last_ = now;
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) interrupted_ = true;
      return interrupted_;
    };
  }
  void ThrowIfInterrupted() const {
    if (interrupted_) throw py::error_already_set();
  }

 private:
  bool interrupted_ = false;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// For SetInputInterruptCheck: a blocking read of a pipe stops when a
// signal handler raised (Ctrl-C); Raise then raises that exception.
bool PythonSignalRaised() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

PyPlan DoPlan(std::vector<UsageRecord> records, std::shared_ptr<const Problem> problem,
              const std::string& strategy, std::uint64_t alignment, bool objects,
              double time_limit, std::uint64_t threads) {
  Check(ValidateAlignment(alignment, "plan"), false);
  CheckTimeAndThreads("plan", time_limit, threads, kMaxPlanThreads);
  PyPlan out;
  out.objects = objects;
  out.alignment = alignment;
  PlanParams params;
  params.alignment = alignment;
  params.time_limit_seconds = time_limit;
  params.threads = static_cast<unsigned>(threads);
  Interruptible interrupt;  // (should_stop runs on the calling thread only)
  params.should_stop = interrupt.Callback();
  if (objects) {
    const ObjectsStrategy s = ObjectsByName(strategy);
    if (problem) records = ::tensormem::ToRecords(*problem);
    std::optional<Result<ObjectsPlan>> r;
    std::optional<Result<OffsetsPlan>> laid;
    {
      py::gil_scoped_release release;
      r.emplace(PlanObjects(records, s, params));
      if (r->ok()) laid.emplace(ObjectsToOffsets(**r, 1));
    }
    interrupt.ThrowIfInterrupted();
    out.object_plan = Take(std::move(*r));
    out.offsets = Take(std::move(*laid));
    out.offsets.strategy = out.object_plan.strategy;
    out.offsets.lower_bound = out.object_plan.lower_bound;
    out.offsets.seconds = out.object_plan.seconds;
  } else {
    const OffsetsStrategy s = OffsetsByName(strategy);
    std::optional<Result<OffsetsPlan>> r;
    {
      py::gil_scoped_release release;
      r.emplace(problem ? PlanOffsets(*problem, s, params) : PlanOffsets(records, s, params));
    }
    interrupt.ThrowIfInterrupted();
    out.offsets = Take(std::move(*r));
  }
  out.problem = std::move(problem);
  out.records = std::move(records);
  return out;
}

// A path as the C library takes it: a NUL byte inside would cut it short
// (another file read or written), so it is a ValueError, as open() says.
const std::string& CheckPath(const std::string& path) {
  if (path.find('\0') != std::string::npos) throw py::value_error("embedded null byte in path");
  return path;
}

// A path argument: a str or any os.PathLike (a pathlib.Path), as the
// package's loaders take.
std::string PathArg(const py::object& path) {
  const py::object name = py::module_::import("os").attr("fspath")(path);
  if (!py::isinstance<py::str>(name))
    throw py::type_error("path must be a str or an os.PathLike of str, not bytes");
  return CheckPath(name.cast<std::string>());
}

// As the CLI writes: whole or not at all, a directory refused.
void WriteTo(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  Check(WriteFileWhole(path, write));
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

#if TENSORMEM_PY_HAVE_ONNX
// An ONNX model imported and planned by the graph planner (without the GIL).
GraphPlan PlanModel(const std::string& path, const std::map<std::string, std::vector<std::int64_t>>& shapes,
                    const std::map<std::string, std::int64_t>& dims, const GraphPlanParams& params) {
  if (IsStreamInput(CheckPath(path))) Raise(OnnxNotFromAFileError(path));
  OnnxImportParams ip;
  ip.input_shapes = shapes;
  ip.dims = dims;
  std::optional<Result<OnnxModel>> model;
  std::optional<Result<GraphPlan>> plan;
  {
    py::gil_scoped_release release;
    model.emplace(ImportOnnxFile(path, ip));
    if (model->ok()) plan.emplace(PlanGraph((*model)->graph, params));
  }
  Take(std::move(*model));
  return Take(std::move(*plan));
}

std::shared_ptr<PyProblem> RecordsFromOnnx(const std::string& path,
                                           const std::map<std::string, std::vector<std::int64_t>>& shapes,
                                           const std::map<std::string, std::int64_t>& dims,
                                           std::uint64_t alignment, const std::string& order = std::string(defaults::kOrder)) {
  GraphPlanParams gp;
  gp.alignment = alignment;
  gp.schedule.order = Take(ParseOrderStrategy(order));
  auto out = std::make_shared<PyProblem>();
  out->problem = std::move(PlanModel(path, shapes, dims, gp).scratch);
  out->source = InputName(path);
  return out;
}

// plan_model(): the model's scratch arena with one offsets strategy in the
// order asked for (joint: the smallest arena over the candidate orders), as
// `tensormem plan MODEL --order`: the order search and the placement each
// get `time_limit`.
PyPlan PlanOnnxModel(const std::string& path, const std::map<std::string, std::vector<std::int64_t>>& shapes,
                     const std::map<std::string, std::int64_t>& dims, const std::string& strategy,
                     const std::string& order, std::uint64_t alignment, double time_limit, std::uint64_t threads) {
  Check(ValidateAlignment(alignment, "plan_model"), false);
  CheckTimeAndThreads("plan_model", time_limit, threads, kMaxPlanThreads);
  GraphPlanParams gp;
  gp.alignment = alignment;
  gp.strategy = OffsetsByName(strategy);
  gp.schedule.order = Take(ParseOrderStrategy(order));
  gp.schedule.time_limit_seconds = time_limit > 0 ? time_limit : 1e-9;  // 0: no search, as plan()
  gp.offsets.time_limit_seconds = time_limit;
  gp.offsets.threads = static_cast<unsigned>(threads);
  GraphPlan plan = PlanModel(path, shapes, dims, gp);
  PyPlan out;
  out.alignment = alignment;
  out.offsets = std::move(plan.scratch_plan);
  out.problem = std::make_shared<const Problem>(std::move(plan.scratch));
  out.schedule = std::move(plan.schedule);
  return out;
}

// A schedule as the CLI's JSON "order" object.
py::dict OrderDict(const Schedule& s) {
  py::dict d;
  d["method"] = s.method;
  d["peak"] = s.peak;
  d["given_peak"] = s.given_peak;
  d["lower_bound"] = s.lower_bound ? py::object(py::int_(*s.lower_bound)) : py::object(py::none());
  d["proved_optimal"] = s.proved_optimal;
  d["states"] = s.states;
  d["seconds"] = s.seconds;
  py::list candidates;
  for (const OrderCandidate& c : s.candidates) {
    py::dict cd;
    cd["method"] = c.method;
    cd["peak"] = c.peak;
    cd["arena"] = c.placed ? py::object(py::int_(c.arena)) : py::object(py::none());
    candidates.append(cd);
  }
  d["candidates"] = candidates;
  return d;
}
#endif

std::shared_ptr<PyProblem> LoadAnyProblem(const std::string& path) {
  CheckPath(path);
  std::optional<Result<InputFormat>> detected;
  {
    py::gil_scoped_release release;  // a pipe's open and first read wait for its writer
    detected.emplace(DetectInputFormat(path));
  }
  const InputFormat format = Take(std::move(*detected));
  if (format == InputFormat::kOnnx) {
    if (IsStreamInput(path)) Raise(OnnxNotFromAFileError(path));
#if TENSORMEM_PY_HAVE_ONNX
    return RecordsFromOnnx(path, {}, {}, defaults::kTensorAlignment);
#else
    Raise(Unimplemented(path + ": an ONNX model, but tensormem was built without the ONNX importer"));
#endif
  }
  std::optional<Result<Problem>> r;
  {
    py::gil_scoped_release release;
    r.emplace(LoadProblem(path));
  }
  auto out = std::make_shared<PyProblem>();
  out->problem = Take(std::move(*r));
  out->source = InputName(path);
  return out;
}

// ---- allocators ------------------------------------------------------------

struct PyAllocator {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<PhysicalMemory> physical;
  std::unique_ptr<MemoryResource> resource;
  // Calls running through the allocator without the GIL (replay): close()
  // refuses while any does, so no thread frees what another uses. Changed
  // only with the GIL held.
  int users = 0;

  MemoryResource& Get() {
    if (!resource) throw TensormemError("the allocator was closed");
    return *resource;
  }

  void Close() {
    if (users > 0) throw TensormemError("the allocator is in use by a replay; close it when the replay returns");
    resource.reset();
    physical.reset();
    backend.reset();
  }
};

// Holds an allocator open for a call that releases the GIL (made and
// destroyed with the GIL held).
class AllocatorUse {
 public:
  explicit AllocatorUse(PyAllocator& a) : a_(a), resource_(a.Get()) { ++a_.users; }
  ~AllocatorUse() { --a_.users; }
  AllocatorUse(const AllocatorUse&) = delete;
  AllocatorUse& operator=(const AllocatorUse&) = delete;
  MemoryResource& resource() { return resource_; }

 private:
  PyAllocator& a_;
  MemoryResource& resource_;
};

py::dict StatsDict(const AllocatorStats& s) {
  py::dict d;
  d["num_allocs"] = s.num_allocs;
  d["num_frees"] = s.num_frees;
  d["num_failed_allocs"] = s.num_failed_allocs;
  d["bytes_in_use"] = s.bytes_in_use;
  d["peak_bytes_in_use"] = s.peak_bytes_in_use;
  d["largest_alloc_size"] = s.largest_alloc_size;
  d["bytes_reserved"] = s.bytes_reserved;
  d["peak_bytes_reserved"] = s.peak_bytes_reserved;
  d["bytes_limit"] = s.bytes_limit ? py::cast(*s.bytes_limit) : py::none();
  d["free_bytes"] = s.free_bytes;
  d["largest_free_block"] = s.largest_free_block;
  d["fragmentation"] = s.fragmentation;
  return d;
}

// A BFC under a preset (the CLI's --bfc-preset table), with the arguments
// given (not None) on top, as replay's --bfc-* options change it.
std::unique_ptr<PyAllocator> MakeBfc(std::optional<std::uint64_t> memory_limit, const std::optional<std::string>& growth,
                                     std::optional<std::uint64_t> initial_region_bytes,
                                     std::optional<bool> virtual_memory, const std::string& preset_name) {
  const BfcPreset preset = Take(ParseBfcPreset(preset_name));
  BfcParams p = BfcPresetParams(preset);
  if (growth) p.growth = Take(ParseBfcGrowth(*growth));
  if (initial_region_bytes) p.initial_region_bytes = *initial_region_bytes;
  if (memory_limit) p.memory_limit = *memory_limit;
  if (p.growth == BfcGrowth::kReserveAll && !memory_limit)
    throw py::value_error("growth 'reserve_all' needs a memory_limit");
  Check(Validate(p));
  auto a = std::make_unique<PyAllocator>();
  if (virtual_memory.value_or(BfcPresetUsesVirtualMemory(preset))) {
    a->backend = std::make_unique<VirtualMemoryBackend>();
    a->resource = std::make_unique<BfcAllocator>(*a->backend, p);
  } else {
    a->resource = std::make_unique<BfcAllocator>(HostBackend(), p);
  }
  return a;
}

// ---- replay ----------------------------------------------------------------

struct PyTrace {
  Trace trace;
};

std::shared_ptr<PyTrace> LoadAnyTrace(const std::string& path) {
  CheckPath(path);
  std::optional<Result<Trace>> r;
  {
    py::gil_scoped_release release;
    r.emplace(LoadTrace(path));
  }
  auto t = std::make_shared<PyTrace>();
  t->trace = Take(std::move(*r));
  return t;
}

std::shared_ptr<PyTrace> TraceOf(const py::object& obj) {
  if (py::isinstance<PyTrace>(obj)) return obj.cast<std::shared_ptr<PyTrace>>();
  return LoadAnyTrace(PathArg(obj));
}

// The vmm allocator's device-call counters, named as replay's JSON names them.
py::dict VmmCountersDict(const VmmAllocator::Counters& c) {
  py::dict d;
  for (const auto& [name, field] : VmmAllocator::kCounterFields) d[py::str(std::string(name))] = c.*field;
  return d;
}

py::dict ReplayDict(const ReplayResult& r) {
  py::dict d;
  d["allocator"] = r.allocator;
  d["ops"] = r.ops;
  d["ns_per_op"] = r.ns_per_op;
  d["cpu_ns_per_op"] = r.cpu_ns_per_op;
  d["peak_in_use"] = r.peak_in_use;
  d["peak_reserved"] = r.peak_reserved;
  d["reserved_over_in_use"] = r.reserved_over_in_use;
  d["fragmentation"] = r.fragmentation ? py::cast(*r.fragmentation) : py::none();
  d["reserved_source"] = r.reserved_source;
  d["peak_held"] = r.peak_held ? py::cast(*r.peak_held) : py::none();
  d["held_source"] = r.held_source;
  // As replay's JSON: the warm pass (every allocator), vmm's counters of
  // both passes, a virtual-memory backend's handles.
  d["warm_ns_per_op"] = r.warm_ns_per_op ? py::cast(*r.warm_ns_per_op) : py::none();
  if (r.vmm_counters) d["vmm"] = VmmCountersDict(*r.vmm_counters);
  if (r.vmm_warm_counters) d["vmm_warm"] = VmmCountersDict(*r.vmm_warm_counters);
  if (r.backend_counters) {
    py::dict b;
    b["handles_created"] = r.backend_counters->handles_created;
    b["decommits"] = r.backend_counters->decommits;
    b["recommits"] = r.backend_counters->recommits;
    b["handles_released"] = r.backend_counters->handles_released;
    d["backend"] = b;
  }
  return d;
}

// ---- solve -----------------------------------------------------------------

struct PySolveResult {
  SolveResult r;
};

// solve(tuning={...}): each key set through SetTuning (the table of
// solver_tuning.h), its value as the CLI's text (True -> "true"); ValueError
// naming an unknown key or a bad value, TypeError a value of another type.
SolverTuning TuningFrom(const py::dict& tuning) {
  SolverTuning out;
  for (const auto& [key, value] : tuning) {
    if (!py::isinstance<py::str>(key)) throw py::type_error("tuning: keys are strings");
    const std::string name = key.cast<std::string>();
    std::string text;
    if (py::isinstance<py::bool_>(value)) {
      text = value.cast<bool>() ? "true" : "false";
    } else if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value) ||
               py::isinstance<py::str>(value)) {
      text = py::str(value).cast<std::string>();
    } else {
      throw py::type_error("tuning " + name + ": a bool, int, float or str, not " +
                           py::str(py::type::of(value).attr("__name__")).cast<std::string>());
    }
    Check(SetTuning(out, name, text), false);
  }
  Check(CheckTuning(out), false);
  return out;
}

// ---- bindings, one function per area ---------------------------------------

// The defaults table (tensormem/defaults.h) that the package's functions
// take their default arguments from.
void BindDefaults(py::module_& m) {
  py::dict d;
  d["plan_alignment"] = defaults::kPlanAlignment;
  d["tensor_alignment"] = defaults::kTensorAlignment;
  d["time_limit"] = defaults::kTimeLimitSeconds;
  d["replay_repetitions"] = defaults::kReplayRepetitions;
  d["replay_warm_passes"] = defaults::kReplayWarmPasses;
  d["replay_allocators"] = std::string(defaults::kReplayAllocators);
  d["polish_nodes"] = defaults::kPolishNodes;
  d["polish_seconds"] = defaults::kPolishSeconds;
  d["polish_time_share"] = defaults::kPolishTimeShare;
  d["order"] = std::string(defaults::kOrder);
  d["order_max_states"] = defaults::kOrderMaxStates;
  d["order_max_state_bytes"] = defaults::kOrderMaxStateBytes;
  d["order_beam_width"] = defaults::kOrderBeamWidth;
  m.attr("DEFAULTS") = d;
}

void BindProblem(py::module_& m) {
  py::class_<PyProblem, std::shared_ptr<PyProblem>>(m, "Problem", "An offset-planning problem: buffers with ids, sizes, inclusive lifetimes, alignments")
      .def_static(
          "from_arrays",
          [](const py::object& sizes, const py::object& first, const py::object& last) {
            auto p = std::make_shared<PyProblem>();
            const std::vector<UsageRecord> rec = ToRecords(sizes, first, last);
            p->problem = FromRecords(rec);
            Check(CheckProblem(p->problem));
            return p;
          },
          py::arg("sizes"), py::arg("first"), py::arg("last"),
          "A problem of plain buffers named 0, 1, 2, ... (lifetimes inclusive)")
      .def("__len__", [](const PyProblem& p) { return p.problem.buffers.size(); })
      .def_property_readonly("sizes", [](const PyProblem& p) {
        std::vector<std::uint64_t> v;
        for (const Buffer& b : p.problem.buffers) v.push_back(b.size);
        return Copy(v);
      })
      .def_property_readonly("first", [](const PyProblem& p) {
        std::vector<std::int64_t> v;
        for (const Buffer& b : p.problem.buffers) v.push_back(b.first_task);
        return Copy(v);
      })
      .def_property_readonly("last", [](const PyProblem& p) {
        std::vector<std::int64_t> v;
        for (const Buffer& b : p.problem.buffers) v.push_back(b.last_task);
        return Copy(v);
      })
      .def_property_readonly("ids", [](const PyProblem& p) {
        std::vector<std::string> v;
        for (const Buffer& b : p.problem.buffers) v.push_back(b.id);
        return v;
      })
      .def_property_readonly("capacity", [](const PyProblem& p) { return p.problem.capacity; })
      .def_readonly("source", &PyProblem::source)
      .def("lower_bound",
           [](const PyProblem& p, std::uint64_t alignment) { return PeakLiveBytes(p.problem, alignment); },
           py::arg("alignment") = defaults::kPlanAlignment, "Peak live bytes (the offsets lower bound)")
      .def("__repr__", [](const PyProblem& p) {
        return "<tensormem.Problem " + std::to_string(p.problem.buffers.size()) + " buffers" +
               (p.source.empty() ? "" : " from " + p.source) + ">";
      });
}

// The Plan class with its figures; BindPlanWriters adds the files.
py::class_<PyPlan> BindPlan(py::module_& m) {
  return py::class_<PyPlan>(m, "Plan", "A plan: offsets (or shared objects laid back to back) and its figures")
      .def_property_readonly("offsets", [](py::object self) {
        return View(self.cast<PyPlan&>().offsets.offsets, self);
      }, "per buffer: its byte offset (numpy.uint64, a view on the plan)")
      .def_property_readonly("total", [](const PyPlan& p) {
        return p.objects ? TotalSize(p.object_plan) : p.offsets.total;
      }, "arena bytes (offsets) or the sum of object sizes (objects)")
      .def_property_readonly("lower_bound", [](const PyPlan& p) { return p.offsets.lower_bound; })
      .def_property_readonly("strategy", [](const PyPlan& p) { return p.offsets.strategy; })
      .def_property_readonly("seconds", [](const PyPlan& p) { return p.offsets.seconds; },
                             "planning time measured by the C++ dispatcher")
      .def_property_readonly("polish_seconds", [](const PyPlan& p) -> py::object {
        return p.offsets.polish ? py::cast(p.offsets.polish->seconds) : py::none();
      }, "offsets best: seconds its exact polish took (part of seconds); None when it did not run")
      .def_property_readonly("polish_nodes", [](const PyPlan& p) -> py::object {
        return p.offsets.polish ? py::cast(p.offsets.polish->nodes) : py::none();
      }, "offsets best: search nodes its exact polish ran; None when it did not run")
      .def_property_readonly("ratio", [](const PyPlan& p) {
        return Ratio(p.objects ? TotalSize(p.object_plan) : p.offsets.total, p.offsets.lower_bound);
      })
      .def_readonly("objects", &PyPlan::objects)
      .def_property_readonly("object_of", [](py::object self) -> py::object {
        PyPlan& p = self.cast<PyPlan&>();
        if (!p.objects) return py::none();
        std::vector<std::uint64_t> v(p.object_plan.object_of.begin(), p.object_plan.object_of.end());
        return Copy(v);
      }, "objects plans: per buffer, its object")
      .def_property_readonly("object_sizes", [](py::object self) -> py::object {
        PyPlan& p = self.cast<PyPlan&>();
        if (!p.objects) return py::none();
        return View(p.object_plan.object_sizes, self);
      })
      .def_property_readonly("order", [](const PyPlan& p) -> py::object {
#if TENSORMEM_PY_HAVE_ONNX
        if (p.schedule) return OrderDict(*p.schedule);
#else
        (void)p;  // without the ONNX importer no plan has an order
#endif
        return py::none();
      }, "a model's plan (plan_model): the node order planned in, as `tensormem plan --json`'s "
         "graph.order (method, peak, given_peak, lower_bound, proved_optimal, states, seconds, "
         "candidates: method, peak, arena per order joint compared); None otherwise")
      .def("__len__", [](const PyPlan& p) { return p.offsets.offsets.size(); });
}

void BindPlanWriters(py::class_<PyPlan>& cls) {
  cls
      .def(
          "to_html",
          [](PyPlan& p, const py::object& path_arg, const std::string& title) {
            const std::string path = PathArg(path_arg);
            HtmlMapOptions o;
            o.title = title.empty() ? "tensormem plan \u2014 " + p.offsets.strategy : title;
            o.lower_bound = p.offsets.lower_bound;
            const Problem& problem = p.GetProblem();
            WriteTo(path, [&](std::ostream& f) { return WriteHtmlMap(f, problem, p.offsets, o); });
          },
          py::arg("path"), py::arg("title") = "",
          "Writes the interactive memory map (one self-contained HTML file)")
      .def(
          "to_svg",
          [](PyPlan& p, const py::object& path_arg, const std::string& title) {
            const std::string path = PathArg(path_arg);
            SvgOptions o;
            o.title = title;
            o.lower_bound = p.offsets.lower_bound;
            const Problem& problem = p.GetProblem();
            WriteTo(path, [&](std::ostream& f) { return WriteSvg(f, problem, p.offsets, o); });
          },
          py::arg("path"), py::arg("title") = "", "Writes the SVG memory map (small plans)")
      .def(
          "write",
          [](PyPlan& p, const py::object& path_arg) {
            const std::string path = PathArg(path_arg);
            const Problem& problem = p.GetProblem();
            if (p.objects)
              WriteTo(path, [&](std::ostream& f) { return WriteObjectsCsv(f, problem, p.object_plan); });
            else if (EndsWith(path, ".json"))
              WriteTo(path, [&](std::ostream& f) { return WriteProblemJson(f, problem, &p.offsets); });
            else
              WriteTo(path, [&](std::ostream& f) { return WriteProblemCsv(f, problem, &p.offsets); });
          },
          py::arg("path"),
          "Writes the problem with the plan: CSV with an offset (or object) column, or JSON (.json)")
      .def("__repr__", [](const PyPlan& p) {
        return "<tensormem.Plan " + p.offsets.strategy + ": " + std::to_string(p.offsets.offsets.size()) +
               " buffers, total " + std::to_string(p.objects ? TotalSize(p.object_plan) : p.offsets.total) +
               ", lower bound " + std::to_string(p.offsets.lower_bound) + ">";
      });
}

void BindPlanning(py::module_& m) {
  m.def(
      "_plan_arrays",
      [](const py::object& sizes, const py::object& first, const py::object& last,
         const std::string& strategy, std::uint64_t alignment, bool objects, double time_limit,
         std::uint64_t threads) {
        return DoPlan(ToRecords(sizes, first, last), nullptr, strategy, alignment, objects, time_limit, threads);
      },
      py::arg("sizes"), py::arg("first"), py::arg("last"), py::arg("strategy"), py::arg("alignment"),
      py::arg("objects"), py::arg("time_limit"), py::arg("threads") = 1);
  m.def(
      "_plan_problem",
      [](const std::shared_ptr<PyProblem>& p, const std::string& strategy, std::uint64_t alignment,
         bool objects, double time_limit, std::uint64_t threads) {
        // The plan keeps its own copy: the problem object may change hands.
        return DoPlan({}, std::make_shared<const Problem>(p->problem), strategy, alignment, objects,
                      time_limit, threads);
      },
      py::arg("problem"), py::arg("strategy"), py::arg("alignment"), py::arg("objects"),
      py::arg("time_limit"), py::arg("threads") = 1);
  // The C++ call alone, timed in C++ (for python/bench/plan_overhead.py):
  // (wall seconds, thread CPU seconds) of one PlanOffsets call on records
  // converted beforehand.
  m.def(
      "_time_plan_cpp",
      [](const py::object& sizes, const py::object& first, const py::object& last,
         const std::string& strategy, std::uint64_t alignment) {
        const std::vector<UsageRecord> records = ToRecords(sizes, first, last);
        const OffsetsStrategy s = OffsetsByName(strategy);
        PlanParams params;
        params.alignment = alignment;
        py::gil_scoped_release release;
        auto cpu = [] {
          timespec ts{};
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
          return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
        };
        const double c0 = cpu();
        const auto a = std::chrono::steady_clock::now();
        Result<OffsetsPlan> r = PlanOffsets(records, s, params);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
        const double c1 = cpu();
        return std::make_pair(wall, c1 - c0);
      });
  m.def("offsets_strategies", [] {
    std::vector<std::string> v;
    for (OffsetsStrategy s : AllOffsetsStrategies()) v.emplace_back(Name(s));
    return v;
  });
  m.def("objects_strategies", [] {
    std::vector<std::string> v;
    for (ObjectsStrategy s : AllObjectsStrategies()) v.emplace_back(Name(s));
    return v;
  });
}

void BindFiles(py::module_& m) {
  m.def("load_problem", &LoadAnyProblem, py::arg("path"),
        "A planning problem from a file: MiniMalloc CSV, JSON, an allocation trace, or an ONNX "
        "model (its scratch arena)");
  m.def(
      "write_problem",
      [](const std::string& path, const std::shared_ptr<PyProblem>& p) {
        if (EndsWith(CheckPath(path), ".json"))
          WriteTo(path, [&](std::ostream& f) { return WriteProblemJson(f, p->problem, nullptr); });
        else
          WriteTo(path, [&](std::ostream& f) { return WriteProblemCsv(f, p->problem, nullptr); });
      },
      py::arg("path"), py::arg("problem"));
#if TENSORMEM_PY_HAVE_ONNX
  m.def("records_from_onnx", &RecordsFromOnnx, py::arg("path"),
        py::arg("input_shapes") = std::map<std::string, std::vector<std::int64_t>>{},
        py::arg("dims") = std::map<std::string, std::int64_t>{}, py::arg("alignment") = defaults::kTensorAlignment,
        py::arg("order") = std::string(defaults::kOrder));
  m.def("_plan_model", &PlanOnnxModel, py::arg("path"), py::arg("input_shapes"), py::arg("dims"),
        py::arg("strategy"), py::arg("order"), py::arg("alignment"), py::arg("time_limit"),
        py::arg("threads"));
#endif
}

// The exact solver (its body belongs with the solver's interface).
void BindSolveResult(py::module_& m) {
  py::class_<PySolveResult>(m, "SolveResult", "The exact solver's answer")
      .def_property_readonly("status", [](const PySolveResult& s) { return std::string(Name(s.r.status)); })
      .def_property_readonly("has_plan", [](const PySolveResult& s) { return s.r.has_plan; })
      .def_property_readonly("height", [](const PySolveResult& s) { return s.r.height; })
      .def_property_readonly("lower_bound", [](const PySolveResult& s) { return s.r.lower_bound; })
      .def_property_readonly("gap", [](const PySolveResult& s) { return s.r.gap; })
      .def_property_readonly("seconds", [](const PySolveResult& s) { return s.r.seconds; })
      .def_property_readonly("nodes", [](const PySolveResult& s) { return s.r.nodes; })
      .def_property_readonly("reason", [](const PySolveResult& s) { return s.r.reason; })
      .def_property_readonly("heuristic_height", [](const PySolveResult& s) { return s.r.heuristic_height; })
      .def_property_readonly("partitions", [](const PySolveResult& s) { return s.r.partitions; })
      .def_property_readonly("restriction_bound", [](const PySolveResult& s) { return s.r.restriction_bound; })
      .def_property_readonly("deep_probes", [](const PySolveResult& s) { return s.r.deep_probes; })
      .def_property_readonly("deep_probe_plans", [](const PySolveResult& s) { return s.r.deep_probe_plans; })
      .def_property_readonly("deep_probe_proofs", [](const PySolveResult& s) { return s.r.deep_probe_proofs; })
      .def_property_readonly("relay_buffers", [](const PySolveResult& s) { return s.r.relay_buffers; })
      .def_property_readonly("relay_height", [](const PySolveResult& s) { return s.r.relay_height; })
      .def_property_readonly("relay_samples", [](const PySolveResult& s) { return s.r.relay_samples; })
      .def_property_readonly("relay_sample_plans", [](const PySolveResult& s) { return s.r.relay_sample_plans; })
      .def_property_readonly("fit_descent_turns", [](const PySolveResult& s) { return s.r.fit_descent_turns; })
      .def_property_readonly("fit_descent_plans", [](const PySolveResult& s) { return s.r.fit_descent_plans; })
      .def_property_readonly("weighted_turn", [](const PySolveResult& s) { return s.r.weighted_turn; })
      .def_property_readonly("threads", [](const PySolveResult& s) { return s.r.threads; })
      .def_property_readonly("offsets", [](py::object self) -> py::object {
        PySolveResult& s = self.cast<PySolveResult&>();
        if (!s.r.has_plan) return py::none();
        return View(s.r.plan.offsets, self);
      })
      .def_property_readonly("infeasible_subset", [](const PySolveResult& s) { return s.r.infeasible_subset; })
      .def("__repr__", [](const PySolveResult& s) {
        return "<tensormem.SolveResult " + std::string(Name(s.r.status)) + ": height " +
               std::to_string(s.r.height) + ", lower bound " + std::to_string(s.r.lower_bound) + ">";
      });
}

// solve(start=...): one offset per buffer, a plan of the problem (the
// validator's word, capacity aside), else ValueError.
std::optional<OffsetsPlan> StartPlan(const Problem& problem, const py::object& start, std::uint64_t alignment) {
  if (start.is_none()) return std::nullopt;
  Result<OffsetsPlan> plan = OffsetsPlanFrom(problem, ToIntegers<std::uint64_t>(start, "start"), alignment);
  if (!plan.ok()) throw py::value_error("start: not a plan of the problem: " + plan.status().message());
  plan->strategy = "start";
  return std::move(plan).value();
}

// solve(): the arguments checked as the CLI checks them, then the solver,
// without the GIL; Ctrl-C stops the search.
PySolveResult Solve(const std::shared_ptr<PyProblem>& p, std::optional<std::uint64_t> capacity, double time_limit,
                    bool minimize, std::uint64_t node_limit, std::uint64_t alignment, bool iis,
                    const py::object& start, std::uint64_t threads, const py::dict& tuning) {
  // Before the start is read at it; "solve", not SolverParams's name.
  Check(ValidateAlignment(alignment, "solve"), false);
  CheckTimeAndThreads("solve", time_limit, threads, kMaxSolverThreads);
  SolverParams params;
  params.tuning = TuningFrom(tuning);
  params.threads = static_cast<unsigned>(threads);
  const std::optional<OffsetsPlan> start_plan = StartPlan(p->problem, start, alignment);
  if (start_plan) params.initial_plan = &*start_plan;
  params.capacity = capacity;
  params.goal = (capacity || p->problem.capacity) && !minimize ? SolveGoal::kFit : SolveGoal::kMinimize;
  params.time_limit_seconds = time_limit;
  params.node_limit = node_limit;
  params.alignment = alignment;
  params.compute_iis = iis;
  Interruptible interrupt;
  params.should_stop = interrupt.Callback();
  std::optional<Result<SolveResult>> r;
  {
    py::gil_scoped_release release;
    r.emplace(SolveOffsets(p->problem, params));
  }
  interrupt.ThrowIfInterrupted();
  PySolveResult out;
  out.r = Take(std::move(*r));
  return out;
}

void BindSolve(py::module_& m) {
  BindSolveResult(m);
  m.def("_solve", &Solve, py::arg("problem"), py::arg("capacity"), py::arg("time_limit"), py::arg("minimize"),
        py::arg("node_limit"), py::arg("alignment"), py::arg("iis"), py::arg("start") = py::none(),
        py::arg("threads") = 1, py::arg("tuning") = py::dict());
  m.def(
      "tuning_keys",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> keys;
        for (const TuningKey& k : TuningKeys())
          keys.emplace_back(std::string(k.name), std::string(k.value), std::string(k.help));
        return keys;
      },
      "The solver's tuning keys (solve(tuning=...)): (name, values, help) per key");
}

void BindAllocatorClass(py::module_& m) {
  m.def("_non_negative", &NonNegative, py::arg("value"), py::arg("name"),
        "value as a non-negative integer; TypeError, ValueError or OverflowError naming `name`");
  py::class_<PyAllocator>(m, "Allocator", "A tensormem memory resource")
      .def(
          "allocate",
          [](PyAllocator& a, const py::object& bytes, const py::object& alignment) {
            return reinterpret_cast<std::uintptr_t>(
                Take(a.Get().Allocate(NonNegative(bytes, "bytes"), NonNegative(alignment, "alignment")), false));
          },
          py::arg("bytes"), py::arg("alignment") = py::int_(kDefaultAllocationAlignment),
          "Allocates a block; returns its address (an int). MemoryError when it cannot be served")
      .def(
          "free",
          [](PyAllocator& a, std::uintptr_t address) {
            Check(a.Get().Deallocate(reinterpret_cast<void*>(address)), false);
          },
          py::arg("address"), "Frees a block; an address not handed out is an error, never a crash")
      .def("stats", [](PyAllocator& a) { return StatsDict(a.Get().GetStats()); })
      .def(
          "counters",
          [](PyAllocator& a) -> py::object {
            if (const auto* v = dynamic_cast<const VmmAllocator*>(&a.Get())) {
              return py::object(VmmCountersDict(v->counters()));
            }
            (void)a.Get();  // a closed allocator is an error here too
            return py::none();
          },
          "vmm: what a device pays for (map calls, pages mapped and re-stitched, handles, "
          "synchronisations, event waits), as replay's JSON names them; None for the others")
      .def_property_readonly("name", [](PyAllocator& a) { return std::string(a.Get().name()); })
      .def("close", &PyAllocator::Close,
           "Releases the allocator's memory (every block it handed out becomes invalid); "
           "an error while a replay runs through it");
}

void BindAllocatorFactories(py::module_& m) {
  m.def("_bfc", &MakeBfc, py::arg("memory_limit"), py::arg("growth"), py::arg("initial_region_bytes"),
        py::arg("virtual_memory"), py::arg("preset"));
  m.def("bfc_presets", [] {
    std::vector<std::string> v;
    for (BfcPreset p : AllBfcPresets()) v.emplace_back(Name(p));
    return v;
  });
  m.def("_pool", [](std::uint64_t split_granularity) {
    auto a = std::make_unique<PyAllocator>();
    BufferPoolParams p;
    p.split_granularity = split_granularity;
    a->resource = Take(BufferPool::Create(HostBackend(), p), false);
    return a;
  });
  m.def("_system", [] {
    auto a = std::make_unique<PyAllocator>();
    a->resource = std::make_unique<SystemAllocator>();
    return a;
  });
  m.def("_vmm", [](std::optional<std::uint64_t> memory_limit, std::uint64_t granularity, double growth_slack,
                   std::uint64_t max_handle_granules, double grow_ahead, bool protect_refaulted,
                   std::optional<std::uint64_t> small_request_bytes) {
    auto a = std::make_unique<PyAllocator>();
    HostPhysicalMemoryParams hp;
    hp.granularity = granularity;
    a->physical = Take(HostPhysicalMemory::Create(hp));
    VmmParams vp;
    vp.memory_limit = memory_limit;
    vp.growth_slack = growth_slack;
    vp.max_handle_granules = max_handle_granules;
    vp.grow_ahead = grow_ahead;
    vp.protect_refaulted = protect_refaulted;
    if (small_request_bytes) vp.small_request_bytes = *small_request_bytes;
    a->resource = Take(VmmAllocator::Create(*a->physical, vp));
    return a;
  });
}

// The names of the replay allocators (peers_only: of the malloc peers), in
// the table's order.
std::vector<std::string> ReplayAllocatorNames(bool peers_only) {
  std::vector<std::string> v;
  for (ReplayAllocator a : AllReplayAllocators())
    if (!peers_only || IsMallocPeer(a)) v.emplace_back(Name(a));
  return v;
}

// replay() through an Allocator object: one pass, no map.
py::dict ReplayThroughObject(const PyTrace& t, PyAllocator& allocator, std::uint64_t alignment,
                             const std::string& html) {
  AllocatorUse use(allocator);
  std::optional<Result<ReplayResult>> res;
  {
    py::gil_scoped_release release;
    res.emplace(ReplayTraceThrough(t.trace, use.resource(), alignment));
  }
  if (!html.empty()) throw py::value_error("html= needs an allocator name, not an object");
  return ReplayDict(Take(std::move(*res), false));
}

// replay() of a named allocator, as the CLI's replay runs it; html: its map.
py::dict ReplayByName(const PyTrace& t, ReplayAllocator which, const ReplayParams& params, const std::string& html) {
  std::optional<Result<ReplayResult>> res;
  std::optional<Result<ReplayPlacement>> placement;
  {
    py::gil_scoped_release release;
    res.emplace(ReplayTrace(t.trace, which, params));
    if (res->ok() && !html.empty()) placement.emplace(ReplayPlacements(t.trace, which, params));
  }
  py::dict d = ReplayDict(Take(std::move(*res), false));
  if (placement) {
    const ReplayPlacement pl = Take(std::move(*placement), false);
    WriteTo(html, [&](std::ostream& f) { return WriteReplayHtmlMap(f, t.trace, pl); });
  }
  return d;
}

// _replay: one allocator (a name or an Allocator object) over a trace (a
// Trace or a path); the package's replay() runs several in turn.
py::dict Replay(const py::object& trace_obj, const py::object& allocator, std::uint64_t repetitions,
                std::uint64_t alignment, bool isolate, bool write_pages, const std::string& html,
                std::uint64_t warm_passes) {
  CheckPath(html);
  Check(CheckReplayPasses(repetitions, warm_passes), false);
  std::shared_ptr<PyTrace> t = TraceOf(trace_obj);
  if (py::isinstance<PyAllocator>(allocator)) {
    if (std::cmp_not_equal(warm_passes, defaults::kReplayWarmPasses))
      throw py::value_error("replay: warm_passes needs an allocator name, not an object");
    return ReplayThroughObject(*t, allocator.cast<PyAllocator&>(), alignment, html);
  }
  const ReplayAllocator which = Take(ParseReplayAllocator(std::string(py::str(allocator))));
  ReplayParams params;
  params.repetitions = static_cast<int>(repetitions);
  params.alignment = alignment;
  params.isolate = isolate;
  params.write_pages = write_pages;
  params.warm_passes = static_cast<int>(warm_passes);
  return ReplayByName(*t, which, params, html);
}

void BindReplay(py::module_& m) {
  py::class_<PyTrace, std::shared_ptr<PyTrace>>(m, "Trace", "An allocation trace (RAPIDS replay-log CSV)")
      .def("__len__", [](const PyTrace& t) { return t.trace.events.size(); })
      .def_property_readonly("source", [](const PyTrace& t) { return t.trace.source; })
      .def_property_readonly("num_allocations", [](const PyTrace& t) { return t.trace.num_allocations; })
      .def_property_readonly("num_frees", [](const PyTrace& t) { return t.trace.num_frees; })
      .def_property_readonly("num_never_freed", [](const PyTrace& t) { return t.trace.num_never_freed; })
      .def("to_problem", [](const PyTrace& t) {
        auto p = std::make_shared<PyProblem>();
        p->problem = TraceToProblem(t.trace);
        p->source = t.trace.source;
        return p;
      })
      .def("__repr__", [](const PyTrace& t) {
        return "<tensormem.Trace " + t.trace.source + ": " + std::to_string(t.trace.events.size()) + " events>";
      });
  m.def("load_trace", &LoadAnyTrace, py::arg("path"));
  m.def("replay_allocators", [] { return ReplayAllocatorNames(false); });
  m.def("_malloc_peers", [] { return ReplayAllocatorNames(true); });
  // Why an allocator of replay_allocators() cannot run in this process (a
  // malloc peer not installed, or needing static TLS); "" when it can.
  m.def("_replay_unavailable", [](const std::string& name) {
    const ReplayAllocator a = Take(ParseReplayAllocator(name));
    if (!IsMallocPeer(a)) return std::string();
    const Status available = MallocPeerAvailable(a);
    return available.ok() ? std::string() : available.message();
  });
  m.def("_replay", &Replay, py::arg("trace"), py::arg("allocator"), py::arg("repetitions"), py::arg("alignment"),
        py::arg("isolate"), py::arg("write_pages"), py::arg("html"), py::arg("warm_passes"));
}

}  // namespace

PYBIND11_MODULE(_tensormem, m) {
  m.doc() = "tensormem: tensor memory planning and allocators (C++ core)";
  static py::exception<TensormemError> error(m, "TensormemError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TensormemError& e) {
      error(e.what());
    }
  });
  m.attr("HAVE_ONNX") = bool(TENSORMEM_PY_HAVE_ONNX);
  m.attr("__version__") = TENSORMEM_VERSION_STRING;
  SetInputInterruptCheck(&PythonSignalRaised);
  m.attr("HAVE_VMM") = true;  // always built since the vmm allocator landed; kept for callers that check it
  BindDefaults(m);
  BindProblem(m);
  py::class_<PyPlan> plan = BindPlan(m);
  BindPlanWriters(plan);
  BindPlanning(m);
  BindFiles(m);
  BindSolve(m);
  BindAllocatorClass(m);
  BindAllocatorFactories(m);
  BindReplay(m);
}
