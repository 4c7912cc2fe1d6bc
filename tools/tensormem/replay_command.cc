// tensormem replay TRACE.csv[.gz] [--allocator bfc|bfc_compact|vmm|pool|system|malloc|jemalloc|mimalloc|all]
//                            [--json] [--alignment N] [--repetitions N] [--device host|cuda]
//                            [--bfc-* ...] [--vmm-* ...]
//
// Replays an allocation trace (RAPIDS replay-log CSV) through each allocator
// and prints one row per allocator: ops, ns per op (median of the timed
// passes), peak bytes in use (the trace's), peak bytes reserved, their
// ratio, and the CPU time per op (robust on a busy machine). A malloc peer that cannot be loaded is skipped with a message.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "html_map.h"
#include "tensormem/allocators/replay.h"

namespace tensormem::cli {
namespace {

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
  std::optional<std::uint64_t> vmm_small;
  std::optional<std::uint64_t> vmm_limit;
  std::optional<std::uint64_t> vmm_rounding;
  bool vmm_grow_first = false;
};

int RunReplay(const ReplayOptions& o) {
  ReplayParams params;
  params.alignment = o.alignment;
  params.repetitions = o.repetitions;
  params.isolate = !o.no_isolate;
  if (o.bfc_preset == "compact") {
    params.bfc = CompactBfcParams();
    params.bfc_virtual_memory = true;
  } else if (o.bfc_preset != "tensorflow") {
    return ReportError(InvalidArgument("unknown --bfc-preset '" + o.bfc_preset +
                                       "' (known: tensorflow, compact)"));
  }
  if (o.bfc_backend == "virtual") {
    params.bfc_virtual_memory = true;
  } else if (o.bfc_backend == "host") {
    params.bfc_virtual_memory = false;
  } else if (!o.bfc_backend.empty()) {
    return ReportError(InvalidArgument("unknown --bfc-backend '" + o.bfc_backend +
                                       "' (known: host, virtual)"));
  }
  if (o.bfc_growth == "doubling") {
    params.bfc.growth = BfcGrowth::kDoubling;
  } else if (o.bfc_growth == "on_demand") {
    params.bfc.growth = BfcGrowth::kOnDemand;
  } else if (o.bfc_growth == "reserve_all") {
    params.bfc.growth = BfcGrowth::kReserveAll;
  } else if (!o.bfc_growth.empty()) {
    return ReportError(InvalidArgument("unknown --bfc-growth '" + o.bfc_growth +
                                       "' (known: doubling, on_demand, reserve_all)"));
  }
  if (o.bfc_coalesce_regions) params.bfc.coalesce_regions = true;
  if (o.bfc_initial_region) params.bfc.initial_region_bytes = *o.bfc_initial_region;
  if (o.bfc_split_cap) params.bfc.max_internal_fragmentation_bytes = *o.bfc_split_cap;
  if (o.bfc_limit > 0) params.bfc.memory_limit = o.bfc_limit;
  if (o.vmm_small) params.vmm.small_request_bytes = *o.vmm_small;
  if (o.vmm_limit) params.vmm.memory_limit = *o.vmm_limit;
  if (o.vmm_rounding) params.vmm.block_rounding_bytes = *o.vmm_rounding;
  if (o.vmm_grow_first) params.vmm.restitch_before_growing = false;
  if (Status st = Validate(params.vmm); !st.ok()) return ReportError(st);
  Result<ReplayDevice> device = ParseReplayDevice(o.device);
  if (!device.ok()) return ReportError(device.status());
  params.device = *device;
  params.cuda_device = o.cuda_device;
  if (params.device == ReplayDevice::kCuda) {
    // CUDA does not survive fork: passes run here, each on a fresh allocator.
    params.isolate = false;
  }

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
      allocators.push_back(*a);
      from = comma + 1;
    }
  }

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
    Result<ReplayResult> r = ReplayTrace(*trace, a, params);
    if (!r.ok()) return ReportError(r.status().WithContext("replay through " + std::string(Name(a))));
    // Name the tuned BFC so that its rows are not mistaken for TensorFlow's.
    if (a == ReplayAllocator::kBfc && o.bfc_preset == "compact") r->allocator = "bfc_compact";
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
      if (r.vmm_counters)
        row["vmm"] = {{"map_calls", r.vmm_counters->map_calls},
                      {"pages_mapped", r.vmm_counters->pages_mapped},
                      {"pages_unmapped", r.vmm_counters->pages_unmapped},
                      {"pages_restitched", r.vmm_counters->pages_restitched},
                      {"granules_created", r.vmm_counters->granules_created},
                      {"synchronizations", r.vmm_counters->synchronizations},
                      {"events_recorded", r.vmm_counters->events_recorded}};
      rows.push_back(row);
    }
    j["results"] = rows;
    nlohmann::json skip = nlohmann::json::array();
    for (const auto& [name, why] : skipped) skip.push_back({{"allocator", name}, {"reason", why}});
    j["skipped"] = skip;
    std::cout << j.dump(1) << '\n';
  } else {
    std::cout << o.input << ": " << trace->events.size() << " events (" << trace->num_allocations
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
                                         WithThousands(r.vmm_counters->synchronizations) + " synchronizations"
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
                  "bfc, bfc_compact, vmm, pool, system, malloc, jemalloc, mimalloc, a comma-separated list of them, or all")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON object per allocator");
  cmd->add_option("--alignment", o->alignment, "alignment of every allocation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
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
                  "BFC first region (doubling) or smallest extension (on_demand), bytes (2 MiB)");
  cmd->add_option("--bfc-split-cap", o->bfc_split_cap,
                  "BFC: split a chunk when the leftover is at least this many bytes (TensorFlow: "
                  "128 MiB)");
  cmd->add_option("--bfc-limit", o->bfc_limit, "BFC memory limit in bytes (0 = none)");
  cmd->add_option("--html", o->html,
                  "write an interactive memory map (x = event, y = address, reserved bytes as a "
                  "line) of the first of our allocators asked for");
  cmd->add_option("--device", o->device,
                  "memory of our allocators: host, or cuda (bfc on cudaMalloc, bfc_compact and vmm on "
                  "CUDA virtual memory; a clear error where no GPU is present)")
      ->capture_default_str();
  cmd->add_option("--cuda-device", o->cuda_device, "CUDA device ordinal with --device cuda")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--vmm-small", o->vmm_small,
                  "vmm: requests up to this many bytes share pages in the small space (1 MiB; 0 = one space)");
  cmd->add_option("--vmm-limit", o->vmm_limit, "vmm: the most physical memory held, bytes");
  cmd->add_option("--vmm-rounding", o->vmm_rounding, "vmm: block size multiple, bytes (512)");
  cmd->add_flag("--vmm-grow-first", o->vmm_grow_first,
                "vmm: create granules before re-stitching cached ones (like expandable segments)");
  cmd->callback([o, exit_code] { *exit_code = RunReplay(*o); });
}

}  // namespace tensormem::cli
