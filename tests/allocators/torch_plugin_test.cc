// SPDX-License-Identifier: Apache-2.0
// The PyTorch plug-in as PyTorch loads it: dlopen, then the C functions by
// name. Without a GPU every allocation fails with "no device" and nothing
// crashes; with one, memory round-trips and the statistics follow.
#include <dlfcn.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "out_of_memory.h"
#include "tensormem/allocators/physical_memory.h"

namespace tensormem {
namespace {

struct Plugin {
  void* handle = nullptr;
  void* (*malloc_fn)(ssize_t, int, void*) = nullptr;
  void* (*malloc_or_raise_fn)(ssize_t, int, void*) = nullptr;
  void (*free_fn)(void*, ssize_t, int, void*) = nullptr;
  size_t (*stats_fn)(int, char*, size_t) = nullptr;
  long long (*release_fn)(int) = nullptr;
  const char* (*error_fn)() = nullptr;
  void (*record_stream_fn)(void*, void*) = nullptr;
  void (*empty_cache_fn)() = nullptr;
  void (*fraction_fn)(double, int) = nullptr;
};

Plugin Load() {
  Plugin p;
  p.handle = dlopen(TENSORMEM_TORCH_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(p.handle, nullptr) << dlerror();
  if (p.handle == nullptr) return p;
  p.malloc_fn = reinterpret_cast<decltype(p.malloc_fn)>(dlsym(p.handle, "tensormem_torch_malloc"));
  p.malloc_or_raise_fn =
      reinterpret_cast<decltype(p.malloc_or_raise_fn)>(dlsym(p.handle, "tensormem_torch_malloc_or_raise"));
  p.free_fn = reinterpret_cast<decltype(p.free_fn)>(dlsym(p.handle, "tensormem_torch_free"));
  p.stats_fn = reinterpret_cast<decltype(p.stats_fn)>(dlsym(p.handle, "tensormem_torch_stats"));
  p.release_fn = reinterpret_cast<decltype(p.release_fn)>(dlsym(p.handle, "tensormem_torch_release_cached"));
  p.error_fn = reinterpret_cast<decltype(p.error_fn)>(dlsym(p.handle, "tensormem_torch_last_error"));
  p.record_stream_fn = reinterpret_cast<decltype(p.record_stream_fn)>(dlsym(p.handle, "tensormem_torch_record_stream"));
  p.empty_cache_fn = reinterpret_cast<decltype(p.empty_cache_fn)>(dlsym(p.handle, "tensormem_torch_empty_cache"));
  p.fraction_fn = reinterpret_cast<decltype(p.fraction_fn)>(dlsym(p.handle, "tensormem_torch_set_memory_fraction"));
  return p;
}

std::string Stats(const Plugin& p, int device) {
  char buf[2048];
  const size_t n = p.stats_fn(device, buf, sizeof buf);
  EXPECT_LT(n, sizeof buf);
  return buf;
}

TEST(TorchPlugin, ExportsTheFunctionsPyTorchLoads) {
  Plugin p = Load();
  ASSERT_NE(p.handle, nullptr);
  ASSERT_NE(p.malloc_fn, nullptr);
  ASSERT_NE(p.malloc_or_raise_fn, nullptr);
  ASSERT_NE(p.free_fn, nullptr);
  ASSERT_NE(p.stats_fn, nullptr);
  ASSERT_NE(p.release_fn, nullptr);
  ASSERT_NE(p.error_fn, nullptr);
  ASSERT_NE(p.record_stream_fn, nullptr);
  ASSERT_NE(p.empty_cache_fn, nullptr);
  ASSERT_NE(p.fraction_fn, nullptr);
  // Only the C interface is exported, not the library inside.
  EXPECT_EQ(dlsym(p.handle, "_ZN9tensormem12VmmAllocator6CreateERNS_14PhysicalMemoryERKNS_9VmmParamsE"), nullptr);
  EXPECT_EQ(Stats(p, 3), "{}");  // a device never used
  EXPECT_EQ(p.malloc_fn(-1, 0, nullptr), nullptr);
  EXPECT_NE(std::string(p.error_fn()).find("negative size"), std::string::npos);
  EXPECT_EQ(p.malloc_fn(100, 999, nullptr), nullptr);
  EXPECT_NE(std::string(p.error_fn()).find("out of range"), std::string::npos);
  // What PyTorch loads throws instead: PyTorch takes a NULL for a tensor.
  for (const ssize_t size : {ssize_t{-1}, ssize_t{100}}) {
    try {
      (void)p.malloc_or_raise_fn(size, 999, nullptr);
      ADD_FAILURE() << "no exception for size " << size;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(size < 0 ? "negative size" : "out of range"), std::string::npos)
          << e.what();
    }
  }
  int local = 0;
  p.free_fn(&local, 4, 5, nullptr);  // a device with no allocator: an error, not a crash
  EXPECT_NE(std::string(p.error_fn()).find("has no allocator"), std::string::npos);
  EXPECT_EQ(p.release_fn(5), 0);
  p.record_stream_fn(&local, nullptr);  // no device gave it out: an error, not a crash
  EXPECT_NE(std::string(p.error_fn()).find("no device's allocator"), std::string::npos) << p.error_fn();
  p.empty_cache_fn();  // no device used: nothing to give back
  p.fraction_fn(1.5, 0);
  EXPECT_NE(std::string(p.error_fn()).find("not in [0, 1]"), std::string::npos) << p.error_fn();
  p.fraction_fn(0.5, 999);
  EXPECT_NE(std::string(p.error_fn()).find("out of range"), std::string::npos) << p.error_fn();
}

// A refusal for want of memory reads as PyTorch's own, so that tools that
// recognise an out-of-memory RuntimeError by its message recognise it: the
// conditions below are Lightning's and toma's is_cuda_out_of_memory and
// accelerate's should_reduce_batch_size.
TEST(TorchPlugin, OutOfMemoryReadsAsPyTorchsOwn) {
  const std::string m = torch_plugin::OutOfMemoryMessage(
      std::uint64_t{1825361101}, 0, ResourceExhausted("vmm: out of memory allocating 1825361101 bytes"));
  EXPECT_EQ(m.rfind("CUDA out of memory. Tried to allocate 1.7 GiB (1825361101 bytes) on GPU 0", 0), 0u) << m;
  EXPECT_TRUE(m.find("CUDA") != std::string::npos && m.find("out of memory") != std::string::npos) << m;
  EXPECT_NE(m.find("CUDA out of memory."), std::string::npos) << m;
  EXPECT_NE(m.find("vmm: out of memory allocating 1825361101 bytes"), std::string::npos) << m;  // ours kept
}

TEST(TorchPlugin, AllocatesOnTheGpuOrSaysThereIsNone) {
  Plugin p = Load();
  ASSERT_NE(p.handle, nullptr);
  const bool gpu = MakeCudaPhysicalMemory(0).ok();
  void* a = p.malloc_fn(1 << 20, 0, nullptr);
  if (!gpu) {
    EXPECT_EQ(a, nullptr);
    EXPECT_NE(std::string(p.error_fn()).find("no device"), std::string::npos) << p.error_fn();
    GTEST_SKIP() << "no GPU: " << p.error_fn();
  }
  ASSERT_NE(a, nullptr) << p.error_fn();
  void* b = p.malloc_fn(3 << 20, 0, nullptr);
  ASSERT_NE(b, nullptr) << p.error_fn();
  nlohmann::json s = nlohmann::json::parse(Stats(p, 0));
  EXPECT_EQ(s["num_allocs"], 2);
  EXPECT_GE(s["bytes_reserved"].get<std::uint64_t>(), std::uint64_t{4} << 20);
  p.free_fn(a, 1 << 20, 0, nullptr);
  p.free_fn(b, 3 << 20, 0, nullptr);
  s = nlohmann::json::parse(Stats(p, 0));
  EXPECT_EQ(s["bytes_in_use"], 0);
  EXPECT_GT(p.release_fn(0), 0);
  s = nlohmann::json::parse(Stats(p, 0));
  EXPECT_EQ(s["bytes_reserved"], 0);
}

}  // namespace
}  // namespace tensormem
