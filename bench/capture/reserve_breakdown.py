#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What vmm's reserve consists of at its peak, on one or more traces.

    PYTHONPATH=build/python python3 bench/capture/reserve_breakdown.py TRACE...

Per trace, from the trace alone: the sizes (share of allocations and of bytes up to 1 MiB -- what
vmm's small space takes when `small_request_bytes` sets one --, 1-2 MiB, above 2 MiB; how many large blocks are a multiple of the 2 MiB granule),
the peak in use, and the peak that a page-per-block policy would hold (every block above 1 MiB
rounded up to whole granules, small blocks packed perfectly): the cost of unshared last granules.

Then the trace is replayed through the vmm allocator of the Python package (host memory, 2 MiB
granules, default parameters) up to the first operation at which its reserve peaks, and the live
blocks there are laid on pages (a page = a granule of addresses; a "large" page has a block above
1 MiB on it, a "small" page only smaller ones):
    reserve = bytes of live blocks (as rounded)
            + unused bytes of large pages that one live block alone touches (its partial
              first/last granule)
            + unused bytes of large pages that several live blocks share (gaps between them, small
              blocks packed into a large block's last granule among them)
            + unused bytes of small pages (free room among small blocks)
            + held granules no live block touches (cached pages, unmapped granules).
Each term is printed in MiB and as a fraction of the trace's peak in use (the replay's ratio
denominator), with the in-use deficit at that moment (peak in use minus bytes in use then).

Last, bfc_compact (the Python package's BfcAllocator(preset="compact")): its reserve only grows, when
no free chunk fits a request; for its growths above the trace's peak in use, the request, the free
bytes it had then and its largest free chunk (memory held in holes that did not fit), and the
2 MiB granules of addresses its live blocks touched just after the last growth (what it would hold
if it unmapped the whole granules of its free chunks).
"""
import argparse
import gzip

import tensormem as tm

GRANULE = 2 << 20
SMALL = 1 << 20
ROUND = 512


def read_trace(path):
    """[(is_alloc, pointer, size)] in order."""
    opener = gzip.open if path.endswith(".gz") else open
    ops = []
    with opener(path, "rt") as f:
        next(f)
        for line in f:
            _, _, action, ptr, size, _ = line.rstrip("\n").split(",")
            ops.append((action == "allocate", int(ptr, 16), int(size)))
    return ops


def round_up(v, m):
    return (v + m - 1) // m * m


def size_profile(ops):
    allocs = [s for a, _, s in ops if a]
    n, total = len(allocs), sum(allocs)
    small = [s for s in allocs if round_up(s, ROUND) <= SMALL]
    mid = [s for s in allocs if SMALL < round_up(s, ROUND) <= GRANULE]
    big = [s for s in allocs if round_up(s, ROUND) > GRANULE]
    large = mid + big
    exact = sum(1 for s in large if s % GRANULE == 0)
    tails = [round_up(s, GRANULE) - s for s in large]
    return {
        "allocations": n,
        "small_count": len(small) / n, "small_bytes": sum(small) / total,
        "mid_count": len(mid) / n, "mid_bytes": sum(mid) / total,
        "big_count": len(big) / n, "big_bytes": sum(big) / total,
        "large_multiple_of_granule": exact / max(1, len(large)),
        "mean_tail_mib": (sum(tails) / max(1, len(tails))) / 2**20,
        "distinct_sizes": len(set(allocs)),
    }


def peaks(ops):
    """Peak live bytes, and the peak of a page-per-block policy (large blocks in whole granules)."""
    live, live_pp, peak, peak_pp, sizes = 0, 0, 0, 0, {}
    for is_alloc, ptr, size in ops:
        pp = round_up(size, GRANULE) if round_up(size, ROUND) > SMALL else size
        if is_alloc:
            sizes[ptr] = (size, pp)
            live += size
            live_pp += pp
            peak, peak_pp = max(peak, live), max(peak_pp, live_pp)
        elif ptr in sizes:
            s, p = sizes.pop(ptr)
            live -= s
            live_pp -= p
    return peak, peak_pp


def replay(ops, stop=None, max_handle=16):
    """Replays through vmm; returns (index of the first op at the peak reserve, the allocator,
    the live blocks {address: (requested, rounded)})."""
    a = tm.VmmAllocator(max_handle_granules=max_handle)
    addr, live = {}, {}
    best, best_i = -1, -1
    for i, (is_alloc, ptr, size) in enumerate(ops):
        if stop is not None and i > stop:
            break
        if is_alloc:
            p = a.allocate(size, 64)
            addr[ptr] = p
            live[p] = (size, round_up(size, ROUND))
        elif ptr in addr:
            p = addr.pop(ptr)
            a.free(p)
            del live[p]
        r = a.stats()["bytes_reserved"]
        if r > best:
            best, best_i = r, i
    return best_i, a, live


def breakdown(ops, peak_in_use, max_handle=16):
    stop, _, _ = replay(ops, max_handle=max_handle)
    a, live = replay(ops, stop, max_handle)[1:]
    held = a.stats()["bytes_reserved"]
    # Spaces (one by default, two with a small space) are separate address ranges, so a page is its
    # address; a page counts as "large" when a block above 1 MiB is on it (small blocks may sit in
    # a large block's last page).
    pages = {}  # page -> [covered bytes, blocks, large blocks]
    for p, (_, rounded) in live.items():
        first, last = p // GRANULE, (p + rounded - 1) // GRANULE
        for pg in range(first, last + 1):
            lo, hi = max(p, pg * GRANULE), min(p + rounded, (pg + 1) * GRANULE)
            e = pages.setdefault(pg, [0, 0, 0])
            e[0] += hi - lo
            e[1] += 1
            e[2] += rounded > SMALL
    in_use = sum(r for _, r in live.values())
    lone = sum(GRANULE - c for c, n, big in pages.values() if big and n == 1)
    shared = sum(GRANULE - c for c, n, big in pages.values() if big and n > 1)
    small = sum(GRANULE - c for c, _, big in pages.values() if not big)
    untouched = held - len(pages) * GRANULE
    return {
        "op": stop, "ops": len(ops), "held": held, "in_use": in_use,
        "rounding": sum(r - q for q, r in live.values()),
        "lone_tail": lone, "shared_gaps": shared, "small_pages": small, "untouched": untouched,
        "small_pages_n": sum(1 for _, _, big in pages.values() if not big),
        "large_pages_n": sum(1 for _, _, big in pages.values() if big),
        "deficit": peak_in_use - sum(q for q, _ in live.values()),
    }


def touched_pages(blocks):
    """Granules of addresses that the blocks {address: size} touch."""
    return len({pg for p, n in blocks.items() for pg in range(p // GRANULE, (p + n - 1) // GRANULE + 1)})


def bfc_growths(ops, peak_in_use):
    """bfc_compact's growths past the peak in use: (op, request, reserve after, free, largest free,
    granules its live blocks touch after it)."""
    a = tm.BfcAllocator(preset="compact")
    addr, sizes, out, before = {}, {}, [], a.stats()
    for i, (is_alloc, ptr, size) in enumerate(ops):
        if is_alloc:
            addr[ptr] = a.allocate(size, 64)
            sizes[addr[ptr]] = size
            after = a.stats()
            if after["bytes_reserved"] > before["bytes_reserved"] and after["bytes_reserved"] > peak_in_use:
                out.append((i, size, after["bytes_reserved"], before["free_bytes"], before["largest_free_block"],
                            touched_pages(sizes)))
            before = after
        elif ptr in addr:
            p = addr.pop(ptr)
            a.free(p)
            del sizes[p]
            before = a.stats()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("--max-handle", type=int, default=16, help="vmm max_handle_granules (16)")
    args = p.parse_args()
    for path in args.traces:
        ops = read_trace(path)
        prof = size_profile(ops)
        peak, peak_pp = peaks(ops)
        b = breakdown(ops, peak, args.max_handle)
        mib = lambda v: f"{v / 2**20:,.1f} MiB ({v / peak:.3f})"  # noqa: E731
        print(f"== {path}")
        print(f"  {prof['allocations']:,} allocations, {prof['distinct_sizes']:,} distinct sizes; "
              f"<=1 MiB {prof['small_count']:.1%} of allocations / {prof['small_bytes']:.1%} of bytes, "
              f"1-2 MiB {prof['mid_count']:.1%} / {prof['mid_bytes']:.1%}, "
              f">2 MiB {prof['big_count']:.1%} / {prof['big_bytes']:.1%}; "
              f"large blocks a multiple of 2 MiB: {prof['large_multiple_of_granule']:.1%}, "
              f"mean unused last-granule tail {prof['mean_tail_mib']:.2f} MiB")
        print(f"  peak in use {peak / 2**20:,.1f} MiB; page-per-block peak {peak_pp / 2**20:,.1f} MiB "
              f"(ratio {peak_pp / peak:.3f}); whole granules at least "
              f"{round_up(peak, GRANULE) / peak:.3f}")
        print(f"  vmm peak reserve {mib(b['held'])} first at op {b['op']:,} of {b['ops']:,}: "
              f"live blocks {mib(b['in_use'])} [of which 512-B rounding {b['rounding'] / 2**20:,.2f} MiB], "
              f"lone partial granules {mib(b['lone_tail'])}, gaps in shared large pages {mib(b['shared_gaps'])}, "
              f"free room in {b['small_pages_n']} small pages {mib(b['small_pages'])}, "
              f"held but untouched {mib(b['untouched'])}; "
              f"in-use deficit vs peak {mib(b['deficit'])}; touched pages: {b['large_pages_n']} large, "
              f"{b['small_pages_n']} small")
        growths = bfc_growths(ops, peak)
        if growths:
            i, req, res, free, largest, pages = growths[-1]
            print(f"  bfc_compact: {len(growths)} growths past the peak in use; the last at op {i:,}: a request "
                  f"of {req / 2**20:,.2f} MiB grew the reserve to {res / 2**20:,.1f} MiB ({res / peak:.3f}) while "
                  f"{free / 2**20:,.1f} MiB sat free in holes, the largest {largest / 2**20:,.2f} MiB; its live "
                  f"blocks then touched {pages} granules ({pages * GRANULE / peak:.3f})")


if __name__ == "__main__":
    main()
