#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Import and plan of large synthetic ONNX graphs: seconds and peak memory.

For each size and kind (scripts/make_large_onnx.py: a chain of Relu nodes,
or a chain of residual blocks), writes the model into a temporary folder and
runs `tensormem plan MODEL` with each strategy, printing a Markdown table of
wall seconds, CPU seconds (user + system: steadier than wall time on a busy
machine) and peak resident memory (the process's maxrss).

  bench/large_onnx_bench.py --cli build/tools/tensormem/tensormem --nodes 100000 1000000

With --max-cpu-seconds / --max-mb, exits 1 when a run goes over (loose
limits, for CTest: a regression by a factor, not a timing).
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
GENERATOR = HERE.parent / "scripts" / "make_large_onnx.py"


def run(cmd):
    """(exit code, wall s, cpu s, peak MB) of cmd."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        print(f"{' '.join(cmd)}: exit {rc}: {err[-500:]}", file=sys.stderr)
    return rc, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True, help="the tensormem program")
    p.add_argument("--nodes", type=int, nargs="+", default=[100000])
    p.add_argument("--kinds", nargs="+", default=["chain", "residual"])
    p.add_argument("--strategies", nargs="+", default=["greedy_by_size", "default"],
                   help="plan strategies ('default': no -s)")
    p.add_argument("--max-cpu-seconds", type=float, help="fail when a run takes more CPU time")
    p.add_argument("--max-mb", type=float, help="fail when a run's peak memory is larger")
    a = p.parse_args()
    failed = []
    print("| kind | nodes | strategy | wall s | CPU s | peak MB |")
    print("|---|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in a.kinds:
            for n in a.nodes:
                model = pathlib.Path(tmp) / f"{kind}_{n}.onnx"
                subprocess.run([sys.executable, str(GENERATOR), "--kind", kind, "--nodes", str(n),
                                "--batch", "1", str(model)], check=True)
                for s in a.strategies:
                    cmd = [a.cli, "plan", str(model)] + ([] if s == "default" else ["-s", s])
                    rc, wall, cpu, mb = run(cmd)
                    print(f"| {kind} | {n:,} | {s} | {wall:.2f} | {cpu:.2f} | {mb:.0f} |", flush=True)
                    if rc != 0 or (a.max_cpu_seconds and cpu > a.max_cpu_seconds) or (a.max_mb and mb > a.max_mb):
                        failed.append(f"{kind} {n} {s}: exit {rc}, {cpu:.2f} CPU s, {mb:.0f} MB")
                model.unlink()
    for f in failed:
        print("FAIL:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
