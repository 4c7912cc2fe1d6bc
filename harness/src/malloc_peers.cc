// SPDX-License-Identifier: Apache-2.0
// glibc malloc, jemalloc and mimalloc as replay peers, found with dlopen so
// that none of them is linked into tensormem (and none replaces the
// process's malloc). Each peer's "reserved" figure is its own statistic:
// glibc mallinfo2 arena + hblkhd, jemalloc stats.resident (after an epoch
// refresh), mimalloc's committed bytes (after merging thread statistics).
#include "harness/malloc_peers.h"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <mutex>

namespace tensormem::replay {
namespace {

template <typename F>
bool Sym(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  return *out != nullptr;
}

using Mallinfo2Fn = struct mallinfo2 (*)();
using MallctlFn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
using MiStatsMergeFn = void (*)();
using MiProcessInfoFn = void (*)(std::size_t*, std::size_t*, std::size_t*, std::size_t*,
                                 std::size_t*, std::size_t*, std::size_t*, std::size_t*);

Mallinfo2Fn g_mallinfo2 = nullptr;
MallctlFn g_mallctl = nullptr;
MiStatsMergeFn g_mi_stats_merge = nullptr;
MiProcessInfoFn g_mi_process_info = nullptr;

// glibc's reserved figure, arena + hblkhd, grows only when the main arena's
// break moves up (sbrk) or a chunk is mmapped (requests of at least the mmap
// threshold, which starts at 128 KiB and only rises). That holds on the
// process's main thread, which allocates from the main arena; other threads
// get arenas in mmapped heaps that grow without moving the break, so there
// every allocation is sampled. And should the arena grow by more than the
// break moved (glibc maps arena memory elsewhere when sbrk fails), every
// allocation is sampled from then on.
constexpr std::size_t kMinMmapThreshold = 128 << 10;
struct GlibcWatch {
  bool every = false;
  bool thread_checked = false;  // whether this is the main thread, asked once
  void* brk = nullptr;        // the break at the last sample
  std::uint64_t arena = 0;    // mallinfo2().arena then
};
thread_local GlibcWatch t_glibc;

std::uint64_t GlibcReserved(const MallocPeer&) {
  void* brk = sbrk(0);
  const struct mallinfo2 mi = g_mallinfo2();
  GlibcWatch& w = t_glibc;
  if (!w.every && w.brk != nullptr && mi.arena > w.arena &&
      mi.arena - w.arena > static_cast<std::uint64_t>(std::max<std::ptrdiff_t>(
                               0, static_cast<char*>(brk) - static_cast<char*>(w.brk))))
    w.every = true;
  w.brk = brk;
  w.arena = mi.arena;
  return mi.arena + mi.hblkhd;
}

bool GlibcReservedMayHaveGrown(std::size_t bytes, std::size_t alignment) {
  GlibcWatch& w = t_glibc;
  // (posix_memalign asks _int_malloc for bytes + alignment + MINSIZE.)
  if (w.every || w.brk == nullptr || bytes + alignment + 64 >= kMinMmapThreshold) return true;
  if (!w.thread_checked) {
    w.thread_checked = true;
    w.every = static_cast<pid_t>(syscall(SYS_gettid)) != getpid();
    if (w.every) return true;
  }
  return sbrk(0) != w.brk;
}

std::uint64_t JemallocReserved(const MallocPeer&) {
  std::uint64_t epoch = 1;
  std::size_t len = sizeof epoch;
  g_mallctl("epoch", &epoch, &len, &epoch, len);
  std::size_t resident = 0;
  len = sizeof resident;
  if (g_mallctl("stats.resident", &resident, &len, nullptr, 0) != 0) return 0;
  return resident;
}

std::uint64_t MimallocReserved(const MallocPeer&) {
  g_mi_stats_merge();
  std::size_t elapsed, user, sys, rss, peak_rss, commit = 0, peak_commit, faults;
  g_mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
  return commit;
}

Result<MallocPeer> Load(ReplayAllocator which) {
  MallocPeer p;
  const char* lib = which == ReplayAllocator::kMalloc     ? "libc.so.6"
                    : which == ReplayAllocator::kJemalloc ? "libjemalloc.so.2"
                                                          : "libmimalloc.so.2";
  dlerror();
  p.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (p.handle == nullptr) {
    const char* why = dlerror();
    std::string msg = std::string(Name(which)) + ": cannot load " + lib + ": " + (why ? why : "?");
    if (why != nullptr && std::string(why).find("static TLS") != std::string::npos)
      msg += " (it uses initial-exec TLS: start the program with "
             "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384; `tensormem replay` does so "
             "itself)";
    return NotFound(msg);
  }
  auto missing = [&](const char* sym) {
    return NotFound(std::string(Name(which)) + ": " + lib + " has no symbol " + sym);
  };
  // glibc and jemalloc export the standard names; mimalloc its mi_ ones.
  if (which != ReplayAllocator::kMimalloc) {
    if (!Sym(p.handle, "malloc", &p.malloc_fn)) return missing("malloc");
    if (!Sym(p.handle, "posix_memalign", &p.posix_memalign_fn)) return missing("posix_memalign");
    if (!Sym(p.handle, "free", &p.free_fn)) return missing("free");
  }
  switch (which) {
    case ReplayAllocator::kMalloc:
      if (!Sym(p.handle, "mallinfo2", &g_mallinfo2)) return missing("mallinfo2");
      p.reserved_fn = GlibcReserved;
      p.reserved_may_have_grown_fn = GlibcReservedMayHaveGrown;
      p.reserved_source = "glibc mallinfo2 arena+hblkhd";
      break;
    case ReplayAllocator::kJemalloc:
      if (!Sym(p.handle, "mallctl", &g_mallctl)) return missing("mallctl");
      p.reserved_fn = JemallocReserved;
      p.reserved_source = "jemalloc stats.resident";
      break;
    default:
      if (!Sym(p.handle, "mi_malloc", &p.malloc_fn)) return missing("mi_malloc");
      if (!Sym(p.handle, "mi_malloc_aligned", &p.aligned_fn)) return missing("mi_malloc_aligned");
      if (!Sym(p.handle, "mi_free", &p.free_fn)) return missing("mi_free");
      if (!Sym(p.handle, "mi_stats_merge", &g_mi_stats_merge)) return missing("mi_stats_merge");
      if (!Sym(p.handle, "mi_process_info", &g_mi_process_info)) return missing("mi_process_info");
      p.reserved_fn = MimallocReserved;
      p.reserved_source = "mimalloc committed bytes";
      break;
  }
  return p;
}

}  // namespace

Result<MallocPeer> LoadMallocPeer(ReplayAllocator peer) {
  if (!IsMallocPeer(peer)) return InvalidArgument(std::string(Name(peer)) + " is not a malloc peer");
  static std::mutex mutex;
  static std::optional<Result<MallocPeer>> loaded[3];
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = loaded[static_cast<int>(peer) - static_cast<int>(ReplayAllocator::kMalloc)];
  if (!slot) slot.emplace(Load(peer));
  return *slot;
}

}  // namespace tensormem::replay
