#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The solver's answers and node counts on a set of problems, one line each,
so that a refactor of the solver can be checked to change neither: run it
with the CLI before and after, and diff the two outputs.

  scripts/solver_fingerprint.py BUILD/tools/tensormem/tensormem ../shared/benchmarks/minimalloc/*.csv > after.txt

Each problem is solved with every --variant (default: minimise; fit in
1 MiB; minimise within 1 MiB) under a node limit (machine-independent) and a
time limit long enough not to end a solve first. A line: file, variant,
status, height, lower bound, nodes.
"""
import argparse
import json
import os
import subprocess
import sys

DEFAULT_VARIANTS = ["", "--capacity 1048576", "--minimize --capacity 1048576"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli", help="the tensormem binary")
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--time-limit", type=float, default=600)
    ap.add_argument("--variant", action="append", help="extra solve options (repeatable)")
    args = ap.parse_args()
    for path in args.problems:
        for variant in args.variant or DEFAULT_VARIANTS:
            cmd = [args.cli, "solve", path, "--nodes", str(args.nodes), "-t", str(args.time_limit), "--json",
                   *variant.split()]
            r = subprocess.run(cmd, capture_output=True, text=True)
            try:
                j = json.loads(r.stdout.strip().splitlines()[-1])
                fields = [j.get("status"), j.get("height"), j.get("lower_bound"), j.get("nodes")]
            except (ValueError, IndexError):
                fields = ["error", r.returncode, r.stderr.strip().splitlines()[-1:] or ""]
            print(os.path.basename(path), f"[{variant}]", *fields)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
