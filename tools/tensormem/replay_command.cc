// tensormem replay TRACE.csv[.gz] [--allocator bfc|bfc_compact|vmm|pool|system|malloc|jemalloc|mimalloc|all]
//                            [--json] [--align N] [--repetitions N] [--device host|cuda]
//                            [--bfc-* ...] [--vmm-* ...]
//
// Replays an allocation trace (RAPIDS replay-log CSV) through each allocator
// and prints one row per allocator: ops, ns per op (median of the timed
// passes), peak bytes in use (the trace's), peak bytes reserved, their
// ratio, and the CPU time per op (robust on a busy machine). A malloc peer that cannot be loaded is skipped with a message.
#include <algorithm>
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
#include "html_map.h"
#include "harness/replay.h"

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
  std::string html;
  std::string device = "host";
  int cuda_device = 0;
  std::uint64_t device_lag = 0;
  std::optional<std::uint64_t> vmm_small;
  std::optional<std::uint64_t> vmm_limit;
  std::optional<std::uint64_t> vmm_rounding;
  bool vmm_grow_first = false;
  std::optional<double> vmm_growth_slack;
  std::optional<std::uint64_t> vmm_max_handle;
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
  if (o.vmm_small) base.vmm.small_request_bytes = *o.vmm_small;
  if (o.vmm_limit) base.vmm.memory_limit = *o.vmm_limit;
  if (o.vmm_rounding) base.vmm.block_rounding_bytes = *o.vmm_rounding;
  if (o.vmm_grow_first) base.vmm.restitch_before_growing = false;
  if (o.vmm_growth_slack) base.vmm.growth_slack = *o.vmm_growth_slack;
  if (o.vmm_max_handle) base.vmm.max_handle_granules = *o.vmm_max_handle;
  if (Status st = Validate(base.vmm); !st.ok()) return ReportError(st);
  Result<ReplayDevice> device = ParseReplayDevice(o.device);
  if (!device.ok()) return ReportError(device.status());
  base.device = *device;
  base.cuda_device = o.cuda_device;
  base.device_lag = o.device_lag;
  if (base.device_lag != 0 && base.device == ReplayDevice::kCuda)
    return ReportError(InvalidArgument("--device-lag simulates a device on the host: not with --device cuda, "
                                       "where the device's own lag applies"));
  // CUDA does not survive fork: passes run here, each on a fresh allocator.
  if (base.device == ReplayDevice::kCuda) base.isolate = false;
  Result<BfcPreset> preset = internal::ParseName<BfcPreset>(o.bfc_preset, kPresets, "--bfc-preset");
  if (!preset.ok()) return ReportError(preset.status());
  // One idea: `--allocator bfc_compact` is `bfc` with the compact preset;
  // `--bfc-preset compact` makes `bfc` that same allocator (and name).
  Result<ReplayParams> bfc_params = BfcParamsFor(o, *preset, base);
  if (!bfc_params.ok()) return ReportError(bfc_params.status());
  Result<ReplayParams> compact_params = BfcParamsFor(o, BfcPreset::kCompact, base);
  if (!compact_params.ok()) return ReportError(compact_params.status());
  const ReplayParams& params = *bfc_params;

  std::vector<ReplayAllocator> allocators;
  if (o.allocator == "all") {
    allocators.assign(AllReplayAllocators().begin(), AllReplayAllocators().end());
  } else {
    // One name or a comma-separated list ("vmm,bfc_compact,malloc").
    std::size_t from = 0;
    while (from <= o.allocator.size()) {
      const std::size_t comma = std::min(o.allocator.find(',', from), o.allocator.size());
      Result<ReplayAllocator> a = ParseReplayAllocator(std::string_view(o.allocator).substr(from, comma - from));
      if (!a.ok()) return ReportError(a.status());
      // Twice would replay it twice and print two rows for one allocator
      // (bfc under the compact preset is bfc_compact).
      auto same = [&](ReplayAllocator b) {
        auto key = [&](ReplayAllocator x) {
          return x == ReplayAllocator::kBfc && *preset == BfcPreset::kCompact ? ReplayAllocator::kBfcCompact : x;
        };
        return key(b) == key(*a);
      };
      if (std::any_of(allocators.begin(), allocators.end(), same)) {
        const bool bfc = *a == ReplayAllocator::kBfc || *a == ReplayAllocator::kBfcCompact;
        return ReportError(InvalidArgument(
            "--allocator: '" + std::string(Name(*a)) + "' is listed twice" +
            (bfc && *preset == BfcPreset::kCompact ? " (bfc with --bfc-preset compact is bfc_compact)" : "")));
      }
      allocators.push_back(*a);
      from = comma + 1;
    }
  }

  // Host regions are never adjacent: on them the flag would do nothing, silently.
  if (o.bfc_coalesce_regions && !params.bfc_virtual_memory &&
      std::find(allocators.begin(), allocators.end(), ReplayAllocator::kBfc) != allocators.end())
    return ReportError(InvalidArgument("--bfc-coalesce-regions needs virtual memory (--bfc-backend virtual, "
                                       "or --bfc-preset compact): host regions are never adjacent"));

  if (params.device == ReplayDevice::kCuda) {
    for (ReplayAllocator a : allocators)
      if (o.allocator != "all" && (IsMallocPeer(a) || a == ReplayAllocator::kSystem))
        return ReportError(InvalidArgument(std::string(Name(a)) + " allocates host memory: it cannot replay "
                                           "with --device cuda (use bfc, bfc_compact, vmm or pool)"));
    Result<std::unique_ptr<PhysicalMemory>> gpu = MakeCudaPhysicalMemory(o.cuda_device);
    if (!gpu.ok()) return ReportError(gpu.status().WithContext("--device cuda"));
  }

  Result<Trace> trace = LoadTrace(o.input);
  if (!trace.ok()) return ReportError(trace.status());

  std::vector<ReplayResult> results;
  std::vector<std::pair<std::string, std::string>> skipped;
  // Allocators refused memory during the replay (a limit, or the device):
  // the others still run, so that a comparison under a limit shows which fit.
  std::vector<std::pair<std::string, std::string>> out_of_memory;
  for (ReplayAllocator a : allocators) {
    if (params.device == ReplayDevice::kCuda && (IsMallocPeer(a) || a == ReplayAllocator::kSystem)) {
      if (o.allocator == "all") {
        skipped.emplace_back(std::string(Name(a)), "host memory only (--device cuda)");
        continue;
      }
      return ReportError(InvalidArgument(std::string(Name(a)) + " allocates host memory: it cannot replay "
                                         "with --device cuda (use bfc, bfc_compact, vmm or pool)"));
    }
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
    // Name the tuned BFC so that its rows are not mistaken for TensorFlow's.
    const std::string name = compact ? "bfc_compact" : std::string(Name(a));
    if (!r.ok()) {
      // Messages start with the allocator's own name ("bfc" for both BFCs).
      std::string_view why = r.status().message();
      if (const std::string own = std::string(Name(a == ReplayAllocator::kBfcCompact ? ReplayAllocator::kBfc : a)) + ": ";
          why.starts_with(own))
        why.remove_prefix(own.size());
      if (r.status().code() != StatusCode::kResourceExhausted)
        return ReportError(Status(r.status().code(), name + ": " + std::string(why)));
      out_of_memory.emplace_back(name, std::string(why));
      continue;
    }
    r->allocator = name;
    results.push_back(std::move(*r));
  }

  if (!o.html.empty()) {
    if (Status st = WriteReplayMap(o.html, *trace, allocators, params); !st.ok()) return ReportError(st);
  }
  if (o.json) {
    nlohmann::json j = {{"trace", o.input},
                        {"events", trace->events.size()},
                        {"allocations", trace->num_allocations},
                        {"frees", trace->num_frees},
                        {"never_freed", trace->num_never_freed},
                        {"alignment", o.alignment},
                        {"device", o.device},
                        {"device_lag", o.device_lag},
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
      row["warm_ns_per_op"] = r.warm_ns_per_op ? nlohmann::json(*r.warm_ns_per_op) : nlohmann::json();
      auto counters = [](const VmmAllocator::Counters& c) {
        nlohmann::json out = nlohmann::json::object();
        for (const auto& [name, field] : VmmAllocator::kCounterFields) out[std::string(name)] = c.*field;
        return out;
      };
      if (r.vmm_counters) row["vmm"] = counters(*r.vmm_counters);
      if (r.vmm_warm_counters) row["vmm_warm"] = counters(*r.vmm_warm_counters);
      if (r.backend_counters)
        row["backend"] = {{"handles_created", r.backend_counters->handles_created},
                          {"handles_released", r.backend_counters->handles_released}};
      rows.push_back(row);
    }
    j["results"] = rows;
    nlohmann::json skip = nlohmann::json::array();
    for (const auto& [name, why] : skipped) skip.push_back({{"allocator", name}, {"reason", why}});
    j["skipped"] = skip;
    nlohmann::json refused = nlohmann::json::array();
    for (const auto& [name, why] : out_of_memory) refused.push_back({{"allocator", name}, {"reason", why}});
    j["out_of_memory"] = refused;
    std::cout << DumpJson(j, 1) << '\n';
  } else {
    std::cout << InputName(o.input) << ": " << trace->events.size() << " events (" << trace->num_allocations
              << " allocations, " << trace->num_frees << " frees, " << trace->num_never_freed
              << " never freed), alignment " << o.alignment << ", median of " << o.repetitions
              << " passes\n";
    Table t({"allocator", "ops", "ns_per_op", "peak_in_use", "peak_reserved", "reserved_over_in_use",
             "cpu_ns_per_op", "warm_ns_per_op"});
    for (const ReplayResult& r : results)
      t.AddRow({r.allocator, WithThousands(r.ops), FormatDouble(r.ns_per_op, 1),
                WithThousands(r.peak_in_use), WithThousands(r.peak_reserved),
                FormatDouble(r.reserved_over_in_use, 3), FormatDouble(r.cpu_ns_per_op, 1),
                r.warm_ns_per_op ? FormatDouble(*r.warm_ns_per_op, 1) : std::string("-")});
    std::cout << t.ToString();
    for (const ReplayResult& r : results)
      std::cout << "  " << r.allocator << ": peak_reserved from " << r.reserved_source
                << (r.fragmentation ? ", fragmentation at the end " + FormatDouble(*r.fragmentation, 3)
                                    : std::string())
                << (r.vmm_counters ? "; cold pass: " + WithThousands(r.vmm_counters->map_calls) + " map calls, " +
                                         WithThousands(r.vmm_counters->pages_mapped) + " pages mapped, " +
                                         WithThousands(r.vmm_counters->pages_restitched) + " re-stitched, " +
                                         WithThousands(r.vmm_counters->granules_created) + " granules created, " +
                                         WithThousands(r.vmm_counters->handles_moved) + " handles moved whole, " +
                                         WithThousands(r.vmm_counters->synchronizations) + " synchronizations, " +
                                         WithThousands(r.vmm_counters->event_waits) + " fence waits"
                                   : std::string())
                << (r.vmm_warm_counters ? "; warm pass: " + WithThousands(r.vmm_warm_counters->map_calls) +
                                              " map calls, " + WithThousands(r.vmm_warm_counters->pages_mapped) +
                                              " pages mapped, " +
                                              WithThousands(r.vmm_warm_counters->pages_restitched) + " re-stitched, " +
                                              WithThousands(r.vmm_warm_counters->handles_moved) + " handles moved whole, " +
                                              WithThousands(r.vmm_warm_counters->synchronizations) +
                                              " synchronizations, " +
                                              WithThousands(r.vmm_warm_counters->event_waits) + " fence waits"
                                        : std::string())
                << (r.backend_counters ? "; cold pass: " + WithThousands(r.backend_counters->handles_created) +
                                             " handles created, " +
                                             WithThousands(r.backend_counters->handles_released) + " released"
                                       : std::string())
                << '\n';
    for (const auto& [name, why] : skipped) std::cout << "  skipped " << name << ": " << why << '\n';
  }
  // The comparison is printed whole; a refusal still fails the command.
  for (const auto& [name, why] : out_of_memory) std::cerr << "tensormem: error: " << name << ": " << why << '\n';
  if (!out_of_memory.empty()) return kExitFailure;
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
  cmd->add_option("TRACE", o->input,
                  "trace CSV: Thread,Time,Action,Pointer,Size,Stream; gzip-compressed or not; '-' = standard input")
      ->required();
  cmd->add_option("--allocator,-a", o->allocator,
                  "bfc, bfc_compact, vmm, pool, system, malloc, jemalloc, mimalloc, a comma-separated list of them, or all")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON object: the trace, then a row per allocator (\"results\"), the ones skipped and the ones refused memory (\"out_of_memory\")");
  cmd->add_option("--align", o->alignment,
                  "alignment of every allocation in bytes (a power of two)")
      ->capture_default_str()
      ->check(PowerOfTwoAlign());
  // The old name, kept working, not listed.
  cmd->add_option("--alignment", o->alignment)->check(PowerOfTwoAlign())->group("");
  cmd->add_option("--repetitions,-r", o->repetitions, "timed passes (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxReplayRepetitions));
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
  cmd->add_option("--html", o->html,
                  "write an interactive memory map (x = event, y = address, reserved bytes as a "
                  "line) of the first of our allocators asked for");
  cmd->add_option("--device", o->device,
                  "memory of our allocators: host, cuda (bfc on cudaMalloc, bfc_compact and vmm on "
                  "CUDA virtual memory; a clear error where no GPU is present), or host-granules (host memory, "
                  "bfc_compact growing over memfd granules as over a GPU's, with its handle counts)")
      ->capture_default_str();
  cmd->add_option("--cuda-device", o->cuda_device, "CUDA device ordinal with --device cuda")
      ->capture_default_str()
      ->check(CLI::Range(0, 1023));
  cmd->add_option("--device-lag", o->device_lag,
                  "host devices: the device runs this many trace events behind the replay (an event "
                  "recorded at a free completes that many events later), as a GPU behind the CPU "
                  "queueing its work; vmm re-stitches only pages the device is done with (0)")
      ->check(Unsigned64(0, std::uint64_t{1} << 40));
  cmd->add_option("--vmm-small", o->vmm_small,
                  "vmm: requests up to this many bytes share pages in the small space (1 MiB; 0 = one space)")
      ->check(Unsigned64());
  cmd->add_option("--vmm-limit", o->vmm_limit, "vmm: the most physical memory held, bytes")
      ->check(Unsigned64(1, std::uint64_t{1} << 62));
  cmd->add_option("--vmm-rounding", o->vmm_rounding, "vmm: block size multiple, bytes (512)")
      ->check(Unsigned64(1, std::uint64_t{1} << 62));
  cmd->add_flag("--vmm-grow-first", o->vmm_grow_first,
                "vmm: create granules before re-stitching cached ones (like expandable segments)");
  cmd->add_option("--vmm-max-handle", o->vmm_max_handle,
                  "vmm: new granules for a run of pages come as handles of up to this many granules (16; 1 = a "
                  "handle per granule)")
      ->check(Unsigned64(1, std::uint64_t{1} << 20));
  cmd->add_option("--vmm-growth-slack", o->vmm_growth_slack,
                  "vmm: create granules rather than re-stitch while the memory held stays within this fraction "
                  "above the most pages ever touched at once (0 to 1)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->callback([o, exit_code] { *exit_code = RunReplay(*o); });
}

}  // namespace tensormem::cli
