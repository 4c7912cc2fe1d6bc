#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's CUDA caching allocator, simulated on a trace: its peak reserved and its driver calls.

    python3 bench/capture/torch_policy.py [--json] TRACE...

For traces no GPU replayed: what PyTorch's allocator would reserve on them, by its placement
policy alone, with the defaults of PyTorch 2.x (`PYTORCH_CUDA_ALLOC_CONF` unset) and with
`expandable_segments:True`. One stream, no limit, no `empty_cache` (as `../shared/gpu/torch_replay.py`
replays a trace). The policy, from c10/cuda/CUDACachingAllocator.cpp:

- a request is rounded up to a multiple of 512 bytes; up to 1 MiB it is served from the small
  pool, else from the large pool;
- the smallest free block of the pool that fits (ties: lowest address) serves it; it is split
  when what is left is at least 512 bytes (small pool) or more than 1 MiB (large pool); the request
  takes the block's low end;
- a free block merges with free neighbours of its own segment;
- default: with no free block that fits, a new segment comes from `cudaMalloc`: 2 MiB for the
  small pool, 20 MiB for requests under 10 MiB, else the request rounded up to 2 MiB. Segments
  are never given back. Reserved = the segments' bytes;
- expandable segments: each pool is one range of addresses mapped at its end in pages of 2 MiB
  (small pool) or 20 MiB (large pool). With no free block that fits, the free block at the end of
  the mapped part (if any) is extended by mapping pages, as many as the request needs. Reserved =
  the pages mapped, and each page is one physical allocation mapped on its own (a `cuMemCreate`
  and a `cuMemMap` per page: the map calls counted).

Each trace runs twice through one simulated allocator, as `tensormem replay` runs a cold and a
warm pass: the driver calls are counted per pass, the peak reserved in the first.

This is a model, not PyTorch: it leaves out streams, events, `max_split_size_mb`,
`roundup_power2_divisions` and garbage collection (all off by default). Its figures on the ten
shared traces are compared with PyTorch's own on an H100 in docs/benchmarks.md.
"""
import argparse
import bisect
import gzip
import json
import sys

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20


def round_up(v, m):
    return (v + m - 1) // m * m


class Block:
    __slots__ = ("addr", "size", "free", "prev", "next")

    def __init__(self, addr, size, free, prev=None, nxt=None):
        self.addr, self.size, self.free, self.prev, self.next = addr, size, free, prev, nxt


class Pool:
    """The free blocks of one pool, by (size, address)."""

    def __init__(self, small):
        self.small = small
        self.keys = []  # sorted (size, addr)
        self.blocks = {}  # addr -> free Block

    def insert(self, b):
        bisect.insort(self.keys, (b.size, b.addr))
        self.blocks[b.addr] = b

    def remove(self, b):
        i = bisect.bisect_left(self.keys, (b.size, b.addr))
        del self.keys[i]
        del self.blocks[b.addr]

    def best_fit(self, size):
        i = bisect.bisect_left(self.keys, (size, -1))
        return self.blocks[self.keys[i][1]] if i < len(self.keys) else None


class Simulator:
    def __init__(self, expandable):
        self.expandable = expandable
        self.pools = (Pool(True), Pool(False))
        self.reserved = self.peak_reserved = 0
        self.driver_calls = 0  # cudaMalloc calls, or pages mapped by expandable segments
        self.next_addr = 1 << 40
        self.tail = {}  # expandable: pool -> last block of its mapped range
        self.live = {}

    def allocate(self, handle, size):
        size = max(MIN_BLOCK, round_up(size, MIN_BLOCK))
        pool = self.pools[0] if size <= SMALL_SIZE else self.pools[1]
        b = pool.best_fit(size)
        if b is not None:
            pool.remove(b)
        else:
            b = self.grow(pool, size)
        self.split(pool, b, size)
        b.free = False
        self.live[handle] = (pool, b)

    def split(self, pool, b, size):
        rest = b.size - size
        if rest >= MIN_BLOCK if pool.small else rest > SMALL_SIZE:
            r = Block(b.addr + size, rest, True, b, b.next)
            if b.next is not None:
                b.next.prev = r
            b.next, b.size = r, size
            if self.tail.get(pool) is b:
                self.tail[pool] = r
            pool.insert(r)

    def grow(self, pool, size):
        if self.expandable:
            return self.extend(pool, size)
        seg = SMALL_BUFFER if pool.small else LARGE_BUFFER if size < MIN_LARGE_ALLOC else round_up(size, ROUND_LARGE)
        self.take(seg)
        b = Block(self.next_addr, seg, True)
        self.next_addr += seg + (1 << 30)  # segments are not adjacent: blocks never merge across them
        return b

    def extend(self, pool, size):
        page = SMALL_BUFFER if pool.small else LARGE_BUFFER
        last = self.tail.get(pool)
        if last is not None and last.free:
            pool.remove(last)
            add = round_up(size - last.size, page)
            last.size += add
            self.take(add, add // page)
            return last
        add = round_up(size, page)
        self.take(add, add // page)
        start = self.next_addr if last is None else last.addr + last.size
        if last is None:
            self.next_addr += 1 << 44
        b = Block(start, add, True, last)
        if last is not None:
            last.next = b
        self.tail[pool] = b
        return b

    def take(self, bytes_, calls=1):
        self.driver_calls += calls
        self.reserved += bytes_
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def free(self, handle):
        pool, b = self.live.pop(handle)
        b.free = True
        for n in (b.prev, b.next):
            if n is not None and n.free:
                pool.remove(n)
                b = self.merge(pool, n, b) if n is b.prev else self.merge(pool, b, n)
        pool.insert(b)

    def merge(self, pool, lo, hi):
        lo.size += hi.size
        lo.next = hi.next
        if hi.next is not None:
            hi.next.prev = lo
        if self.tail.get(pool) is hi:
            self.tail[pool] = lo
        return lo


def events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        header = next(f).strip().split(",")
        action, pointer, size = header.index("Action"), header.index("Pointer"), header.index("Size")
        for line in f:
            fields = line.rstrip("\n").split(",")
            if len(fields) < len(header):
                continue
            yield fields[action], fields[pointer], int(fields[size])


def simulate(path, expandable):
    """Two passes over one simulated allocator: the first (cold) from nothing, the second (warm)
    over the cache the first left; blocks a pass leaves live are freed between passes."""
    trace = list(events(path))
    sim, passes = Simulator(expandable), []
    for _ in range(2):
        calls_before, live, peak, ops, sizes = sim.driver_calls, 0, 0, 0, {}
        for action, pointer, size in trace:
            if action == "allocate":
                sim.allocate(pointer, size)
                sizes[pointer] = size
                live += size
                peak = max(peak, live)
                ops += 1
            elif pointer in sizes:  # a free of a block allocated before the trace began is skipped
                sim.free(pointer)
                live -= sizes.pop(pointer)
                ops += 1
        for pointer in sizes:
            sim.free(pointer)
        passes.append((sim.driver_calls - calls_before, ops, peak, sim.peak_reserved))
    (cold_calls, ops, peak, reserved), (warm_calls, _, _, _) = passes
    per_k = 1000.0 / ops if ops else 0.0
    return {"peak_in_use": peak, "peak_reserved": reserved, "ratio": reserved / peak if peak else None,
            "driver_calls": cold_calls, "calls_per_1k_ops_cold": cold_calls * per_k,
            "calls_per_1k_ops_warm": warm_calls * per_k, "ops": ops}


def calls(r):
    return f"{r['calls_per_1k_ops_cold']:.2f} / {r['calls_per_1k_ops_warm']:.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="one JSON object per trace")
    p.add_argument("traces", nargs="+")
    args = p.parse_args()
    if not args.json:
        print("| trace | peak in use (MiB) | default | default cudaMalloc / 1k ops (cold / warm) "
              "| expandable | expandable maps / 1k ops (cold / warm) |")
        print("|---|---:|---:|---|---:|---|")
    for path in args.traces:
        d, e = simulate(path, False), simulate(path, True)
        if args.json:
            print(json.dumps({"trace": path, "default": d, "expandable": e}))
        else:
            print(f"| {path} | {d['peak_in_use'] / 2**20:,.1f} | {d['ratio']:.3f} | {calls(d)} "
                  f"| {e['ratio']:.3f} | {calls(e)} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
