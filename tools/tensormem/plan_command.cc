// SPDX-License-Identifier: Apache-2.0
// tensormem plan INPUT [--strategy NAME|all] [--objects] [--align N]
//                      [--out PLAN.csv] [--json] [--svg MAP.svg] [--html MAP.html]
//                      [--dim NAME=V] [--input-shape NAME=AxBxC] [--data-input NAME]
//                      [--time-limit S] [--threads N] [--reference]
//
// Plans offsets (default) or shared objects for a CSV/JSON problem and prints
// one row per strategy: total, lower bound, ratio, milliseconds (offsets
// best adds what its exact polish spent: a line below the table, fields in
// the JSON row). An ONNX
// model is imported and its scratch arena planned by the graph planner (ids
// are tensor names); the persistent arena, the naive total and the saving
// are reported too. Every option is checked before the input is read.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "core/parse_name.h"
#include "graph_input.h"
#include "tensormem/tensormem.h"

namespace tensormem::cli {
namespace {

struct PlanOptions {
  std::string input;
  std::string strategy = "best";
  bool objects = false;
  std::uint64_t align = 0;  // 0 = the default (tensormem/defaults.h): the plan's for problems, tensors' for models
  std::string out;
  bool json = false;
  std::string svg;
  std::string html;
  double time_limit = defaults::kTimeLimitSeconds;
  unsigned threads = 1;
  bool reference = false;
  GraphInputOptions graph;
};

struct Row {
  std::string strategy;
  std::uint64_t total = 0;
  std::uint64_t lower_bound = 0;
  double ms = 0;
  std::optional<OffsetsPlan::Polish> polish;  // offsets best's exact polish, when it ran
  double polish_limit_seconds = 0;            // PolishTimeLimit of the row's parameters
};

// One strategy's plan, objects or offsets alike: its row, the offsets the
// maps draw (for objects, the objects laid back to back) and, for objects,
// the plan --out writes.
struct Planned {
  Row row;
  OffsetsPlan offsets;
  std::optional<ObjectsPlan> objects;
  std::optional<GraphPlan> graph;  // a model's: its order may be the strategy's (--order joint)
};

// What is planned: a problem file, or a model's scratch arena.
struct Input {
  Problem file_problem;
  std::optional<GraphInput> graph;
  std::vector<UsageRecord> records;  // --objects: the problem's records
  double read_seconds = 0;
  const Problem& problem() const { return graph ? graph->plan.scratch : file_problem; }
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What to do about a time limit that was too short.
Status Hint(const Status& st, double read_seconds) {
  if (st.code() != StatusCode::kDeadlineExceeded) return st;
  return {st.code(), st.message() + " (allow more with --time-limit SECONDS; reading the input, " +
                         FormatDouble(read_seconds, 1) + " s, is not counted)"};
}

// The strategies --strategy names in the mode asked for ('all': every one,
// in the library's order). A name of the other mode's table says so.
Result<std::vector<std::string>> StrategyNames(const PlanOptions& o) {
  auto names = [](auto all) {
    std::vector<std::string> out;
    for (auto s : all) out.emplace_back(Name(s));
    return out;
  };
  const std::vector<std::string> mode = o.objects ? names(AllObjectsStrategies()) : names(AllOffsetsStrategies());
  const std::vector<std::string> other = o.objects ? names(AllOffsetsStrategies()) : names(AllObjectsStrategies());
  if (o.strategy == "all") return mode;
  if (std::find(mode.begin(), mode.end(), o.strategy) != mode.end()) return std::vector<std::string>{o.strategy};
  if (std::find(other.begin(), other.end(), o.strategy) != other.end())
    return InvalidArgument("--strategy " + o.strategy + " plans " + (o.objects ? "offsets" : "shared objects (--objects)") +
                           "; " + (o.objects ? "shared objects" : "offsets") + " strategies: " +
                           (o.objects ? internal::JoinNames(AllObjectsStrategies()) : internal::JoinNames(AllOffsetsStrategies())));
  return o.objects ? ParseObjectsStrategy(o.strategy).status() : ParseOffsetsStrategy(o.strategy).status();
}

// The strategies of the mode asked for (the library's order) that read
// --threads or --reference (PlanParams::threads, ::reference), themselves or
// through the strategies they run: --threads, offsets best alone (its
// candidates on threads); --reference, every strategy with a reference path
// and those that run one (offsets best's candidates, from_objects' objects
// plan, objects best and greedy_best), not naive, arena, exact (the solver
// has its own heuristics) or equality (one path serves both).
std::vector<std::string> StrategiesReading(std::string_view flag, bool objects) {
  std::vector<std::string> out;
  auto keep = [&](auto all, auto reads) {
    for (auto s : all)
      if (reads(s)) out.emplace_back(Name(s));
  };
  if (flag == "--threads") {
    if (!objects) keep(AllOffsetsStrategies(), [](OffsetsStrategy s) { return s == OffsetsStrategy::kBest; });
  } else if (objects) {
    keep(AllObjectsStrategies(),
         [](ObjectsStrategy s) { return s != ObjectsStrategy::kNaive && s != ObjectsStrategy::kEquality; });
  } else {
    keep(AllOffsetsStrategies(), [](OffsetsStrategy s) {
      return s != OffsetsStrategy::kNaive && s != OffsetsStrategy::kArena && s != OffsetsStrategy::kExact;
    });
  }
  return out;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// `flag`, when given, must change at least one of the strategies asked for.
Status CheckStrategiesRead(std::string_view flag, bool given, bool objects, const std::vector<std::string>& chosen) {
  if (!given) return Status::Ok();
  const std::vector<std::string> readers = StrategiesReading(flag, objects);
  for (const std::string& s : chosen)
    if (std::find(readers.begin(), readers.end(), s) != readers.end()) return Status::Ok();
  const std::string mode = objects ? "shared-objects (--objects)" : "offsets";
  if (readers.empty()) return NotApplicable(flag, "changes no " + mode + " strategy");
  return NotApplicable(flag, "changes only the " + mode + (readers.size() == 1 ? " strategy " : " strategies ") +
                                 Joined(readers) + "; not " + Joined(chosen));
}

// Options that cannot apply to what was asked, and outputs onto the input:
// refused before any work, so that nothing is printed for a refused run.
Status CheckOptions(const PlanOptions& o, bool model, const std::vector<std::string>& strategies) {
  for (const std::string* out : {&o.out, &o.svg, &o.html}) TM_RETURN_IF_ERROR(CheckNotAnInput(*out, {o.input}));
  TM_RETURN_IF_ERROR(CheckDistinctOutputs({{"--out", o.out}, {"--svg", o.svg}, {"--html", o.html}}));
  // Shared objects have no offsets: an alignment would be ignored, silently.
  if (o.objects && o.align > 1)
    return InvalidArgument("--align applies to offsets plans; shared objects (--objects) have no offsets to align");
  if (o.objects && model)
    return InvalidArgument("--objects plans problem files; an ONNX model is planned as arenas");
  if (!model && (!o.graph.dims.empty() || !o.graph.input_shapes.empty() || !o.graph.data_inputs.empty()))
    return InvalidArgument("--dim, --input-shape and --data-input shape the import of an ONNX model; " +
                           InputName(o.input) + " is a problem file");
  if (!model && o.graph.order != "given")
    return InvalidArgument("--order chooses the node order of an ONNX model; " + InputName(o.input) +
                           " is a problem file");
  TM_RETURN_IF_ERROR(CheckStrategiesRead("--threads", o.threads != 1, o.objects, strategies));
  return CheckStrategiesRead("--reference", o.reference, o.objects, strategies);
}

Result<Input> ReadInput(const PlanOptions& o, bool model) {
  const auto start = std::chrono::steady_clock::now();
  Input in;
  if (model) {
    GraphInputOptions g = o.graph;
    // --time-limit 0 (heuristics untimed, no search) holds for the order too.
    g.order_time_limit = o.time_limit > 0 ? o.time_limit : 1e-9;
    TM_ASSIGN_OR_RETURN(in.graph, LoadGraphInput(o.input, g, o.align ? o.align : defaults::kTensorAlignment));
    in.read_seconds = in.graph->import_seconds;
    return in;
  }
  TM_ASSIGN_OR_RETURN(in.file_problem, LoadProblem(o.input));
  if (o.objects) in.records = ToRecords(in.file_problem);
  in.read_seconds = SecondsSince(start);
  return in;
}

Result<Planned> PlanOne(const PlanOptions& o, const Input& in, const std::string& strategy, const PlanParams& params) {
  Planned p;
  if (o.objects) {
    TM_ASSIGN_OR_RETURN(ObjectsStrategy s, ParseObjectsStrategy(strategy));
    TM_ASSIGN_OR_RETURN(ObjectsPlan plan, PlanObjects(in.records, s, params));
    TM_ASSIGN_OR_RETURN(p.offsets, ObjectsToOffsets(plan, 1));
    p.row = {plan.strategy, TotalSize(plan), plan.lower_bound, plan.seconds * 1e3};
    p.objects = std::move(plan);
    return p;
  }
  TM_ASSIGN_OR_RETURN(OffsetsStrategy s, ParseOffsetsStrategy(strategy));
  if (in.graph) {
    TM_ASSIGN_OR_RETURN(p.graph, PlanScratchArena(*in.graph, s, params));
    p.offsets = p.graph->scratch_plan;
  } else {
    TM_ASSIGN_OR_RETURN(p.offsets, PlanOffsets(in.problem(), s, params));
  }
  p.row = {p.offsets.strategy, p.offsets.total, p.offsets.lower_bound, p.offsets.seconds * 1e3, p.offsets.polish,
           PolishTimeLimit(params)};
  return p;
}

// Every strategy in turn, a row each; the smallest plan. With 'all' the
// strategies share the one time limit: each gets what is left, in the
// library's order (cheapest first, so that one slow strategy cannot keep
// the fast ones from running), and once nothing is left the rest are not
// run, with a note saying why; one strategy's failure other than bad input
// (naive overflowing 64 bits) does not sink the others.
Result<Planned> PlanEach(const PlanOptions& o, const Input& in, const std::vector<std::string>& strategies,
                         PlanParams params, std::vector<Row>& rows) {
  const auto planning_start = std::chrono::steady_clock::now();
  std::optional<Planned> best;
  for (const std::string& s : strategies) {
    if (o.time_limit > 0 && o.time_limit < 1e9) {
      const double left = o.time_limit - SecondsSince(planning_start);
      // One strategy alone runs anyway and reports its own deadline.
      if (left <= 0 && strategies.size() > 1) {
        std::cerr << "tensormem: note: " << s << ": not run: nothing was left of --time-limit " << o.time_limit
                  << " s, which covers every strategy together\n";
        continue;
      }
      params.time_limit_seconds = std::max(left, 1e-9);
    }
    Result<Planned> plan = PlanOne(o, in, s, params);
    if (!plan.ok()) {
      const Status st = plan.status().WithContext(s);
      if (strategies.size() > 1 && st.code() != StatusCode::kInvalidArgument) {
        std::cerr << "tensormem: note: " << st.message() << '\n';
        continue;
      }
      return Hint(st, in.read_seconds);
    }
    rows.push_back(plan->row);
    if (!best || plan->row.total < best->row.total) best = std::move(*plan);
  }
  if (!best) return OutOfRange("no strategy could plan the input");
  return std::move(*best);
}

// --out, --svg and --html of the smallest plan. Never the input itself;
// atomically renamed into place; "-" = stdout.
Status WriteOutputs(const PlanOptions& o, const Problem& problem, const Planned& best) {
  if (!o.out.empty())
    TM_RETURN_IF_ERROR(WriteOutput(o.out, {o.input}, [&](std::ostream& f) {
      return best.objects ? WriteObjectsCsv(f, problem, *best.objects) : WriteProblemCsv(f, problem, &best.offsets);
    }));
  const std::string title = InputName(o.input) + " \u2014 " +
                            (best.objects ? "objects " + best.row.strategy + " laid back to back" : best.row.strategy);
  // Objects laid back to back have no offsets bound to draw.
  const std::optional<std::uint64_t> bound =
      best.objects ? std::nullopt : std::optional<std::uint64_t>(best.offsets.lower_bound);
  if (!o.svg.empty()) {
    SvgOptions so;
    so.title = title;
    if (bound) so.lower_bound = *bound;
    TM_RETURN_IF_ERROR(WriteOutput(o.svg, {o.input}, [&](std::ostream& f) { return WriteSvg(f, problem, best.offsets, so); }));
  }
  if (!o.html.empty()) {
    HtmlMapOptions ho;
    ho.title = title;
    if (bound) ho.lower_bound = *bound;
    TM_RETURN_IF_ERROR(
        WriteOutput(o.html, {o.input}, [&](std::ostream& f) { return WriteHtmlMap(f, problem, best.offsets, ho); }));
  }
  return Status::Ok();
}

nlohmann::json OrderJson(const Schedule& s) {
  // --order given computes no bound: null rather than a bound of 0.
  const nlohmann::json bound = s.lower_bound ? nlohmann::json(*s.lower_bound) : nlohmann::json(nullptr);
  nlohmann::json j = {{"method", s.method}, {"peak", s.peak}, {"given_peak", s.given_peak},
                      {"lower_bound", bound}, {"proved_optimal", s.proved_optimal},
                      {"states", s.states}, {"ms", s.seconds * 1e3}};
  if (s.candidates.empty()) return j;
  nlohmann::json candidates = nlohmann::json::array();
  for (const OrderCandidate& c : s.candidates)
    candidates.push_back({{"method", c.method}, {"peak", c.peak},
                          {"arena", c.placed ? nlohmann::json(c.arena) : nlohmann::json(nullptr)}});
  j["candidates"] = std::move(candidates);
  return j;
}

void PrintOrder(const Schedule& s) {
  std::cout << "order: " << s.method << ", peak of live bytes " << WithThousands(s.peak) << " (given order "
            << WithThousands(s.given_peak) << "; "
            << (s.proved_optimal ? "proved optimal" : "lower bound " + WithThousands(s.lower_bound.value_or(0)))
            << "), chosen in " << FormatDouble(s.seconds * 1e3, 1) << " ms\n";
  if (s.candidates.empty()) return;
  // --order joint: every order compared, with the smallest plan's strategy.
  Table t({"order", "peak", "arena"});
  for (const OrderCandidate& c : s.candidates)
    t.AddRow({c.method + (c.method == s.method ? " *" : ""), WithThousands(c.peak),
              c.placed ? WithThousands(c.arena) : "out of time"});
  std::cout << t.ToString();
}

void PrintJson(const PlanOptions& o, const Input& in, std::uint64_t lower_bound, std::uint64_t alignment,
               const std::vector<Row>& rows, std::uint64_t smallest) {
  nlohmann::json j = {{"input", o.input},
                      {"mode", o.objects ? "objects" : "offsets"},
                      {"buffers", in.problem().buffers.size()},
                      {"lower_bound", lower_bound},
                      {"alignment", alignment},
                      {"read_ms", in.read_seconds * 1e3}};
  if (const GraphInput* graph = in.graph ? &*in.graph : nullptr)
    j["graph"] = {{"tensors", graph->graph.tensors.size()},
                  {"nodes", graph->graph.nodes.size()},
                  {"file_nodes", graph->file_nodes},
                  {"folded_nodes", graph->folded_nodes},
                  {"in_place_shared", graph->plan.liveness.in_place_shared},
                  {"import_ms", graph->import_seconds * 1e3},
                  {"persistent_bytes", graph->plan.persistent_bytes},
                  {"naive_scratch_bytes", graph->plan.naive_scratch_bytes},
                  {"saving", 1.0 - static_cast<double>(smallest) /
                                       static_cast<double>(std::max<std::uint64_t>(graph->plan.naive_scratch_bytes, 1))},
                  {"order", OrderJson(graph->plan.schedule)}};
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json row = {{"strategy", r.strategy},
                          {"total", r.total},
                          {"lower_bound", r.lower_bound},
                          {"ratio", Ratio(r.total, r.lower_bound)},
                          {"ms", r.ms}};
    if (r.polish) {
      row["polish_ms"] = r.polish->seconds * 1e3;
      row["polish_nodes"] = r.polish->nodes;
    }
    results.push_back(std::move(row));
  }
  j["results"] = results;
  std::cout << DumpJson(j, 1) << '\n';
}

void PrintTable(const PlanOptions& o, const Input& in, std::uint64_t lower_bound, const std::vector<Row>& rows,
                std::uint64_t smallest) {
  const GraphInput* graph = in.graph ? &*in.graph : nullptr;
  if (graph)
    std::cout << o.input << ": " << graph->graph.nodes.size() << " nodes (" << graph->folded_nodes
              << " shape nodes folded), " << graph->graph.tensors.size() << " tensors, imported in "
              << FormatDouble(graph->import_seconds * 1e3, 1) << " ms; scratch arena (alignment "
              << graph->params.alignment << "):\n";
  if (graph && graph->params.schedule.order != OrderStrategy::kGiven) PrintOrder(graph->plan.schedule);
  std::cout << InputName(o.input) << ": " << in.problem().buffers.size() << " buffers";
  // Reading is not planning: the time limit covers only the strategies.
  if (!graph) std::cout << " read in " << FormatDouble(in.read_seconds * 1e3, 0) << " ms";
  std::cout << ", " << (o.objects ? "shared objects" : "offsets") << ", lower bound " << WithThousands(lower_bound)
            << (o.objects ? " (sum of positional maximums)" : " (peak live bytes)") << '\n';
  Table t({"strategy", "total", "lower_bound", "ratio", "ms"});
  for (const Row& r : rows)
    t.AddRow({r.strategy, WithThousands(r.total), WithThousands(r.lower_bound),
              FormatDouble(Ratio(r.total, r.lower_bound), 3), FormatDouble(r.ms, 2)});
  std::cout << t.ToString();
  for (const Row& r : rows)
    if (r.polish)
      std::cout << r.strategy << ": exact polish " << WithThousands(r.polish->nodes) << " nodes in "
                << FormatDouble(r.polish->seconds * 1e3, 1) << " ms of its ms, within " << WithThousands(defaults::kPolishNodes)
                << " nodes and " << FormatDouble(r.polish_limit_seconds, 2) << " s ("
                << FormatDouble(100 * defaults::kPolishTimeShare, 0) << " % of --time-limit, at most "
                << FormatDouble(defaults::kPolishSeconds, 0) << " s)\n";
  if (!graph) return;
  // The naive strategy's arena (in-place chains shared as in every plan),
  // so that it matches a naive row above.
  const std::uint64_t naive = graph->plan.naive_scratch_bytes;
  std::cout << "persistent arena (constants, variables): " << WithThousands(graph->plan.persistent_bytes)
            << " bytes\n"
            << "scratch without reuse (naive): " << WithThousands(naive) << " bytes; smallest plan "
            << WithThousands(smallest) << " bytes, saving "
            << FormatDouble(naive ? 100.0 * (1.0 - static_cast<double>(smallest) / static_cast<double>(naive)) : 0.0, 1)
            << "%\n";
}

int RunPlan(const PlanOptions& o) {
  const bool model = IsGraphInput(o.input);
  Result<std::vector<std::string>> strategies = StrategyNames(o);
  if (!strategies.ok()) return ReportError(strategies.status());
  if (Status st = CheckOptions(o, model, *strategies); !st.ok()) return ReportError(st);
  Result<Input> in = ReadInput(o, model);
  if (!in.ok()) return ReportError(in.status());
  PlanParams params;
  // A model's buffers carry their tensors' alignment.
  params.alignment = model || o.align == 0 ? defaults::kPlanAlignment : o.align;
  params.time_limit_seconds = o.time_limit;
  params.reference = o.reference;
  params.threads = o.threads;
  std::vector<Row> rows;
  Result<Planned> best = PlanEach(o, *in, *strategies, params, rows);
  if (!best.ok()) return ReportError(best.status());
  // What is reported and written is the smallest plan's: its order, its problem.
  if (best->graph) in->graph->plan = std::move(*best->graph);
  // Objects: the records' bound, on every plan; offsets: the peak live bytes.
  const std::uint64_t lower_bound =
      best->objects ? best->objects->lower_bound : PeakLiveBytes(in->problem(), params.alignment);
  if (o.json)
    PrintJson(o, *in, lower_bound, in->graph ? in->graph->params.alignment : params.alignment, rows, best->row.total);
  else
    PrintTable(o, *in, lower_bound, rows, best->row.total);
  if (Status st = WriteOutputs(o, in->problem(), *best); !st.ok()) return ReportError(st);
  return kExitOk;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plan an arena (offsets) or shared objects for a problem file and report each "
              "plan against its lower bound");
  cmd->add_option("INPUT", o->input,
                  "problem: MiniMalloc CSV or JSON, an allocation trace, or an ONNX model; "
                  "gzip-compressed or not; '-' = standard input (not for ONNX)")
      ->required();
  cmd->add_option("--strategy,-s", o->strategy,
                  "offsets: " + internal::JoinNames(AllOffsetsStrategies()) + "; shared objects (--objects): " +
                      internal::JoinNames(AllObjectsStrategies()) + "; or all")
      ->capture_default_str();
  cmd->add_flag("--objects", o->objects, "plan shared objects instead of offsets");
  cmd->add_option("--align", o->align,
                  "offset alignment in bytes; on an ONNX model, its tensors' (default: " +
                      std::to_string(defaults::kPlanAlignment) + " for problem files, " +
                      std::to_string(defaults::kTensorAlignment) + " for ONNX models)")
      ->check(PowerOfTwoAlign());
  cmd->add_option("--out,-o", o->out,
                  "write the plan: the input's CSV with an offset (or object) column; with "
                  "'all', the smallest plan");
  cmd->add_flag("--json", o->json, "print the results as JSON");
  cmd->add_option("--svg", o->svg, "write a memory map (x = task, y = address)");
  cmd->add_option("--html", o->html,
                  "write an interactive memory map (one self-contained HTML file: zoom, pan, hover)");
  cmd->add_option("--time-limit,-t", o->time_limit,
                  "seconds for the whole planning, every strategy (reading the input is not "
                  "counted); a strategy that cannot finish fails, best keeps the candidates that "
                  "did, and with 'all' the strategies that find none of it left are not run; 0: "
                  "heuristics untimed, exact and best's polish do no search. best's exact polish takes at most " +
                      FormatDouble(100 * defaults::kPolishTimeShare, 0) + " % of it (" +
                      FormatDouble(defaults::kPolishSeconds, 0) + " s at most)")
      ->capture_default_str()
      ->check(Seconds());
  cmd->add_option("--threads", o->threads,
                  "offsets best: its candidate strategies run on this many threads (0: one per "
                  "hardware thread); the same plan as with 1, sooner, unless --time-limit passes; "
                  "refused with strategies it does not change")
      ->capture_default_str()
      ->check(CLI::Range(0u, kMaxPlanThreads));
  cmd->add_flag("--reference", o->reference,
                "use the faithful quadratic transcriptions of the peers' algorithms (refused with "
                "strategies that have none and run none: naive, arena, exact, equality)");
  AddGraphInputOptions(cmd, &o->graph);
  cmd->callback([o, exit_code] { *exit_code = RunPlan(*o); });
}

}  // namespace tensormem::cli
