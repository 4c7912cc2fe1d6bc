#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Replays traces through every allocator and prints the table of bench/traces/BASELINE.md.

    python3 bench/capture/baseline.py --cli build/tools/tensormem/tensormem [--heldout] \
        [--json-dir /tmp/replays] [GROUP=TRACE...]

Without GROUP=TRACE arguments it replays every trace of bench/traces/tune (set `tune`) and
../shared/traces (set `shared`), and with --heldout also bench/traces/heldout (set `heldout`: run
it once, at the end). Each trace runs
`tensormem replay TRACE -a vmm,bfc_compact,bfc,pool,malloc,jemalloc,mimalloc -r 1 --json` once
(its JSON is kept in --json-dir when given, and read from there instead of replaying again).

Per trace and allocator the table lists the peak in use, the peak reserved (`replay`'s one
definition: resident pages, every block's pages written, in an untimed pass), their ratio, the
allocator's own statistic (held), the cold and warm ns per operation, and the calls a GPU would
pay per 1,000 operations: vmm's map calls (cold pass / warm pass), bfc_compact's decommits +
recommits (cold pass). A trace whose peak in use is above --max-in-use-mib (default: none) is listed as skipped;
replay itself uses the allocator's statistic for a trace over half the memory available.
"""
import argparse
import glob
import gzip
import json
import os
import subprocess
import sys

ALLOCATORS = "vmm,bfc_compact,bfc,pool,malloc,jemalloc,mimalloc"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = ("| set | trace | events | allocator | peak in use (MiB) | peak reserved (MiB) | reserved / in use "
          "| held (MiB) | cold ns/op | warm ns/op | GPU calls per 1,000 ops |")


def trace_name(path):
    base = os.path.basename(path)
    for ext in (".csv.gz", ".csv"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def default_traces(heldout):
    sets = [("tune", os.path.join(ROOT, "bench/traces/tune")),
            ("shared", os.path.join(ROOT, "../shared/traces"))]
    if heldout:
        sets.append(("heldout", os.path.join(ROOT, "bench/traces/heldout")))
    out = []
    for group, folder in sets:
        for path in sorted(glob.glob(os.path.join(folder, "*.csv*"))):
            out.append((group, path))
    return out


def peak_in_use(path):
    """The trace's peak of live bytes (Thread,Time,Action,Pointer,Size,Stream)."""
    opener = gzip.open if path.endswith(".gz") else open
    live, sizes, peak = 0, {}, 0
    with opener(path, "rt") as f:
        next(f)
        for line in f:
            fields = line.split(",")
            if len(fields) < 5:
                continue
            if fields[2] == "allocate":
                sizes[fields[3]] = int(fields[4])
                live += int(fields[4])
                peak = max(peak, live)
            elif fields[3] in sizes:
                live -= sizes.pop(fields[3])
    return peak


def replay(cli, path, json_dir, group, allocators):
    cached = os.path.join(json_dir, f"{group}__{trace_name(path)}.json") if json_dir else None
    if cached and os.path.exists(cached):
        with open(cached) as f:
            return json.load(f)
    out = subprocess.run([cli, "replay", path, "-a", allocators, "-r", "1", "--json"],
                         check=True, capture_output=True, text=True).stdout
    if cached:
        with open(cached, "w") as f:
            f.write(out)
    return json.loads(out)


def mib(b):
    return "" if b is None else f"{b / 2**20:,.1f}"


def gpu_calls(r):
    per_k = 1000.0 / r["ops"] if r["ops"] else 0.0
    if "vmm" in r:
        return f"{r['vmm']['map_calls'] * per_k:.2f} / {r['vmm_warm']['map_calls'] * per_k:.2f}"
    if "backend" in r:
        b = r["backend"]
        return f"{(b['decommits'] + b['recommits'] + b['handles_created']) * per_k:.2f}"
    return ""


def rows(group, path, doc):
    name = trace_name(path)
    for r in doc["results"]:
        warm = r.get("warm_ns_per_op")
        ratio = r["reserved_over_in_use"]
        ratio = "" if ratio is None else f"{ratio:.3f}"
        yield (f"| {group} | {name} | {doc['events']:,} | {r['allocator']} | {mib(r['peak_in_use'])} | "
               f"{mib(r['peak_reserved'])} | {ratio} | {mib(r.get('peak_held'))} | {r['ns_per_op']:,.0f} | "
               f"{'' if warm is None else f'{warm:,.0f}'} | {gpu_calls(r)} |")
    for s in doc.get("skipped", []):
        yield f"| {group} | {name} | {doc['events']:,} | {s['allocator']} | skipped: {s['reason']} |||||||"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", default=os.path.join(ROOT, "build/tools/tensormem/tensormem"))
    p.add_argument("--json-dir")
    p.add_argument("--allocators", default=ALLOCATORS, help="replay's -a (default: %(default)s)")
    p.add_argument("--heldout", action="store_true", help="also the held-out traces (run them once, at the end)")
    p.add_argument("--max-in-use-mib", type=float, help="skip traces whose peak in use is above this")
    p.add_argument("traces", nargs="*", help="GROUP=PATH (default: every tune and shared trace)")
    args = p.parse_args()
    if args.json_dir:
        os.makedirs(args.json_dir, exist_ok=True)
    traces = [tuple(t.split("=", 1)) for t in args.traces] or default_traces(args.heldout)
    # By default no trace is skipped: replay itself measures a trace larger than half the memory
    # available by the allocator's own statistic (its reserved_source says so).
    limit = args.max_in_use_mib * 2**20 if args.max_in_use_mib else float("inf")
    print(HEADER)
    print("|---" * HEADER.count(" | ") + "|---|")
    for group, path in traces:
        peak = peak_in_use(path)
        if peak > limit:
            print(f"| {group} | {trace_name(path)} | | (all) | {mib(peak)} | skipped: peak in use above "
                  f"{mib(limit)} MiB (the measured pass writes every page) |||||||")
            continue
        for line in rows(group, path, replay(args.cli, path, args.json_dir, group, args.allocators)):
            print(line)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
