// Replays an allocation trace through the C library's allocator -- or through jemalloc or mimalloc
// put in front of it with LD_PRELOAD -- writing one byte in every 4 KiB page of each block as it
// is allocated (as a program would use it), and reports the peak resident memory it took: the
// memory obtained from the system and not returned, sampled the same way for every allocator.
//
// Input (stdin): the trace as little-endian int64 pairs, one per operation: (k, size) allocates
// block k (0, 1, 2, ... in order) of `size` bytes, (-1 - k, 0) frees block k. rss_replay.py
// writes it from a replay-log CSV, builds this file and runs it for each allocator.
// Output: "ops N peak_rss_over_baseline BYTES" (resident bytes sampled after every operation from
// /proc/self/statm, minus those resident before the first).
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long page_size;

static uint64_t resident(int fd) {
  char buf[128];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long size = 0, rss = 0;
  if (sscanf(buf, "%llu %llu", &size, &rss) != 2) return 0;
  return (uint64_t)rss * (uint64_t)page_size;
}

int main(void) {
  page_size = sysconf(_SC_PAGESIZE);
  size_t cap = 1 << 20, n = 0;
  int64_t *ops = malloc(cap * 2 * sizeof *ops);
  while (ops && fread(ops + 2 * n, sizeof *ops, 2, stdin) == 2)
    if (++n == cap) ops = realloc(ops, (cap *= 2) * 2 * sizeof *ops);
  if (!ops) return 1;
  size_t blocks = 0;
  for (size_t i = 0; i < n; i++) if (ops[2 * i] >= 0) blocks++;
  char **ptr = calloc(blocks + 1, sizeof *ptr);
  memset(ptr, 0, (blocks + 1) * sizeof *ptr);  // resident before the baseline
  int fd = open("/proc/self/statm", O_RDONLY);
  const uint64_t base = resident(fd);
  uint64_t peak = base;
  for (size_t i = 0; i < n; i++) {
    const int64_t k = ops[2 * i];
    if (k >= 0) {
      const size_t size = (size_t)ops[2 * i + 1];
      void *p = NULL;
      if (posix_memalign(&p, 64, size) != 0) { fprintf(stderr, "out of memory at op %zu\n", i); return 1; }
      for (size_t off = 0; off < size; off += 4096) ((volatile char *)p)[off] = 1;
      ptr[k] = p;
    } else {
      free(ptr[-1 - k]);
      ptr[-1 - k] = NULL;
    }
    const uint64_t r = resident(fd);
    if (r > peak) peak = r;
  }
  printf("ops %zu peak_rss_over_baseline %llu\n", n, (unsigned long long)(peak - base));
  return 0;
}
