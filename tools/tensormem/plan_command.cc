// tensormem plan INPUT [--strategy NAME|all] [--objects] [--align N]
//                      [--out PLAN.csv] [--json] [--svg MAP.svg] [--html MAP.html]
//                      [--dim NAME=V] [--input-shape NAME=AxBxC] [--data-input NAME]
//                      [--time-limit S] [--threads N] [--reference]
//
// Plans offsets (default) or shared objects for a CSV/JSON problem and prints
// one row per strategy: total, lower bound, ratio, milliseconds. An ONNX
// model is imported and its scratch arena planned by the graph planner (ids
// are tensor names); the persistent arena, the naive total and the saving
// are reported too.
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
#include "graph_input.h"
#include "tensormem/tensormem.h"

namespace tensormem::cli {
namespace {

struct PlanOptions {
  std::string input;
  std::string strategy = "best";
  bool objects = false;
  std::uint64_t align = 0;  // 0 = the default: 1 for problem files, 64 for ONNX models
  std::string out;
  bool json = false;
  std::string svg;
  std::string html;
  double time_limit = 10.0;
  unsigned threads = 1;
  bool reference = false;
  GraphInputOptions graph;
};

struct Row {
  std::string strategy;
  std::uint64_t total = 0;
  std::uint64_t lower_bound = 0;
  double ms = 0;
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

// Never the input itself; atomically renamed into place; "-" = stdout.
Status WriteFile(const PlanOptions& o, const std::string& path,
                 const std::function<Status(std::ostream&)>& write) {
  return WriteOutput(path, {o.input}, write);
}

nlohmann::json OrderJson(const Schedule& s) {
  return {{"method", s.method}, {"peak", s.peak}, {"given_peak", s.given_peak},
          {"lower_bound", s.lower_bound}, {"proved_optimal", s.proved_optimal},
          {"states", s.states}, {"ms", s.seconds * 1e3}};
}

void PrintOrder(const Schedule& s) {
  std::cout << "order: " << s.method << ", peak of live bytes " << WithThousands(s.peak) << " (given order "
            << WithThousands(s.given_peak) << "; " << (s.proved_optimal ? "proved optimal" : "lower bound " + WithThousands(s.lower_bound))
            << "), chosen in " << FormatDouble(s.seconds * 1e3, 1) << " ms\n";
}

void Print(const PlanOptions& o, const Problem& problem, std::uint64_t lower_bound,
           const std::vector<Row>& rows, double read_seconds, const GraphInput* graph = nullptr) {
  std::uint64_t smallest = UINT64_MAX;
  for (const Row& r : rows) smallest = std::min(smallest, r.total);
  if (o.json) {
    nlohmann::json j = {{"input", o.input},
                        {"mode", o.objects ? "objects" : "offsets"},
                        {"buffers", problem.buffers.size()},
                        {"lower_bound", lower_bound},
                        {"alignment", graph ? graph->params.alignment : std::max<std::uint64_t>(o.align, 1)},
                        {"read_ms", read_seconds * 1e3}};
    if (graph)
      j["graph"] = {{"tensors", graph->graph.tensors.size()},
                    {"nodes", graph->graph.nodes.size()},
                    {"file_nodes", graph->file_nodes},
                    {"folded_nodes", graph->folded_nodes},
                    {"in_place_shared", graph->plan.liveness.in_place_shared},
                    {"import_ms", graph->import_seconds * 1e3},
                    {"persistent_bytes", graph->plan.persistent_bytes},
                    {"naive_scratch_bytes", graph->plan.naive_scratch_bytes},
                    {"saving", 1.0 - static_cast<double>(smallest) /
                                         static_cast<double>(std::max<std::uint64_t>(graph->plan.naive_scratch_bytes, 1))}};
    if (graph) j["graph"]["order"] = OrderJson(graph->plan.schedule);
    nlohmann::json results = nlohmann::json::array();
    for (const Row& r : rows)
      results.push_back({{"strategy", r.strategy},
                         {"total", r.total},
                         {"lower_bound", r.lower_bound},
                         {"ratio", Ratio(r.total, r.lower_bound)},
                         {"ms", r.ms}});
    j["results"] = results;
    std::cout << DumpJson(j, 1) << '\n';
    return;
  }
  if (graph)
    std::cout << o.input << ": " << graph->graph.nodes.size() << " nodes ("
              << graph->folded_nodes << " shape nodes folded), " << graph->graph.tensors.size()
              << " tensors, imported in " << FormatDouble(graph->import_seconds * 1e3, 1)
              << " ms; scratch arena (alignment " << graph->params.alignment << "):\n";
  if (graph && graph->params.schedule.order != OrderStrategy::kGiven) PrintOrder(graph->plan.schedule);
  std::cout << InputName(o.input) << ": " << problem.buffers.size() << " buffers";
  // Reading is not planning: the time limit covers only the strategies.
  if (!graph) std::cout << " read in " << FormatDouble(read_seconds * 1e3, 0) << " ms";
  std::cout << ", " << (o.objects ? "shared objects" : "offsets") << ", lower bound "
            << WithThousands(lower_bound)
            << (o.objects ? " (sum of positional maximums)" : " (peak live bytes)") << '\n';
  Table t({"strategy", "total", "lower_bound", "ratio", "ms"});
  for (const Row& r : rows)
    t.AddRow({r.strategy, WithThousands(r.total), WithThousands(r.lower_bound),
              FormatDouble(Ratio(r.total, r.lower_bound), 3), FormatDouble(r.ms, 2)});
  std::cout << t.ToString();
  if (graph) {
    const std::uint64_t naive = graph->plan.naive_scratch_bytes;
    std::cout << "persistent arena (constants, variables): "
              << WithThousands(graph->plan.persistent_bytes) << " bytes\n"
              << "scratch without reuse (naive total): " << WithThousands(naive)
              << " bytes; smallest plan " << WithThousands(smallest) << " bytes, saving "
              << FormatDouble(naive ? 100.0 * (1.0 - static_cast<double>(smallest) / static_cast<double>(naive)) : 0.0, 1)
              << "%\n";
  }
}

int RunPlan(const PlanOptions& o) {
  for (const std::string* out : {&o.out, &o.svg})
    if (Status st = CheckNotAnInput(*out, {o.input}); !st.ok()) return ReportError(st);
  // Shared objects have no offsets: an alignment would be ignored, silently.
  if (o.objects && o.align > 1)
    return ReportError(InvalidArgument("--align applies to offsets plans; shared objects (--objects) have no "
                                       "offsets to align"));
  const auto start = std::chrono::steady_clock::now();
  std::optional<GraphInput> graph;
  Result<Problem> loaded = Problem{};
  if (IsGraphInput(o.input)) {
    if (o.objects)
      return ReportError(InvalidArgument("--objects plans problem files; an ONNX model is planned "
                                         "as arenas"));
    Result<GraphInput> g = LoadGraphInput(o.input, o.graph, o.align ? o.align : 64);
    if (!g.ok()) return ReportError(g.status());
    graph = std::move(*g);
  } else {
    loaded = LoadProblem(o.input);
    if (!loaded.ok()) return ReportError(loaded.status());
  }
  const double read_seconds = graph ? graph->import_seconds : SecondsSince(start);
  const Problem& problem = graph ? graph->plan.scratch : *loaded;
  PlanParams params;
  params.alignment = graph ? 1 : std::max<std::uint64_t>(o.align, 1);  // graph buffers carry theirs
  params.time_limit_seconds = o.time_limit;
  params.reference = o.reference;
  params.threads = o.threads;
  std::vector<Row> rows;
  // With 'all' the strategies share the one time limit: each gets what is
  // left, in the library's order (cheapest first, so that one slow strategy
  // cannot keep the fast ones from running), and once nothing is left the
  // rest are not run, with a note saying why (rather than each running with
  // a nominal 1e-9 s and failing).
  const auto planning_start = std::chrono::steady_clock::now();
  auto share_time = [&](std::string_view strategy) {
    if (o.time_limit > 0 && o.time_limit < 1e9) {
      const double left = o.time_limit - SecondsSince(planning_start);
      // One strategy alone runs anyway and reports its own deadline.
      if (left <= 0 && o.strategy == "all") {
        std::cerr << "tensormem: note: " << strategy << ": not run: nothing was left of --time-limit "
                  << o.time_limit << " s, which covers every strategy together\n";
        return false;
      }
      params.time_limit_seconds = std::max(left, 1e-9);
    }
    return true;
  };

  if (o.objects) {
    std::vector<ObjectsStrategy> strategies;
    if (o.strategy == "all") {
      strategies.assign(AllObjectsStrategies().begin(), AllObjectsStrategies().end());
    } else {
      Result<ObjectsStrategy> s = ParseObjectsStrategy(o.strategy);
      if (!s.ok()) return ReportError(s.status());
      strategies.push_back(*s);
    }
    const std::vector<UsageRecord> records = ToRecords(problem);
    std::optional<ObjectsPlan> best;
    for (ObjectsStrategy s : strategies) {
      if (!share_time(Name(s))) continue;
      Result<ObjectsPlan> plan = PlanObjects(records, s, params);
      if (!plan.ok()) {
        // With 'all', one strategy's failure (naive overflowing 64 bits)
        // does not sink the others.
        if (strategies.size() > 1 && plan.status().code() != StatusCode::kInvalidArgument) {
          std::cerr << "tensormem: note: " << plan.status().WithContext(std::string(Name(s))).message() << '\n';
          continue;
        }
        return ReportError(Hint(plan.status().WithContext(std::string(Name(s))), read_seconds));
      }
      rows.push_back({plan->strategy, TotalSize(*plan), plan->lower_bound, plan->seconds * 1e3});
      if (!best || TotalSize(*plan) < TotalSize(*best)) best = std::move(*plan);
    }
    if (!best) return ReportError(OutOfRange("no strategy could plan the input"));
    Print(o, problem, best->lower_bound, rows, read_seconds);  // the records' bound, on every plan
    if (!o.out.empty()) {
      Status st = WriteFile(o, o.out, [&](std::ostream& f) { return WriteObjectsCsv(f, problem, *best); });
      if (!st.ok()) return ReportError(st);
    }
    if (!o.svg.empty() || !o.html.empty()) {
      // Both maps draw the objects laid back to back: lay them out once.
      Result<OffsetsPlan> laid = ObjectsToOffsets(*best, 1);
      if (!laid.ok()) return ReportError(laid.status());
      const std::string title = InputName(o.input) + " \u2014 objects " + best->strategy + " laid back to back";
      if (!o.svg.empty()) {
        SvgOptions so;
        so.title = title;
        Status st = WriteFile(o, o.svg, [&](std::ostream& f) { return WriteSvg(f, problem, *laid, so); });
        if (!st.ok()) return ReportError(st);
      }
      if (!o.html.empty()) {
        HtmlMapOptions ho;
        ho.title = title;
        Status st = WriteFile(o, o.html, [&](std::ostream& f) { return WriteHtmlMap(f, problem, *laid, ho); });
        if (!st.ok()) return ReportError(st);
      }
    }
    return kExitOk;
  }

  std::vector<OffsetsStrategy> strategies;
  if (o.strategy == "all") {
    strategies.assign(AllOffsetsStrategies().begin(), AllOffsetsStrategies().end());
  } else {
    Result<OffsetsStrategy> s = ParseOffsetsStrategy(o.strategy);
    if (!s.ok()) return ReportError(s.status());
    strategies.push_back(*s);
  }
  std::optional<OffsetsPlan> best;
  for (OffsetsStrategy s : strategies) {
    if (!share_time(Name(s))) continue;
    Result<OffsetsPlan> plan =
        graph ? PlanScratchArena(*graph, s, params) : PlanOffsets(problem, s, params);
    if (!plan.ok()) {
      if (strategies.size() > 1 && plan.status().code() != StatusCode::kInvalidArgument) {
        std::cerr << "tensormem: note: " << plan.status().WithContext(std::string(Name(s))).message() << '\n';
        continue;
      }
      return ReportError(Hint(plan.status().WithContext(std::string(Name(s))), read_seconds));
    }
    rows.push_back({plan->strategy, plan->total, plan->lower_bound, plan->seconds * 1e3});
    if (!best || plan->total < best->total) best = std::move(*plan);
  }
  if (!best) return ReportError(OutOfRange("no strategy could plan the input"));
  Print(o, problem, PeakLiveBytes(problem, params.alignment), rows, read_seconds,
        graph ? &*graph : nullptr);
  if (!o.out.empty()) {
    Status st = WriteFile(o, o.out, [&](std::ostream& f) { return WriteProblemCsv(f, problem, &*best); });
    if (!st.ok()) return ReportError(st);
  }
  if (!o.svg.empty()) {
    SvgOptions so;
    so.title = InputName(o.input) + " — " + best->strategy;
    so.lower_bound = best->lower_bound;
    Status st = WriteFile(o, o.svg, [&](std::ostream& f) { return WriteSvg(f, problem, *best, so); });
    if (!st.ok()) return ReportError(st);
  }
  if (!o.html.empty()) {
    HtmlMapOptions ho;
    ho.title = InputName(o.input) + " \u2014 " + best->strategy;
    ho.lower_bound = best->lower_bound;
    Status st = WriteFile(o, o.html, [&](std::ostream& f) { return WriteHtmlMap(f, problem, *best, ho); });
    if (!st.ok()) return ReportError(st);
  }
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
  cmd->add_option("--strategy,-s", o->strategy, "strategy name, or 'all'")->capture_default_str();
  cmd->add_flag("--objects", o->objects, "plan shared objects instead of offsets");
  cmd->add_option("--align", o->align,
                  "offset alignment in bytes (default: 1 for problem files, 64 for ONNX models)")
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
                  "heuristics untimed, exact does no search")
      ->capture_default_str()
      ->check(Seconds());
  cmd->add_option("--threads", o->threads,
                  "offsets best: its candidate strategies run on this many threads (0: one per "
                  "hardware thread); the same plan as with 1, sooner, unless --time-limit passes")
      ->capture_default_str()
      ->check(CLI::Range(0u, kMaxPlanThreads));
  cmd->add_flag("--reference", o->reference,
                "use the faithful quadratic transcriptions of the peers' algorithms");
  AddGraphInputOptions(cmd, &o->graph);
  cmd->callback([o, exit_code] { *exit_code = RunPlan(*o); });
}

}  // namespace tensormem::cli
