#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Peak resident memory of glibc malloc, jemalloc and mimalloc on a trace, the blocks' pages touched.

    python3 bench/capture/rss_replay.py TRACE...

`tensormem replay` never writes to the blocks it allocates, so a peer's untouched pages are never
resident, and each peer's own counter ("reserved") means something different (mimalloc's is
commit bookkeeping). This replays the trace through each peer with one byte written per 4 KiB page
of every block (rss_replay.c, built into a temporary folder; jemalloc and mimalloc by LD_PRELOAD of
Debian's libjemalloc2 / libmimalloc2.0) and prints the peak resident bytes over the trace's peak in
use: the memory a process would have taken from the system. mimalloc (and jemalloc, on a longer
scale) give freed memory back after a delay in milliseconds, so their figure depends on how fast
the replay runs: compare runs on a quiet machine.
"""
import gzip
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = {"malloc": None, "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
         "mimalloc": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"}


def encode_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    live_ids, sizes, out = {}, {}, bytearray()
    n_blocks, live, peak = 0, 0, 0
    with opener(path, "rt") as f:
        next(f)
        for line in f:
            _, _, action, ptr, size, _ = line.rstrip("\n").split(",")
            if action == "allocate":
                live_ids[ptr] = n_blocks
                sizes[ptr] = int(size)
                out += struct.pack("<qq", n_blocks, int(size))
                n_blocks += 1
                live += int(size)
                peak = max(peak, live)
            elif ptr in live_ids:
                out += struct.pack("<qq", -1 - live_ids.pop(ptr), 0)
                live -= sizes.pop(ptr)
    return bytes(out), peak


def main():
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "rss_replay")
        subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(HERE, "rss_replay.c")], check=True)
        print("| trace | peak in use (MiB) | " + " | ".join(f"{p} peak RSS (MiB, ratio)" for p in PEERS) + " |")
        print("|---" * (2 + len(PEERS)) + "|")
        for path in sys.argv[1:]:
            data, peak = encode_trace(path)
            cells = []
            for peer, lib in PEERS.items():
                env = dict(os.environ)
                if lib:
                    env["LD_PRELOAD"] = lib
                out = subprocess.run([exe], input=data, env=env, capture_output=True, check=True).stdout.decode()
                rss = int(out.split()[-1])
                cells.append(f"{rss / 2**20:,.1f} ({rss / peak:.3f})")
            name = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
            print(f"| {name} | {peak / 2**20:,.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
