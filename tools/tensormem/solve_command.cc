// SPDX-License-Identifier: Apache-2.0
// tensormem solve INPUT [--capacity N] [--minimize] [--time-limit SECONDS]
//                       [--nodes N] [--align N] [--out PLAN.csv] [--json]
//                       [--progress] [--iis] [--start PLAN] [--threads N]
//                       [--tuning KEY=VALUE]...
//
// The exact offset solver. With a capacity (option or the input's own) it
// answers "does it fit?" and stops at the first plan that does (--minimize:
// the smallest height within the capacity); without one it minimises the
// arena. Exit codes: 0 a plan (optimal or feasible), 3 proven infeasible,
// 4 unknown (limit reached first), 2 bad input, 1 internal error.
// --start: a plan to start from (a previous answer), checked by the
// validator; the search begins below it. --tuning: a knob of the search
// (SolverTuning, its keys from TuningKeys()), repeatable.
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "graph_input.h"
#include "tensormem/solver_tuning.h"
#include "tensormem/tensormem.h"

namespace tensormem::cli {
namespace {

inline constexpr int kExitInfeasible = 3;
inline constexpr int kExitUnknown = 4;

struct SolveOptions {
  std::string input;
  std::optional<std::uint64_t> capacity;
  bool minimize = false;
  double time_limit = 10.0;
  std::uint64_t nodes = 0;
  std::uint64_t align = 1;
  std::string out;
  bool json = false;
  bool progress = false;
  bool iis = false;
  std::vector<std::string> tuning;  // KEY=VALUE, in order
  std::string start;
  unsigned threads = 1;
};

// The offsets in `path` (LoadOffsets: an id,offset CSV or a problem file
// with offsets, as --out writes) as a plan of `problem`, matched by buffer
// id, checked by the validator. Errors name the option and the file.
Result<OffsetsPlan> ReadStartPlan(const std::string& path, const Problem& problem,
                                  std::uint64_t alignment) {
  const std::string where = "--start " + path;
  auto fail = [&](const Status& st) { return Status(st.code(), where + ": " + st.message()); };
  Result<std::vector<IdOffset>> rows = LoadOffsets(path);
  if (!rows.ok()) return fail(rows.status());
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) index.emplace(problem.buffers[i].id, i);
  std::vector<std::uint64_t> offsets(problem.buffers.size(), 0);
  std::vector<bool> seen(problem.buffers.size(), false);
  for (const IdOffset& row : *rows) {
    const auto it = index.find(row.id);
    if (it == index.end()) return fail(InvalidArgument("buffer '" + row.id + "' is not in the input"));
    if (seen[it->second]) return fail(InvalidArgument("buffer '" + row.id + "' has two offsets"));
    seen[it->second] = true;
    offsets[it->second] = row.offset;
  }
  for (std::size_t i = 0; i < problem.buffers.size(); ++i)
    if (!seen[i]) return fail(InvalidArgument("no offset for buffer '" + problem.buffers[i].id + "'"));
  Result<OffsetsPlan> plan = OffsetsPlanFrom(problem, std::move(offsets), alignment);
  if (!plan.ok()) return fail(InvalidArgument("not a plan of the input: " + plan.status().message()));
  plan->strategy = "start";
  return plan;
}

// The --tuning assignments, in order (a later one wins); errors name the
// key or the value.
Result<SolverTuning> ReadTuning(const std::vector<std::string>& assignments) {
  SolverTuning tuning;
  for (const std::string& a : assignments)
    if (Status st = SetTuning(tuning, a); !st.ok()) return Status(st.code(), "--" + st.message());
  if (Status st = CheckTuning(tuning); !st.ok()) return Status(st.code(), "--" + st.message());
  return tuning;
}

// The knobs that differ from their defaults, as --json echoes them.
nlohmann::json ChangedTuning(const SolverTuning& tuning) {
  const SolverTuning defaults;
  nlohmann::json j = nlohmann::json::object();
  for (const TuningKey& k : TuningKeys())
    if (std::string v = k.get(tuning); v != k.get(defaults)) j[std::string(k.name)] = v;
  return j;
}

// The problem in o.input: a problem file, a trace, or an ONNX model's
// scratch arena (through the loader `plan` uses). A model is read from its
// file only: on standard input say so.
Result<Problem> LoadSolveInput(const SolveOptions& o) {
  Result<Problem> loaded = LoadProblemOrModel(o.input);
  if (loaded.ok()) return loaded;
  // The format is looked at again only here, on the way out.
  if (Result<InputFormat> f = DetectInputFormat(o.input); f.ok() && *f == InputFormat::kOnnx) {
    return InvalidArgument(InputName(o.input) + ": an ONNX model; models are read from their file, not from "
                           "standard input: give the model's path");
  }
  return loaded.status();
}

// Options that would change nothing of the solve asked for, refused: the
// search's own options when --time-limit 0 runs no search (checked before
// reading), and those about a capacity when neither --capacity nor the
// input sets one (checked once the input is read, before solving).
Status CheckSearchOptions(const SolveOptions& o) {
  if (o.time_limit > 0) return Status::Ok();
  if (o.nodes > 0) return NotApplicable("--nodes", "limits the search, and --time-limit 0 runs none (heuristics only)");
  if (o.threads != 1)
    return NotApplicable("--threads", "races searches, and --time-limit 0 runs none (heuristics only)");
  return Status::Ok();
}

Status CheckCapacityOptions(const SolveOptions& o, const Problem& problem) {
  if (o.capacity || problem.capacity) return Status::Ok();
  const std::string none = "neither --capacity nor " + InputName(o.input) + " sets one";
  if (o.minimize)
    return NotApplicable("--minimize", "finds the smallest height within a capacity, and " + none +
                                           ": the smallest arena is what solve finds without one");
  if (o.iis)
    return NotApplicable("--iis", "explains an infeasible answer, which needs a capacity, and " + none);
  return Status::Ok();
}

SolverParams ParamsFrom(const SolveOptions& o, const Problem& problem, SolverTuning tuning) {
  SolverParams params;
  params.capacity = o.capacity;
  const bool has_capacity = o.capacity || problem.capacity;
  params.goal = has_capacity && !o.minimize ? SolveGoal::kFit : SolveGoal::kMinimize;
  params.time_limit_seconds = o.time_limit;
  params.node_limit = o.nodes;
  params.alignment = o.align;
  params.progress_to_stderr = o.progress;
  params.tuning = std::move(tuning);
  params.compute_iis = o.iis;
  params.threads = o.threads;
  return params;
}

// What --json and the text report both show, besides the result.
struct SolveReport {
  const SolveOptions& o;
  const Problem& problem;
  const SolverParams& params;
  const SolveResult& r;
  std::optional<std::uint64_t> capacity;
  const OffsetsPlan* start_plan;
  double read_seconds;
};

void PrintSolveJson(const SolveReport& rep) {
  const SolveResult& r = rep.r;
  nlohmann::json j = {{"status", std::string(Name(r.status))},
                      {"height", r.has_plan ? nlohmann::json(r.height) : nlohmann::json(nullptr)},
                      {"lower_bound", r.lower_bound},
                      {"gap", r.has_plan ? nlohmann::json(r.gap) : nlohmann::json(nullptr)},
                      {"seconds", r.seconds},
                      {"read_seconds", rep.read_seconds},
                      {"nodes", r.nodes},
                      {"threads", r.threads},
                      {"buffers", rep.problem.buffers.size()},
                      {"partitions", r.partitions},
                      {"heuristic", r.heuristic_height ? nlohmann::json(*r.heuristic_height) : nlohmann::json(nullptr)},
                      {"restriction_bound", r.restriction_bound},
                      {"deep_probes", r.deep_probes},
                      {"deep_probe_plans", r.deep_probe_plans},
                      {"deep_probe_proofs", r.deep_probe_proofs},
                      {"relay_buffers", r.relay_buffers},
                      {"relay_height", r.relay_height},
                      {"relay_samples", r.relay_samples},
                      {"relay_sample_plans", r.relay_sample_plans},
                      {"tuning", ChangedTuning(rep.params.tuning)},
                      {"weighted_turn", r.weighted_turn},
                      {"fit_descent_turns", r.fit_descent_turns},
                      {"fit_descent_plans", r.fit_descent_plans},
                      {"goal", rep.params.goal == SolveGoal::kFit ? "fit" : "minimize"}};
  j["capacity"] = rep.capacity ? nlohmann::json(*rep.capacity) : nlohmann::json(nullptr);
  if (rep.start_plan) j["start"] = rep.start_plan->total;
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (rep.o.iis && r.status == SolveStatus::kInfeasible) {
    nlohmann::json ids = nlohmann::json::array();
    for (std::size_t i : r.infeasible_subset) ids.push_back(rep.problem.buffers[i].id);
    j["infeasible_subset"] = r.infeasible_subset;
    j["infeasible_subset_ids"] = ids;
    j["subset_irreducible"] = r.subset_irreducible;
  }
  std::cout << DumpJson(j) << '\n';
}

void PrintSolveText(const SolveReport& rep) {
  const SolveResult& r = rep.r;
  const std::optional<std::uint64_t>& capacity = rep.capacity;
  std::cout << InputName(rep.o.input) << ": " << rep.problem.buffers.size() << " buffers, " << r.partitions
            << " partition(s), "
            << (rep.params.goal == SolveGoal::kFit
                    ? "fit in " + WithThousands(*capacity) + " bytes"
                    : std::string("minimise the arena") +
                          (capacity ? " within " + WithThousands(*capacity) + " bytes" : ""))
            << '\n';
  std::cout << "status:      " << Name(r.status) << '\n';
  if (r.has_plan) std::cout << "height:      " << WithThousands(r.height) << '\n';
  std::cout << "lower bound: " << WithThousands(r.lower_bound) << '\n';
  if (r.heuristic_height) std::cout << "heuristic:   " << WithThousands(*r.heuristic_height) << '\n';
  if (rep.start_plan)
    std::cout << "start:       " << WithThousands(rep.start_plan->total) << " (" << rep.o.start << ")\n";
  if (r.has_plan) std::cout << "gap:         " << FormatDouble(r.gap * 100, 3) << "%\n";
  std::cout << "seconds:     " << FormatDouble(r.seconds, 3) << " (reading the input: "
            << FormatDouble(rep.read_seconds, 3) << ")\n";
  std::cout << "nodes:       " << r.nodes
            << (r.threads > 1 ? " (" + std::to_string(r.threads) + " searches)" : std::string()) << '\n';
  if (!r.reason.empty()) std::cout << "reason:      " << r.reason << '\n';
  if (rep.o.iis && r.status == SolveStatus::kInfeasible) {
    std::cout << (r.subset_irreducible ? "irreducible infeasible subset:"
                                       : "infeasible subset (not proven irreducible):");
    for (std::size_t i : r.infeasible_subset) std::cout << ' ' << rep.problem.buffers[i].id;
    std::cout << '\n';
  }
}

int ExitCode(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal:
    case SolveStatus::kFeasible: return kExitOk;
    case SolveStatus::kInfeasible: return kExitInfeasible;
    case SolveStatus::kUnknown: return kExitUnknown;
  }
  return kExitFailure;
}

int RunSolve(const SolveOptions& o) {
  Result<SolverTuning> tuning = ReadTuning(o.tuning);
  if (!tuning.ok()) return ReportError(tuning.status());
  std::vector<std::string> inputs = {o.input};
  if (!o.start.empty()) inputs.push_back(o.start);
  if (Status st = CheckNotAnInput(o.out, inputs); !st.ok()) return ReportError(st);
  if (Status st = CheckSearchOptions(o); !st.ok()) return ReportError(st);
  const auto start = std::chrono::steady_clock::now();
  Result<Problem> loaded = LoadSolveInput(o);
  if (!loaded.ok()) return ReportError(loaded.status());
  // Reading is not solving: the time limit covers the solve only.
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Problem& problem = *loaded;
  if (Status st = CheckCapacityOptions(o, problem); !st.ok()) return ReportError(st);
  SolverParams params = ParamsFrom(o, problem, std::move(tuning).value());
  std::optional<OffsetsPlan> start_plan;
  if (!o.start.empty()) {
    Result<OffsetsPlan> read = ReadStartPlan(o.start, problem, o.align);
    if (!read.ok()) return ReportError(read.status());
    start_plan = std::move(read).value();
    params.initial_plan = &*start_plan;
  }
  Result<SolveResult> solved = SolveOffsets(problem, params);
  if (!solved.ok()) return ReportError(solved.status());
  const SolveResult& r = *solved;
  const bool answered_plan = r.status == SolveStatus::kOptimal || r.status == SolveStatus::kFeasible;
  if (!o.out.empty() && answered_plan) {
    Status st = WriteOutput(o.out, inputs, [&](std::ostream& f) { return WriteProblemCsv(f, problem, &r.plan); });
    if (!st.ok()) return ReportError(st);
  }
  const SolveReport report{o, problem, params, r, o.capacity ? o.capacity : problem.capacity,
                           start_plan ? &*start_plan : nullptr, read_seconds};
  if (o.json) {
    PrintSolveJson(report);
  } else {
    PrintSolveText(report);
  }
  return ExitCode(r.status);
}

}  // namespace

void AddSolveCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SolveOptions>();
  CLI::App* cmd = app.add_subcommand(
      "solve",
      "Exact offsets: does the problem fit in a capacity (yes with a plan, no with a proof, or "
      "unknown at the limit), or the smallest arena. Exit 0 plan, 3 infeasible, 4 unknown, "
      "2 bad input");
  cmd->add_option("INPUT", o->input, "problem: MiniMalloc CSV, JSON or allocation trace, gzip-compressed or not ('-' = standard input), or an ONNX model (its scratch arena)")
      ->required();
  cmd->add_option("--capacity,-c", o->capacity,
                  "bytes the arena must fit in (default: the input's own capacity, if any)")
      ->check(Unsigned64());
  cmd->add_flag("--minimize", o->minimize,
                "with a capacity: find the smallest height within it instead of any plan");
  cmd->add_option("--time-limit,-t", o->time_limit,
                  "seconds for the whole solve, its starting heuristics included (reading the "
                  "input is not counted); 0: heuristics only, untimed")
      ->capture_default_str()
      ->check(Seconds());
  cmd->add_option("--nodes", o->nodes, "search node limit, 0 = none (machine-independent)")
      ->capture_default_str()
      ->check(Unsigned64());
  cmd->add_option("--align", o->align, "offset alignment in bytes")
      ->capture_default_str()
      ->check(PowerOfTwoAlign());
  cmd->add_option("--out,-o", o->out, "write the plan: the input's CSV with the offset column");
  cmd->add_flag("--json", o->json,
                "print {status, height, lower_bound, gap, seconds, nodes, ...} as one JSON line");
  cmd->add_flag("--progress", o->progress,
                "report the best height, bound, nodes and time on stderr every second");
  cmd->add_flag("--iis", o->iis, "on an infeasible answer, find an irreducible infeasible subset");
  cmd->add_option("--start", o->start,
                  "a plan to start from, checked by the validator: a problem file with an offset "
                  "per buffer (as -o writes it) or a CSV of id,offset rows");
  cmd->add_option("--threads", o->threads,
                  "searches racing on threads, each in its own buffer order, sharing plans and "
                  "bounds; minimising, every second one restarts by weights (--tuning portfolio=weighted) "
                  "(0: one per hardware thread); beyond 1 the answer may differ between runs")
      ->capture_default_str()
      ->check(CLI::Range(0u, kMaxSolverThreads));
  cmd->add_option("--tuning", o->tuning,
                  "KEY=VALUE, repeatable: a knob of the search (the defaults are the best general "
                  "choice). Keys:\n" + TuningHelp())
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->callback([o, exit_code] { *exit_code = RunSolve(*o); });
}

}  // namespace tensormem::cli
