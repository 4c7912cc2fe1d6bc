#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python call overhead of tensormem.plan against the C++ call.

For n buffers (random lifetimes and sizes, NumPy int64 arrays) and a
strategy, times:
- python: tm.plan(sizes, first, last, ...) from Python (wall clock), which
  includes reading the arrays, building the records, the C++ call with the
  GIL released, and wrapping the offsets as a NumPy view;
- cpp: the same PlanOffsets call on records already built, timed in C++
  (tensormem._tensormem._time_plan_cpp: steady_clock and the thread's CPU
  clock around the call).
The two alternate, `repeats` times each (so a busy machine slows both
alike); the medians are compared: overhead = python / cpp - 1, for the wall
clock and for the thread's CPU time (robust when other work shares the
CPUs).

Usage: PYTHONPATH=build/python python3 python/bench/plan_overhead.py [--sizes 10,1000,100000]
       [--strategy best] [--repeats N]
"""
import argparse
import statistics
import time

import numpy as np

import tensormem as tm
from tensormem import _tensormem as _tm


def problem(n, seed=7):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 4 * n, n)
    last = first + rng.integers(0, 64, n)
    sizes = rng.integers(1, 1 << 14, n) * 64
    return sizes, first, last


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,1000,100000")
    ap.add_argument("--strategy", default="best")
    ap.add_argument("--alignment", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=0, help="0: by size (201 / 41 / 9)")
    a = ap.parse_args()
    print(f"strategy {a.strategy}, alignment {a.alignment}; median of the repeats")
    print(f"{'buffers':>9} {'repeats':>7} {'cpp_ms':>10} {'python_ms':>10} {'overhead_us':>11} "
          f"{'overhead':>9} {'cpu_cpp_ms':>10} {'cpu_py_ms':>10} {'cpu_overhead':>12}")
    for n in (int(x) for x in a.sizes.split(",")):
        sizes, first, last = problem(n)
        reps = a.repeats or (201 if n <= 100 else 41 if n <= 10_000 else 9)
        tm.plan(sizes, first, last, strategy=a.strategy, alignment=a.alignment)  # warm up
        py, py_cpu, cpp, cpp_cpu = [], [], [], []
        for _ in range(reps):
            c = time.thread_time()
            t = time.perf_counter()
            tm.plan(sizes, first, last, strategy=a.strategy, alignment=a.alignment)
            py.append(time.perf_counter() - t)
            py_cpu.append(time.thread_time() - c)
            wall, cpu = _tm._time_plan_cpp(sizes, first, last, a.strategy, a.alignment)
            cpp.append(wall)
            cpp_cpu.append(cpu)
        p, c = statistics.median(py), statistics.median(cpp)
        pc, cc = statistics.median(py_cpu), statistics.median(cpp_cpu)
        print(f"{n:>9,} {reps:>7} {c * 1e3:>10.3f} {p * 1e3:>10.3f} {(p - c) * 1e6:>11.1f} "
              f"{(p / c - 1) * 100:>8.2f}% {cc * 1e3:>10.3f} {pc * 1e3:>10.3f} {(pc / cc - 1) * 100:>11.2f}%")


if __name__ == "__main__":
    main()
