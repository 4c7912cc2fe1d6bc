#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Replays traces through every allocator and prints the table of bench/traces/BASELINE.md.

    python3 bench/capture/baseline.py --cli build/tools/tensormem/tensormem \
        --json-dir /tmp/replays GROUP=TRACE... [GROUP=TRACE...]

Each trace runs `tensormem replay TRACE -a vmm,bfc_compact,bfc,malloc,jemalloc,mimalloc -r 1 --json`
once (its JSON is kept in --json-dir when given, and read from there instead of replaying again);
the table lists per trace and allocator the peak in use, peak reserved, their ratio, the cold and
warm ns per operation, and vmm's map calls per 1,000 operations (cold pass, warm pass).
"""
import argparse
import json
import os
import subprocess
import sys

ALLOCATORS = "vmm,bfc_compact,bfc,malloc,jemalloc,mimalloc"


def trace_name(path):
    base = os.path.basename(path)
    for ext in (".csv.gz", ".csv"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def replay(cli, path, json_dir, group):
    cached = os.path.join(json_dir, f"{group}__{trace_name(path)}.json") if json_dir else None
    if cached and os.path.exists(cached):
        with open(cached) as f:
            return json.load(f)
    out = subprocess.run([cli, "replay", path, "-a", ALLOCATORS, "-r", "1", "--json"],
                         check=True, capture_output=True, text=True).stdout
    if cached:
        with open(cached, "w") as f:
            f.write(out)
    return json.loads(out)


def mib(b):
    return f"{b / 2**20:,.1f}"


def rows(group, path, doc):
    name = trace_name(path)
    for r in doc["results"]:
        maps = ""
        if "vmm" in r:
            per_k = 1000.0 / r["ops"]
            maps = f"{r['vmm']['map_calls'] * per_k:.2f} / {r['vmm_warm']['map_calls'] * per_k:.2f}"
        warm = r.get("warm_ns_per_op")
        yield (f"| {group} | {name} | {doc['events']:,} | {r['allocator']} | {mib(r['peak_in_use'])} | "
               f"{mib(r['peak_reserved'])} | {r['reserved_over_in_use']:.3f} | {r['ns_per_op']:,.0f} | "
               f"{'' if warm is None else f'{warm:,.0f}'} | {maps} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", required=True)
    p.add_argument("--json-dir")
    p.add_argument("traces", nargs="+", help="GROUP=PATH")
    args = p.parse_args()
    if args.json_dir:
        os.makedirs(args.json_dir, exist_ok=True)
    print("| set | trace | events | allocator | peak in use (MiB) | peak reserved (MiB) | reserved / in use "
          "| cold ns/op | warm ns/op | vmm map calls per 1,000 ops (cold / warm) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for item in args.traces:
        group, path = item.split("=", 1)
        for line in rows(group, path, replay(args.cli, path, args.json_dir, group)):
            print(line)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
