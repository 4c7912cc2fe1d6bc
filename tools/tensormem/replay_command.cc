// SPDX-License-Identifier: Apache-2.0
// tensormem replay TRACE.csv[.gz] [--allocator NAME[,NAME...]|all] [--json] [--align N]
//                            [--repetitions N] [--device NAME] [--bfc-* ...] [--vmm-* ...]
//
// Replays an allocation trace (RAPIDS replay-log CSV) through each allocator
// and prints one row per allocator: ops, ns per op (median of the timed
// passes), peak bytes in use (the trace's), peak bytes reserved, their
// ratio, and the CPU time per op (robust on a busy machine). A malloc peer
// that cannot be loaded is skipped with a message. Every option is checked
// against the allocators asked for before the trace is read: an option that
// would change none of them is an error saying why.
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
#include "harness/replay.h"
#include "html_map.h"
#include "tensormem/defaults.h"

namespace tensormem::cli {
namespace {

// --bfc-backend: bfc's memory.
enum class BfcMemory { kHost, kVirtual };
std::string_view Name(BfcMemory m) { return m == BfcMemory::kVirtual ? "virtual" : "host"; }
constexpr std::array<BfcMemory, 2> kMemories = {BfcMemory::kHost, BfcMemory::kVirtual};

struct ReplayOptions {
  std::string input;
  std::string allocator = std::string(defaults::kReplayAllocators);
  bool json = false;
  std::uint64_t alignment = defaults::kTensorAlignment;
  int repetitions = defaults::kReplayRepetitions;
  int warm_passes = defaults::kReplayWarmPasses;
  bool no_isolate = false;
  bool no_page_writes = false;
  std::string bfc_preset;  // empty: tensorflow
  std::string bfc_backend;
  std::string bfc_growth;
  bool bfc_coalesce_regions = false;
  std::optional<std::uint64_t> bfc_initial_region;
  std::optional<std::uint64_t> bfc_split_cap;
  std::optional<std::uint32_t> bfc_fit_candidates;
  bool bfc_granule_handles = false;
  std::optional<std::uint64_t> bfc_limit;
  std::string html;
  std::string device = std::string(Name(ReplayDevice::kHost));
  std::optional<int> cuda_device;
  std::uint64_t device_lag = 0;
  std::optional<std::uint64_t> vmm_small;
  std::optional<std::uint64_t> vmm_limit;
  std::optional<std::uint64_t> vmm_rounding;
  bool vmm_grow_first = false;
  std::optional<double> vmm_growth_slack;
  std::optional<std::uint64_t> vmm_max_handle;
  std::optional<double> vmm_grow_ahead;
  bool vmm_protect_refaulted = false;
};

// The allocators asked for, each once; `all` says whether --allocator was
// `all` (host-only allocators are then skipped on cuda, not refused).
struct Selection {
  std::vector<ReplayAllocator> allocators;
  bool all = false;
  bool Has(ReplayAllocator a) const { return std::find(allocators.begin(), allocators.end(), a) != allocators.end(); }
};

// The --bfc-* changes on top of a preset's parameters.
Status ApplyBfcOptions(const ReplayOptions& o, BfcParams& p) {
  if (!o.bfc_growth.empty()) {
    TM_ASSIGN_OR_RETURN(p.growth, ParseBfcGrowth(o.bfc_growth));
  }
  if (o.bfc_coalesce_regions) p.coalesce_regions = true;
  if (o.bfc_initial_region) p.initial_region_bytes = *o.bfc_initial_region;
  if (o.bfc_split_cap) p.max_internal_fragmentation_bytes = *o.bfc_split_cap;
  if (o.bfc_fit_candidates) p.fit_candidates = *o.bfc_fit_candidates;
  if (o.bfc_limit && *o.bfc_limit > 0) p.memory_limit = *o.bfc_limit;
  return Validate(p);
}

// The allocators of --allocator: `all`, one name or a comma-separated list;
// under --bfc-preset compact, bfc is bfc_compact. A name twice is an error
// (it would print two rows for one allocator).
Result<Selection> SelectAllocators(const ReplayOptions& o, BfcPreset preset) {
  Selection s;
  s.all = o.allocator == "all";
  std::vector<ReplayAllocator> asked;
  if (s.all) {
    asked.assign(AllReplayAllocators().begin(), AllReplayAllocators().end());
  } else {
    for (std::size_t from = 0; from <= o.allocator.size();) {
      const std::size_t comma = std::min(o.allocator.find(',', from), o.allocator.size());
      TM_ASSIGN_OR_RETURN(ReplayAllocator a,
                          ParseReplayAllocator(std::string_view(o.allocator).substr(from, comma - from)));
      asked.push_back(a);
      from = comma + 1;
    }
  }
  for (ReplayAllocator a : asked) {
    if (a == ReplayAllocator::kBfc) a = ReplayAllocatorOf(preset);
    if (!s.Has(a)) {
      s.allocators.push_back(a);
    } else if (!s.all) {
      return InvalidArgument("--allocator: '" + std::string(Name(a)) + "' is listed twice" +
                             (preset == BfcPreset::kCompact ? " (bfc with --bfc-preset compact is bfc_compact)" : ""));
    }
  }
  return s;
}

Status CheckBfcOptionsApply(const ReplayOptions& o, const Selection& s, const ReplayParams& params) {
  const bool any_bfc = s.Has(ReplayAllocator::kBfc) || s.Has(ReplayAllocator::kBfcCompact);
  const bool given = !o.bfc_preset.empty() || !o.bfc_backend.empty() || !o.bfc_growth.empty() ||
                     o.bfc_coalesce_regions || o.bfc_initial_region || o.bfc_split_cap || o.bfc_fit_candidates ||
                     o.bfc_limit || o.bfc_granule_handles;
  if (given && !any_bfc)
    return NotApplicable("--bfc-*", "options change the BFC allocators (bfc, bfc_compact), and none was asked for");
  if (!o.bfc_backend.empty() && !s.Has(ReplayAllocator::kBfc))
    return NotApplicable("--bfc-backend", "chooses bfc's memory; bfc_compact (the compact preset) is always "
                                          "over virtual memory");
  if (o.bfc_granule_handles && params.device == ReplayDevice::kHost)
    return NotApplicable("--bfc-granule-handles", "applies over physical granules (--device cuda or "
                                                  "host-granules); host pages are given back one by one already");
  // Host regions are never adjacent: on them the flag would do nothing.
  if (o.bfc_coalesce_regions && s.Has(ReplayAllocator::kBfc) && !params.bfc_virtual_memory)
    return NotApplicable("--bfc-coalesce-regions", "needs virtual memory (--bfc-backend virtual, or --bfc-preset "
                                                   "compact): host regions are never adjacent");
  return Status::Ok();
}

Status CheckVmmOptionsApply(const ReplayOptions& o, const Selection& s) {
  const bool given = o.vmm_small || o.vmm_limit || o.vmm_rounding || o.vmm_grow_first || o.vmm_growth_slack ||
                     o.vmm_max_handle || o.vmm_grow_ahead || o.vmm_protect_refaulted;
  if (given && !s.Has(ReplayAllocator::kVmm))
    return NotApplicable("--vmm-*", "options change the vmm allocator, which was not asked for");
  return Status::Ok();
}

Status CheckDeviceOptionsApply(const ReplayOptions& o, const Selection& s, const ReplayParams& params) {
  const bool cuda = params.device == ReplayDevice::kCuda;
  if (o.cuda_device && !cuda) return NotApplicable("--cuda-device", "chooses the GPU of --device cuda");
  if (o.no_isolate && cuda)
    return NotApplicable("--no-isolate", "changes nothing with --device cuda: CUDA does not survive fork, so "
                                         "every pass runs in this process already");
  if (o.no_page_writes && cuda)
    return NotApplicable("--no-page-writes", "changes nothing with --device cuda: device memory is measured by "
                                             "the allocator's own statistic already");
  if (o.device_lag != 0 && cuda)
    return NotApplicable("--device-lag", "simulates a device on the host: not with --device cuda, where the "
                                         "device's own lag applies");
  if (!s.all)
    for (ReplayAllocator a : s.allocators) TM_RETURN_IF_ERROR(CheckReplayDevice(a, params.device));
  return Status::Ok();
}

Status CheckHtmlApplies(const ReplayOptions& o, const Selection& s) {
  if (o.html.empty()) return Status::Ok();
  TM_RETURN_IF_ERROR(CheckNotAnInput(o.html, {o.input}));
  if (std::all_of(s.allocators.begin(), s.allocators.end(), IsMallocPeer))
    return NotApplicable("--html", "draws where one of our allocators put the blocks; the malloc peers do not say");
  return Status::Ok();
}

// Every parameter from the options; the allocators' parameters validated.
Result<ReplayParams> ParamsFrom(const ReplayOptions& o, BfcPreset preset) {
  ReplayParams p;
  p.alignment = o.alignment;
  p.repetitions = o.repetitions;
  p.warm_passes = o.warm_passes;
  p.isolate = !o.no_isolate;
  p.write_pages = !o.no_page_writes;
  if (o.vmm_small) p.vmm.small_request_bytes = *o.vmm_small;
  if (o.vmm_limit) p.vmm.memory_limit = *o.vmm_limit;
  if (o.vmm_rounding) p.vmm.block_rounding_bytes = *o.vmm_rounding;
  if (o.vmm_grow_first) p.vmm.restitch_before_growing = false;
  if (o.vmm_growth_slack) p.vmm.growth_slack = *o.vmm_growth_slack;
  if (o.vmm_max_handle) p.vmm.max_handle_granules = *o.vmm_max_handle;
  if (o.vmm_grow_ahead) p.vmm.grow_ahead = *o.vmm_grow_ahead;
  if (o.vmm_protect_refaulted) p.vmm.protect_refaulted = true;
  TM_RETURN_IF_ERROR(Validate(p.vmm));
  TM_ASSIGN_OR_RETURN(p.device, ParseReplayDevice(o.device));
  p.cuda_device = o.cuda_device.value_or(0);
  p.device_lag = o.device_lag;
  // CUDA does not survive fork: passes run here, each on a fresh allocator.
  if (p.device == ReplayDevice::kCuda) p.isolate = false;
  p.bfc = BfcPresetParams(preset);
  p.bfc_virtual_memory = BfcPresetUsesVirtualMemory(preset);
  if (!o.bfc_backend.empty()) {
    TM_ASSIGN_OR_RETURN(BfcMemory m, internal::ParseName<BfcMemory>(o.bfc_backend, kMemories, "--bfc-backend"));
    p.bfc_virtual_memory = m == BfcMemory::kVirtual;
  }
  TM_RETURN_IF_ERROR(ApplyBfcOptions(o, p.bfc).WithContext("bfc"));
  TM_RETURN_IF_ERROR(ApplyBfcOptions(o, p.bfc_compact).WithContext("bfc_compact"));
  p.bfc_granule_handles = o.bfc_granule_handles;
  TM_RETURN_IF_ERROR(Validate(p.pool));
  TM_RETURN_IF_ERROR(Validate(p.system));
  return p;
}

using Reasons = std::vector<std::pair<std::string, std::string>>;  // allocator, why

struct Outcome {
  std::vector<ReplayResult> results;
  Reasons skipped;
  // Refused memory during the replay (a limit, or the device): the others
  // still run, so that a comparison under a limit shows which fit.
  Reasons out_of_memory;
};

// Every allocator over the trace; a failure other than running out of
// memory stops the comparison.
Result<Outcome> ReplayEach(const Trace& trace, const Selection& s, const ReplayParams& params) {
  Outcome out;
  for (ReplayAllocator a : s.allocators) {
    const std::string name(Name(a));
    if (!CheckReplayDevice(a, params.device).ok()) {  // only with `all`: the others were refused
      out.skipped.emplace_back(name, "host memory only (--device cuda)");
      continue;
    }
    if (IsMallocPeer(a)) {
      if (Status available = MallocPeerAvailable(a); !available.ok()) {
        out.skipped.emplace_back(name, available.message());
        continue;
      }
    }
    Result<ReplayResult> r = ReplayTrace(trace, a, params);
    if (!r.ok()) {
      // Messages start with the BFC's own name ("bfc") for both BFCs.
      std::string why = r.status().message();
      for (const std::string& own : {name + ": ", std::string("bfc: ")})
        if (why.starts_with(own)) why.erase(0, own.size());
      if (r.status().code() != StatusCode::kResourceExhausted) return Status(r.status().code(), name + ": " + why);
      out.out_of_memory.emplace_back(name, why);
      continue;
    }
    r->allocator = name;
    out.results.push_back(std::move(*r));
  }
  return out;
}

nlohmann::json CountersJson(const VmmAllocator::Counters& c) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, field] : VmmAllocator::kCounterFields) out[std::string(name)] = c.*field;
  return out;
}

// "map_calls 12, pages_mapped 40, ...": every counter, named as in the JSON.
std::string CountersText(const VmmAllocator::Counters& c) {
  std::string out;
  for (const auto& [name, field] : VmmAllocator::kCounterFields)
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + WithThousands(c.*field);
  return out;
}

nlohmann::json ReasonsJson(const Reasons& reasons) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, why] : reasons) out.push_back({{"allocator", name}, {"reason", why}});
  return out;
}

void PrintJson(const ReplayOptions& o, const Trace& trace, const Outcome& out) {
  nlohmann::json j = {{"trace", o.input},
                      {"events", trace.events.size()},
                      {"allocations", trace.num_allocations},
                      {"frees", trace.num_frees},
                      {"never_freed", trace.num_never_freed},
                      {"alignment", o.alignment},
                      {"device", o.device},
                      {"device_lag", o.device_lag},
                      {"repetitions", o.repetitions},
                      {"warm_passes", o.warm_passes},
                      {"page_writes", !o.no_page_writes}};
  nlohmann::json rows = nlohmann::json::array();
  for (const ReplayResult& r : out.results) {
    nlohmann::json row = {{"allocator", r.allocator},
                          {"ops", r.ops},
                          {"ns_per_op", r.ns_per_op},
                          {"cpu_ns_per_op", r.cpu_ns_per_op},
                          {"peak_in_use", r.peak_in_use},
                          {"peak_reserved", r.peak_reserved},
                          {"reserved_over_in_use", r.reserved_over_in_use},
                          {"reserved_source", r.reserved_source}};
    row["peak_held"] = r.peak_held ? nlohmann::json(*r.peak_held) : nlohmann::json();
    row["held_source"] = r.held_source;
    row["fragmentation"] = r.fragmentation ? nlohmann::json(*r.fragmentation) : nlohmann::json();
    row["warm_ns_per_op"] = r.warm_ns_per_op ? nlohmann::json(*r.warm_ns_per_op) : nlohmann::json();
    if (r.vmm_counters) row["vmm"] = CountersJson(*r.vmm_counters);
    if (r.vmm_warm_counters) row["vmm_warm"] = CountersJson(*r.vmm_warm_counters);
    if (r.backend_counters)
      row["backend"] = {{"handles_created", r.backend_counters->handles_created},
                        {"handles_released", r.backend_counters->handles_released},
                        {"decommits", r.backend_counters->decommits},
                        {"recommits", r.backend_counters->recommits}};
    rows.push_back(row);
  }
  j["results"] = rows;
  j["skipped"] = ReasonsJson(out.skipped);
  j["out_of_memory"] = ReasonsJson(out.out_of_memory);
  std::cout << DumpJson(j, 1) << '\n';
}

// Below the table, per allocator: where peak_reserved comes from, the
// allocator's own statistic, the fragmentation at the peak, and what a
// device would pay (vmm's counters per pass, a virtual-memory backend's
// handles).
std::string DetailLine(const ReplayResult& r) {
  std::string line = "  " + r.allocator + ": peak_reserved from " + r.reserved_source;
  if (r.peak_held) line += "; peak_held " + WithThousands(*r.peak_held) + " from " + r.held_source;
  if (r.fragmentation) line += "; fragmentation 1 - peak_in_use / peak_reserved = " + FormatDouble(*r.fragmentation, 3);
  if (r.vmm_counters) line += "; cold pass: " + CountersText(*r.vmm_counters);
  if (r.vmm_warm_counters) line += "; warm pass: " + CountersText(*r.vmm_warm_counters);
  if (r.backend_counters)
    line += "; cold pass: " + WithThousands(r.backend_counters->handles_created) + " handles created, " +
            WithThousands(r.backend_counters->handles_released) + " released, " +
            WithThousands(r.backend_counters->decommits) + " decommits, " +
            WithThousands(r.backend_counters->recommits) + " recommits";
  return line;
}

void PrintTable(const ReplayOptions& o, const Trace& trace, const Outcome& out) {
  std::cout << InputName(o.input) << ": " << trace.events.size() << " events (" << trace.num_allocations
            << " allocations, " << trace.num_frees << " frees, " << trace.num_never_freed
            << " never freed), alignment " << o.alignment << ", median of " << o.repetitions << " passes\n";
  Table t({"allocator", "ops", "ns_per_op", "peak_in_use", "peak_reserved", "reserved_over_in_use",
           "cpu_ns_per_op", "warm_ns_per_op"});
  for (const ReplayResult& r : out.results)
    t.AddRow({r.allocator, WithThousands(r.ops), FormatDouble(r.ns_per_op, 1), WithThousands(r.peak_in_use),
              WithThousands(r.peak_reserved), FormatDouble(r.reserved_over_in_use, 3),
              FormatDouble(r.cpu_ns_per_op, 1),
              r.warm_ns_per_op ? FormatDouble(*r.warm_ns_per_op, 1) : std::string("-")});
  std::cout << t.ToString();
  for (const ReplayResult& r : out.results) std::cout << DetailLine(r) << '\n';
  for (const auto& [name, why] : out.skipped) std::cout << "  skipped " << name << ": " << why << '\n';
}

// The options checked against the allocators asked for, then the
// parameters; nothing is read or replayed before.
Result<std::pair<Selection, ReplayParams>> Prepare(const ReplayOptions& o) {
  BfcPreset preset = BfcPreset::kTensorflow;
  if (!o.bfc_preset.empty()) {
    TM_ASSIGN_OR_RETURN(preset, ParseBfcPreset(o.bfc_preset));
  }
  TM_ASSIGN_OR_RETURN(Selection s, SelectAllocators(o, preset));
  TM_ASSIGN_OR_RETURN(ReplayParams params, ParamsFrom(o, preset));
  TM_RETURN_IF_ERROR(CheckBfcOptionsApply(o, s, params));
  TM_RETURN_IF_ERROR(CheckVmmOptionsApply(o, s));
  TM_RETURN_IF_ERROR(CheckDeviceOptionsApply(o, s, params));
  TM_RETURN_IF_ERROR(CheckHtmlApplies(o, s));
  if (params.device == ReplayDevice::kCuda) {
    TM_RETURN_IF_ERROR(MakeCudaPhysicalMemory(params.cuda_device).status().WithContext("--device cuda"));
  }
  return std::make_pair(std::move(s), std::move(params));
}

int RunReplay(const ReplayOptions& o) {
  Result<std::pair<Selection, ReplayParams>> prepared = Prepare(o);
  if (!prepared.ok()) return ReportError(prepared.status());
  const auto& [selection, params] = *prepared;
  Result<Trace> trace = LoadTrace(o.input);
  if (!trace.ok()) return ReportError(trace.status());
  Result<Outcome> out = ReplayEach(*trace, selection, params);
  if (!out.ok()) return ReportError(out.status());
  if (!o.html.empty()) {
    if (Status st = WriteReplayMap(o.html, *trace, selection.allocators, params); !st.ok()) return ReportError(st);
  }
  if (o.json) PrintJson(o, *trace, *out);
  else PrintTable(o, *trace, *out);
  // The comparison is printed whole; a refusal still fails the command.
  for (const auto& [name, why] : out->out_of_memory) std::cerr << "tensormem: error: " << name << ": " << why << '\n';
  if (!out->out_of_memory.empty()) return kExitFailure;
  if (out->results.empty()) {
    std::cerr << "tensormem: error: no allocator could replay the trace\n";
    return kExitFailure;
  }
  return kExitOk;
}

// --bfc-*: the BFC allocators' parameters.
void AddBfcOptions(CLI::App* cmd, ReplayOptions* o) {
  cmd->add_option("--bfc-preset", o->bfc_preset,
                  "the parameters bfc starts from: " + internal::JoinNames(AllBfcPresets()) +
                      " (tensorflow: TensorFlow's defaults over host memory; compact: on-demand growth, "
                      "coalesce_regions, split always, over virtual memory: bfc becomes bfc_compact); the "
                      "--bfc-* options below change single parameters of bfc and bfc_compact (default: tensorflow)");
  cmd->add_option("--bfc-backend", o->bfc_backend,
                  "bfc's memory: " + internal::JoinNames(std::span<const BfcMemory>(kMemories)));
  cmd->add_option("--bfc-growth", o->bfc_growth,
                  "BFC region growth: " + internal::JoinNames(AllBfcGrowths()) +
                      " (TensorFlow: doubling; reserve_all needs --bfc-limit)");
  cmd->add_flag("--bfc-coalesce-regions", o->bfc_coalesce_regions,
                "BFC: merge adjacent regions (needs virtual memory: --bfc-backend virtual or bfc_compact)");
  cmd->add_option("--bfc-initial-region", o->bfc_initial_region,
                  "BFC first region (doubling) or smallest extension (on_demand), bytes (2 MiB)")
      ->check(Unsigned64(1, std::uint64_t{1} << 62));
  cmd->add_option("--bfc-split-cap", o->bfc_split_cap,
                  "BFC: split a chunk when the leftover is at least this many bytes (TensorFlow: "
                  "128 MiB)")
      ->check(Unsigned64());
  cmd->add_option("--bfc-fit-candidates", o->bfc_fit_candidates,
                  "BFC with granules given back (bfc_compact): the best-fitting chunks looked at for the one "
                  "whose memory is still held (8; 1 = best fit alone)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--bfc-granule-handles", o->bfc_granule_handles,
                "BFC over physical granules (--device cuda, host-granules): a handle per granule, so that "
                "bfc_compact gives free granules back as on the host (a create and a map call per granule)");
  cmd->add_option("--bfc-limit", o->bfc_limit, "BFC memory limit in bytes (0 = none)")
      ->check(Unsigned64());
}

// --device and what goes with it.
void AddDeviceOptions(CLI::App* cmd, ReplayOptions* o) {
  cmd->add_option("--device", o->device,
                  "memory of our allocators: " + internal::JoinNames(AllReplayDevices()) +
                      " (cuda: bfc on cudaMalloc, bfc_compact and vmm on CUDA virtual memory, a clear error "
                      "where no GPU is present; host-granules: host memory, bfc_compact growing over memfd "
                      "granules as over a GPU's, with its handle counts)")
      ->capture_default_str();
  cmd->add_option("--cuda-device", o->cuda_device, "CUDA device ordinal with --device cuda (0)")
      ->check(CLI::Range(0, 1023));
  cmd->add_option("--device-lag", o->device_lag,
                  "host devices: the device runs this many trace events behind the replay (an event "
                  "recorded at a free completes that many events later), as a GPU behind the CPU "
                  "queueing its work; vmm re-stitches only pages the device is done with (0)")
      ->check(Unsigned64(0, std::uint64_t{1} << 40));
}

// --vmm-*: the vmm allocator's parameters.
void AddVmmOptions(CLI::App* cmd, ReplayOptions* o) {
  cmd->add_option("--vmm-small", o->vmm_small,
                  "vmm: requests up to this many bytes go to a space of their own, apart from larger ones (0, the default: one space for every request)")
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
  cmd->add_option("--vmm-grow-ahead", o->vmm_grow_ahead,
                  "vmm: a block that grows the heap also gets the pages above it to the end of its run handle, at "
                  "most this fraction of the granules held (0 to 1; 1/1024)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--vmm-protect-refaulted", o->vmm_protect_refaulted,
                "vmm: re-stitch pages a loop no longer reaches before pages it needed again soon after they were "
                "last taken: fewer map calls in steady loops");
}

}  // namespace

void AddReplayCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay an allocation trace (RAPIDS replay-log CSV) through the allocators and "
                "malloc peers: time per operation, peak in use, peak reserved. Reserved, the same for every "
                "allocator on the host: memory taken from the system and not returned, as resident pages, "
                "measured in an untimed pass that writes every page of each block (the timed passes write "
                "nothing); peak_held is the allocator's own statistic; fragmentation = 1 - peak_in_use / "
                "peak_reserved");
  cmd->add_option("TRACE", o->input,
                  "trace CSV: Thread,Time,Action,Pointer,Size,Stream; gzip-compressed or not; '-' = standard input")
      ->required();
  cmd->add_option("--allocator,-a", o->allocator,
                  internal::JoinNames(AllReplayAllocators()) + ", a comma-separated list of them, or all")
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
  cmd->add_option("--warm-passes", o->warm_passes,
                  "passes over the same allocator after the cold one; the warm figures are the last one's "
                  "(a training loop's steady state)")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxReplayWarmPasses));
  cmd->add_flag("--no-isolate", o->no_isolate,
                "run every pass in this process instead of a forked child (later passes of a malloc peer find a warm heap)");
  cmd->add_flag("--no-page-writes", o->no_page_writes,
                "reserved from each allocator's own statistic (peak_held) instead of resident pages: the "
                "measured pass writes no pages, much faster on large traces, but the malloc peers' "
                "statistics are not comparable with ours");
  AddBfcOptions(cmd, o.get());
  cmd->add_option("--html", o->html,
                  "write an interactive memory map (x = event, y = address, reserved bytes as a "
                  "line) of the first of our allocators asked for");
  AddDeviceOptions(cmd, o.get());
  AddVmmOptions(cmd, o.get());
  cmd->callback([o, exit_code] { *exit_code = RunReplay(*o); });
}

}  // namespace tensormem::cli
