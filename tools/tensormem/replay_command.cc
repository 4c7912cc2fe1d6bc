// tensormem replay TRACE.csv [--allocator bfc|bfc_compact|pool|system|malloc|jemalloc|mimalloc|all]
//                            [--json] [--alignment N] [--repetitions N] [--bfc-* ...]
//
// Replays an allocation trace (RAPIDS replay-log CSV) through each allocator
// and prints one row per allocator: ops, ns per op (median of the timed
// passes), peak bytes in use (the trace's), peak bytes reserved, their
// ratio, and the CPU time per op (robust on a busy machine). A malloc peer that cannot be loaded is skipped with a message.
#include <array>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "core/parse_name.h"
#include "tensormem/allocators/replay.h"

namespace tensormem::cli {

// --bfc-preset and --bfc-backend, parsed by the one enum-name parser.
enum class BfcPreset { kTensorflow, kCompact };
enum class BfcMemory { kHost, kVirtual };
std::string_view Name(BfcPreset p) { return p == BfcPreset::kCompact ? "compact" : "tensorflow"; }
std::string_view Name(BfcMemory m) { return m == BfcMemory::kVirtual ? "virtual" : "host"; }

namespace {

constexpr std::array<BfcPreset, 2> kPresets = {BfcPreset::kTensorflow, BfcPreset::kCompact};
constexpr std::array<BfcMemory, 2> kMemories = {BfcMemory::kHost, BfcMemory::kVirtual};

struct ReplayOptions {
  std::string input;
  std::string allocator = "all";
  bool json = false;
  std::uint64_t alignment = 64;
  int repetitions = 3;
  bool no_isolate = false;
  std::string bfc_preset = "tensorflow";
  std::string bfc_backend;
  std::string bfc_growth;
  bool bfc_coalesce_regions = false;
  std::optional<std::uint64_t> bfc_initial_region;
  std::optional<std::uint64_t> bfc_split_cap;
  std::uint64_t bfc_limit = 0;
};

// The BFC parameters for one preset with the --bfc-* changes on top; every
// field checked (Validate) before anything runs.
Result<ReplayParams> BfcParamsFor(const ReplayOptions& o, BfcPreset preset, ReplayParams params) {
  params.bfc = preset == BfcPreset::kCompact ? CompactBfcParams() : BfcParams{};
  params.bfc_virtual_memory = preset == BfcPreset::kCompact;
  if (!o.bfc_backend.empty()) {
    TM_ASSIGN_OR_RETURN(BfcMemory m, internal::ParseName<BfcMemory>(o.bfc_backend, kMemories,
                                                                     "--bfc-backend"));
    params.bfc_virtual_memory = m == BfcMemory::kVirtual;
  }
  if (!o.bfc_growth.empty()) {
    TM_ASSIGN_OR_RETURN(params.bfc.growth, ParseBfcGrowth(o.bfc_growth));
  }
  if (o.bfc_coalesce_regions) params.bfc.coalesce_regions = true;
  if (o.bfc_initial_region) params.bfc.initial_region_bytes = *o.bfc_initial_region;
  if (o.bfc_split_cap) params.bfc.max_internal_fragmentation_bytes = *o.bfc_split_cap;
  if (o.bfc_limit > 0) params.bfc.memory_limit = o.bfc_limit;
  TM_RETURN_IF_ERROR(Validate(params.bfc));
  TM_RETURN_IF_ERROR(Validate(params.pool));
  TM_RETURN_IF_ERROR(Validate(params.system));
  return params;
}

int RunReplay(const ReplayOptions& o) {
  ReplayParams base;
  base.alignment = o.alignment;
  base.repetitions = o.repetitions;
  base.isolate = !o.no_isolate;
  Result<BfcPreset> preset = internal::ParseName<BfcPreset>(o.bfc_preset, kPresets, "--bfc-preset");
  if (!preset.ok()) return ReportError(preset.status());
  // One idea: `--allocator bfc_compact` is `bfc` with the compact preset;
  // `--bfc-preset compact` makes `bfc` that same allocator (and name).
  Result<ReplayParams> bfc_params = BfcParamsFor(o, *preset, base);
  if (!bfc_params.ok()) return ReportError(bfc_params.status());
  Result<ReplayParams> compact_params = BfcParamsFor(o, BfcPreset::kCompact, base);
  if (!compact_params.ok()) return ReportError(compact_params.status());

  std::vector<ReplayAllocator> allocators;
  if (o.allocator == "all") {
    allocators.assign(AllReplayAllocators().begin(), AllReplayAllocators().end());
  } else {
    Result<ReplayAllocator> a = ParseReplayAllocator(o.allocator);
    if (!a.ok()) return ReportError(a.status());
    allocators.push_back(*a);
  }

  Result<Trace> trace = LoadTrace(o.input);
  if (!trace.ok()) return ReportError(trace.status());

  std::vector<ReplayResult> results;
  std::vector<std::pair<std::string, std::string>> skipped;
  for (ReplayAllocator a : allocators) {
    if (IsMallocPeer(a)) {
      Status available = MallocPeerAvailable(a);
      if (!available.ok()) {
        skipped.emplace_back(std::string(Name(a)), available.message());
        continue;
      }
    }
    const bool compact = a == ReplayAllocator::kBfcCompact ||
                         (a == ReplayAllocator::kBfc && *preset == BfcPreset::kCompact);
    if (compact && o.allocator == "all" && a == ReplayAllocator::kBfc) continue;  // bfc_compact's row
    Result<ReplayResult> r = a == ReplayAllocator::kBfcCompact
                                 ? ReplayTrace(*trace, ReplayAllocator::kBfc, *compact_params)
                                 : ReplayTrace(*trace, a, *bfc_params);
    if (!r.ok()) return ReportError(r.status().WithContext("replay through " + std::string(Name(a))));
    // Name the tuned BFC so that its rows are not mistaken for TensorFlow's.
    if (compact) r->allocator = "bfc_compact";
    results.push_back(std::move(*r));
  }

  if (o.json) {
    nlohmann::json j = {{"trace", o.input},
                        {"events", trace->events.size()},
                        {"allocations", trace->num_allocations},
                        {"frees", trace->num_frees},
                        {"never_freed", trace->num_never_freed},
                        {"alignment", o.alignment},
                        {"repetitions", o.repetitions}};
    nlohmann::json rows = nlohmann::json::array();
    for (const ReplayResult& r : results) {
      nlohmann::json row = {{"allocator", r.allocator},
                            {"ops", r.ops},
                            {"ns_per_op", r.ns_per_op},
                            {"cpu_ns_per_op", r.cpu_ns_per_op},
                            {"peak_in_use", r.peak_in_use},
                            {"peak_reserved", r.peak_reserved},
                            {"reserved_over_in_use", r.reserved_over_in_use},
                            {"reserved_source", r.reserved_source}};
      row["fragmentation"] = r.fragmentation ? nlohmann::json(*r.fragmentation) : nlohmann::json();
      rows.push_back(row);
    }
    j["results"] = rows;
    nlohmann::json skip = nlohmann::json::array();
    for (const auto& [name, why] : skipped) skip.push_back({{"allocator", name}, {"reason", why}});
    j["skipped"] = skip;
    std::cout << DumpJson(j, 1) << '\n';
  } else {
    std::cout << o.input << ": " << trace->events.size() << " events (" << trace->num_allocations
              << " allocations, " << trace->num_frees << " frees, " << trace->num_never_freed
              << " never freed), alignment " << o.alignment << ", median of " << o.repetitions
              << " passes\n";
    Table t({"allocator", "ops", "ns_per_op", "peak_in_use", "peak_reserved", "reserved_over_in_use",
             "cpu_ns_per_op"});
    for (const ReplayResult& r : results)
      t.AddRow({r.allocator, WithThousands(r.ops), FormatDouble(r.ns_per_op, 1),
                WithThousands(r.peak_in_use), WithThousands(r.peak_reserved),
                FormatDouble(r.reserved_over_in_use, 3), FormatDouble(r.cpu_ns_per_op, 1)});
    std::cout << t.ToString();
    for (const ReplayResult& r : results)
      std::cout << "  " << r.allocator << ": peak_reserved from " << r.reserved_source
                << (r.fragmentation ? ", fragmentation at the end " + FormatDouble(*r.fragmentation, 3)
                                    : std::string())
                << '\n';
    for (const auto& [name, why] : skipped) std::cout << "  skipped " << name << ": " << why << '\n';
  }
  if (results.empty()) {
    std::cerr << "tensormem: error: no allocator could replay the trace\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void AddReplayCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay an allocation trace (RAPIDS replay-log CSV) through the allocators and "
                "malloc peers: time per operation, peak in use, peak reserved");
  cmd->add_option("TRACE", o->input, "trace CSV: Thread,Time,Action,Pointer,Size,Stream")->required();
  cmd->add_option("--allocator,-a", o->allocator,
                  "bfc, bfc_compact, pool, system, malloc, jemalloc, mimalloc, or all")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON object per allocator");
  cmd->add_option("--align", o->alignment,
                  "alignment of every allocation in bytes (a power of two)")
      ->capture_default_str()
      ->check(PowerOfTwoAlign());
  // The old name, kept working, not listed.
  cmd->add_option("--alignment", o->alignment)->check(PowerOfTwoAlign())->group("");
  cmd->add_option("--repetitions,-r", o->repetitions, "timed passes (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--no-isolate", o->no_isolate,
                "run every pass in this process instead of a forked child (later passes of a malloc peer find a warm heap)");
  cmd->add_option("--bfc-preset", o->bfc_preset,
                  "BFC parameters: tensorflow (TensorFlow's defaults, host memory) or compact "
                  "(on-demand growth, coalesce_regions, split always, virtual memory); the "
                  "--bfc-* options below change single parameters")
      ->capture_default_str();
  cmd->add_option("--bfc-backend", o->bfc_backend, "BFC memory: host or virtual");
  cmd->add_option("--bfc-growth", o->bfc_growth,
                  "BFC region growth: doubling (TensorFlow), on_demand, reserve_all (needs "
                  "--bfc-limit)");
  cmd->add_flag("--bfc-coalesce-regions", o->bfc_coalesce_regions,
                "BFC: merge adjacent regions (needs --bfc-backend virtual)");
  cmd->add_option("--bfc-initial-region", o->bfc_initial_region,
                  "BFC first region (doubling) or smallest extension (on_demand), bytes (2 MiB)")
      ->check(Unsigned64(1, std::uint64_t{1} << 62));
  cmd->add_option("--bfc-split-cap", o->bfc_split_cap,
                  "BFC: split a chunk when the leftover is at least this many bytes (TensorFlow: "
                  "128 MiB)")
      ->check(Unsigned64());
  cmd->add_option("--bfc-limit", o->bfc_limit, "BFC memory limit in bytes (0 = none)")
      ->check(Unsigned64());
  cmd->callback([o, exit_code] { *exit_code = RunReplay(*o); });
}

}  // namespace tensormem::cli
