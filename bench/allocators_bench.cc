// SPDX-License-Identifier: Apache-2.0
// Allocator benchmarks: allocate/free pairs (1 and 2 threads sharing one
// allocator), delayed frees (a window of live blocks), and the replay of
// every trace in ../shared/traces through every allocator.
//
// Allocators: bfc (TensorFlow's defaults on host memory), bfc_compact
// (CompactBfcParams on a VirtualMemoryBackend), pool, system, vmm (over
// host physical memory, 2 MiB granules), statistics (bfc_compact behind a
// StatisticsAdaptor: what an adaptor adds), and the malloc peers (glibc malloc, jemalloc, mimalloc via dlopen; skipped with a
// message when absent). Replays run each iteration in a forked child from a
// fresh allocator (tensormem::ReplayTrace), timed manually: the benchmark
// time is the replay loop alone; counters give ns_per_op, peak_in_use,
// peak_reserved and reserved_over_in_use. Traces are read plain or
// gzip-compressed (.csv, .csv.gz).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "harness/malloc_peers.h"
#include "tensormem/allocators/adaptors.h"
#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "harness/replay.h"
#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/system_allocator.h"
#include "tensormem/allocators/vmm_allocator.h"

namespace tensormem {
namespace {

// Allocate/free through either one of ours or a malloc peer.
class Subject {
 public:
  static std::unique_ptr<Subject> Make(const std::string& name, std::string* why) {
    auto s = std::make_unique<Subject>();
    if (name == "bfc") {
      s->resource_ = std::make_unique<BfcAllocator>(HostBackend());
    } else if (name == "bfc_compact") {
      s->backend_ = std::make_unique<VirtualMemoryBackend>();
      s->resource_ = std::make_unique<BfcAllocator>(*s->backend_, CompactBfcParams());
    } else if (name == "statistics") {
      s->backend_ = std::make_unique<VirtualMemoryBackend>();
      s->inner_ = std::make_unique<BfcAllocator>(*s->backend_, CompactBfcParams());
      s->resource_ = std::make_unique<StatisticsAdaptor>(*s->inner_);
    } else if (name == "pool") {
      s->resource_ = std::make_unique<BufferPool>(HostBackend());
    } else if (name == "system") {
      s->resource_ = std::make_unique<SystemAllocator>();
    } else if (name == "vmm") {
      Result<std::unique_ptr<HostPhysicalMemory>> memory = HostPhysicalMemory::Create();
      Result<std::unique_ptr<VmmAllocator>> vmm =
          memory.ok() ? VmmAllocator::Create(**memory) : Result<std::unique_ptr<VmmAllocator>>(memory.status());
      if (!vmm.ok()) {
        *why = vmm.status().message();
        return nullptr;
      }
      s->physical_ = std::move(*memory);
      s->resource_ = std::move(*vmm);
    } else {
      Result<ReplayAllocator> which = ParseReplayAllocator(name);
      Result<replay::MallocPeer> peer =
          which.ok() ? replay::LoadMallocPeer(*which) : Result<replay::MallocPeer>(which.status());
      if (!peer.ok()) {
        *why = peer.status().message();
        return nullptr;
      }
      s->peer_ = *peer;
    }
    return s;
  }
  void* Allocate(std::size_t bytes) {
    if (resource_) return *resource_->Allocate(bytes, 64);
    return peer_.Allocate(bytes, 64);
  }
  void Free(void* p) {
    if (resource_)
      (void)resource_->Deallocate(p);
    else
      peer_.free_fn(p);
  }

 private:
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<PhysicalMemory> physical_;  // vmm's; outlives resource_ (declared first)
  std::unique_ptr<MemoryResource> inner_;      // below an adaptor
  std::unique_ptr<MemoryResource> resource_;
  replay::MallocPeer peer_;
};

const std::vector<std::string> kSubjects = {"bfc", "bfc_compact", "statistics", "pool", "system", "vmm",
                                            "malloc", "jemalloc", "mimalloc"};

// One subject shared by the threads of a benchmark run.
std::shared_ptr<Subject> Shared(const std::string& name, benchmark::State& state) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Subject>> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = made[name];
  if (!slot) {
    std::string why;
    slot = std::shared_ptr<Subject>(Subject::Make(name, &why).release());
    if (!slot) state.SkipWithError(("unavailable: " + why).c_str());
  }
  return slot;
}

void AllocFreePairs(benchmark::State& state, const std::string& name) {
  std::shared_ptr<Subject> s = Shared(name, state);
  if (!s) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = s->Allocate(bytes);
    benchmark::DoNotOptimize(p);
    s->Free(p);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

// A window of `range(1)` live blocks of random sizes up to range(0): each
// step frees the oldest and allocates a new one.
void DelayedFrees(benchmark::State& state, const std::string& name) {
  std::shared_ptr<Subject> s = Shared(name, state);
  if (!s) return;
  const auto max_bytes = static_cast<std::size_t>(state.range(0));
  const auto window = static_cast<std::size_t>(state.range(1));
  std::mt19937_64 rng(42 + static_cast<std::uint64_t>(state.thread_index()));
  std::vector<void*> ring(window, nullptr);
  std::size_t k = 0;
  for (auto _ : state) {
    s->Free(ring[k]);  // null at first: a no-op for every subject
    ring[k] = s->Allocate(1 + rng() % max_bytes);
    benchmark::DoNotOptimize(ring[k]);
    k = (k + 1) % window;
  }
  for (void* p : ring) s->Free(p);
  state.SetItemsProcessed(state.iterations() * 2);
}

void Replay(benchmark::State& state, const Trace* trace, ReplayAllocator which) {
  ReplayParams params;
  params.repetitions = 1;
  ReplayResult last;
  for (auto _ : state) {
    Result<ReplayResult> r = ReplayTrace(*trace, which, params);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    state.SetIterationTime(r->ns_per_op * static_cast<double>(r->ops) * 1e-9);
    last = *r;
  }
  state.counters["ns_per_op"] = last.ns_per_op;
  state.counters["peak_in_use"] = static_cast<double>(last.peak_in_use);
  state.counters["peak_reserved"] = static_cast<double>(last.peak_reserved);
  state.counters["reserved_over_in_use"] = last.reserved_over_in_use;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(last.ops));
}

void RegisterAll() {
  for (const std::string& name : kSubjects) {
    benchmark::RegisterBenchmark(("AllocFreePairs/" + name).c_str(), AllocFreePairs, name)
        ->Arg(64)
        ->Arg(4096)
        ->Arg(1 << 20)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("DelayedFrees/" + name).c_str(), DelayedFrees, name)
        ->Args({4096, 64})
        ->Args({1 << 20, 256})
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  static std::vector<std::unique_ptr<Trace>> traces;
  const std::filesystem::path dir = std::filesystem::path(TENSORMEM_SHARED_DIR) / "traces";
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  auto stem_of = [](const std::filesystem::path& f) {
    const std::string name = f.filename().string();
    return name.substr(0, name.find(".csv"));
  };
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".csv") || name.ends_with(".csv.gz")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) std::fprintf(stderr, "note: no traces in %s: the replay benchmarks are skipped\n", dir.c_str());
  for (const auto& f : files) {
    Result<Trace> t = LoadTrace(f.string());
    if (!t.ok()) {
      std::fprintf(stderr, "note: %s\n", t.status().message().c_str());
      continue;
    }
    traces.push_back(std::make_unique<Trace>(std::move(*t)));
    const Trace* trace = traces.back().get();
    const std::string stem = stem_of(f);
    for (ReplayAllocator a : AllReplayAllocators()) {
      if (IsMallocPeer(a) && !MallocPeerAvailable(a).ok()) {
        std::fprintf(stderr, "note: %s skipped: %s\n", std::string(Name(a)).c_str(),
                     MallocPeerAvailable(a).message().c_str());
        continue;
      }
      const int iterations = 5;
      // Every replay allocator, bfc_compact and vmm included (their own names).
      benchmark::RegisterBenchmark(("Replay/" + stem + "/" + std::string(Name(a))).c_str(), Replay,
                                   trace, a)
          ->UseManualTime()
          ->Iterations(iterations)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace tensormem

int main(int argc, char** argv) {
  tensormem::PrepareProcessForMallocPeers(argv);  // jemalloc needs spare static TLS
  benchmark::Initialize(&argc, argv);
  tensormem::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
