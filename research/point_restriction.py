#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Research driver, not part of the library: a start plan for
overlap_local_search.cc from restrictions of a problem to sets of task points
(docs/design/solver.md, "A plan of J at 993,280").

Every two buffers that are live at once are both live at the later of their
first tasks, so a problem is the same as its restriction to its start points
P. Keeping only a subset S of P (each buffer cut to the points of S it spans,
the time axis closed up) is a relaxation R(S) with fewer sections. The loop:

1. solve R(S) at the capacity with `tensormem solve --capacity` (the time
   limit, retried with other row orders when unknown);
2. fix every buffer of R(S) at its offset; the buffers live at no point of S
   lie in the gaps between two points of S, and each gap is solved alone with
   the fixed buffers that cross it as obstacles;
3. where a gap fails, add its most loaded start point to S and go to 1.

It stops when every gap's free buffers fit (the start plan: R(S)'s offsets
and the gaps' plans, written to OUT), when R(S) is infeasible (then so is the
problem: a proof) or unknown. Two fixed buffers that meet only inside a gap
are not checked (R(S) never sees them together): they are what the local
search repairs; the number of such pairs is printed.

Two options (docs/design/solver.md, "Restrictions repaired by local search"):
--local-search LS: where the exact solve of R(S) is unknown, repair the
previous step's plan of R(S) (new buffers, or all at the first step, at 0) with LS (overlap_local_search, --ls-steps steps,
--ls-seeds seeds, offsets in --granule units); --add-violations N: once every
gap fits, add the start points of up to N (most loaded first) of the pairs
that overlap in the whole plan to S and go on, so the loop ends only with a
plan of the whole problem (OUT, no pair overlapping) or an unknown step.

  point_restriction.py TENSORMEM PROBLEM.csv CAPACITY OUT.csv [--time-limit 60]
      [--gap-time-limit 3] [--segments 8] [--tries 2] [--seed 1] [--work DIR]
      [--local-search LS [--ls-steps 5000000] [--ls-seeds 3] [--granule 1024]]
      [--add-violations N]
Exit 0: OUT written; 3: R(S) infeasible; 4: R(S) unknown; 2: bad input.
"""
import argparse
import bisect
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print(f"point_restriction: {msg}", file=sys.stderr)
    sys.exit(2)


def read_problem(path):
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    bufs = []
    for n, r in enumerate(rows, start=2):
        try:
            b = (r["id"], int(r["lower"]), int(r["upper"]), int(r["size"]))
        except (KeyError, TypeError, ValueError):
            fail(f"{path}:{n}: needs integer lower, upper, size and an id")
        if b[2] <= b[1] or b[3] < 0 or b[1] < 0:
            fail(f"{path}:{n}: buffer '{b[0]}' has lower {b[1]}, upper {b[2]}, size {b[3]}")
        bufs.append(b)
    if not bufs:
        fail(f"{path}: no buffers")
    return bufs


def write(path, bufs, fixed, seed):
    bufs = list(bufs)
    if seed:
        random.Random(seed).shuffle(bufs)
    with open(path, "w") as f:
        f.write("id,lower,upper,size,offset\n")
        for (i, lo, up, sz) in bufs:
            f.write(f"{i},{lo},{up},{sz},{fixed.get(i, '')}\n")


def solve(tm, path, cap, limit):
    out = path + ".plan.csv"
    if os.path.exists(out):
        os.remove(out)
    # The search at the capacity alone: the plans of R(S) decide the start, and
    # with the descent beside it (the default since 2026-12-01) J's loop ends
    # unknown at step 13 in both tries (docs/design/solver.md, "A plan of J at 993,280").
    p = subprocess.run([tm, "solve", path, "--capacity", str(cap), "--time-limit", str(limit), "--json",
                        "--tuning", "fit_descent=false", "-o", out],
                       capture_output=True, text=True)
    if p.returncode == 2:
        fail(f"{path}: {p.stderr.strip()}")
    j = json.loads(p.stdout.strip().splitlines()[-1])
    plan = None
    if p.returncode == 0:
        plan = {r["id"]: int(r["offset"]) for r in csv.DictReader(open(out))}
    return j, plan


def overlapping(B, off):
    return [(u, v) for u in range(len(B)) for v in range(u + 1, len(B))
            if B[u][1] < B[v][2] and B[v][1] < B[u][2]
            and off[B[u][0]] < off[B[v][0]] + B[v][3] and off[B[v][0]] < off[B[u][0]] + B[u][3]]


def repair(a, work, it, R, previous):
    """R(S)'s plan by local search from the last step's plan (new buffers at 0)."""
    problem, start, out = (os.path.join(work, f"{x}{it}.csv") for x in ("LR", "LS", "LP"))
    with open(problem, "w") as f:
        f.write("id,lower,upper,size\n")
        f.writelines(f"{i},{lo},{up},{sz}\n" for (i, lo, up, sz) in R)
    with open(start, "w") as f:
        f.write("id,offset\n")
        f.writelines(f"{i},{min(previous.get(i, 0), a.capacity - sz)}\n" for (i, _, _, sz) in R)
    for seed in range(a.seed * 100000 + it * 100 + 1, a.seed * 100000 + it * 100 + a.ls_seeds + 1):
        p = subprocess.run([a.local_search, problem, start, str(a.capacity), str(a.granule), str(a.ls_steps),
                            str(seed), out], capture_output=True, text=True)
        if p.returncode == 2:
            fail(f"{problem}: {p.stderr.strip()}")
        print(f"  local search, seed {seed}: {p.stdout.strip()}", flush=True)
        if p.returncode == 0:
            return {"status": "repaired"}, {r["id"]: int(r["offset"]) for r in csv.DictReader(open(out))}
    return {"status": "unknown"}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tensormem")
    ap.add_argument("problem")
    ap.add_argument("capacity", type=int)
    ap.add_argument("out")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--gap-time-limit", type=float, default=3)
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--tries", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work")
    ap.add_argument("--local-search")
    ap.add_argument("--ls-steps", type=int, default=5000000)
    ap.add_argument("--ls-seeds", type=int, default=3)
    ap.add_argument("--granule", type=int, default=1024)
    ap.add_argument("--add-violations", type=int, default=0)
    a = ap.parse_args()
    if a.capacity <= 0 or a.segments <= 0 or a.tries <= 0 or a.time_limit <= 0 or a.gap_time_limit <= 0:
        fail("capacity, --segments, --tries and the time limits must be positive")
    if a.ls_steps <= 0 or a.ls_seeds <= 0 or a.granule <= 0 or a.add_violations < 0:
        fail("--ls-steps, --ls-seeds and --granule must be positive, --add-violations not negative")
    B = read_problem(a.problem)
    work = a.work or tempfile.mkdtemp(prefix="point_restriction_")
    os.makedirs(work, exist_ok=True)
    P = sorted({lo for (_, lo, _, _) in B})
    load = {p: sum(sz for (_, lo, up, sz) in B if lo <= p < up) for p in P}
    # Start: the most loaded point, and the most loaded point of each of
    # `segments` runs of consecutive start points.
    S = {max(P, key=lambda p: load[p])}
    k = a.segments
    for s in range(k):
        seg = P[s * len(P) // k:(s + 1) * len(P) // k]
        if seg:
            S.add(max(seg, key=lambda p: load[p]))
    it = 0
    previous = {}  # the last step's plan of R(S), the local search's start (0 where none)
    while True:
        it += 1
        t0 = time.time()
        Sl = sorted(S)
        R = []
        for (i, lo, up, sz) in B:
            x, y = bisect.bisect_left(Sl, lo), bisect.bisect_left(Sl, up)
            if y > x:
                R.append((i, x, y, sz))
        for t in range(a.tries):
            path = os.path.join(work, f"R{it}.csv")
            write(path, R, {}, a.seed + it * 100 + t)
            j, plan = solve(a.tensormem, path, a.capacity, a.time_limit)
            if plan is not None or j.get("status") == "infeasible":
                break
        if plan is None and a.local_search and j.get("status") != "infeasible":
            j, plan = repair(a, work, it, R, previous)
        print(f"step {it}: {len(S)} of {len(P)} points, {len(R)} buffers: {j.get('status')} "
              f"({j.get('nodes')} nodes, {time.time() - t0:.1f} s)", flush=True)
        if plan is None:
            if j.get("status") == "infeasible":
                print(f"the restriction to {len(S)} points does not fit {a.capacity}: neither does the problem")
                sys.exit(3)
            sys.exit(4)
        previous = plan
        fixed = {i: plan[i] for (i, _, _, _) in R}
        full = dict(fixed)
        bounds = [-1] + Sl + [float("inf")]
        failed = 0
        for g in range(len(bounds) - 1):
            lo_g, hi_g = bounds[g], bounds[g + 1]
            free = [x for x in B if x[0] not in fixed and x[1] > lo_g and x[2] <= hi_g]
            if not free:
                continue
            obstacles = [(i, max(lo, lo_g + 1), min(up, hi_g), sz) for (i, lo, up, sz) in B
                         if i in fixed and lo < hi_g and up > lo_g + 1]
            gp = os.path.join(work, f"G{it}_{g}.csv")
            write(gp, free + obstacles, fixed, 0)
            _, gplan = solve(a.tensormem, gp, a.capacity, a.gap_time_limit)
            if gplan is None:
                failed += 1
                S.add(max((p for p in P if lo_g < p < hi_g), key=lambda p: load[p]))
            else:
                for (i, _, _, _) in free:
                    full[i] = gplan[i]
        print(f"  gaps failed: {failed}", flush=True)
        if failed == 0:
            pairs = overlapping(B, full)
            if not a.add_violations or not pairs:
                break
            points = {max(B[u][1], B[v][1]) for (u, v) in pairs}
            print(f"  {len(pairs)} pairs overlap, at {len(points)} points", flush=True)
            S.update(sorted(points, key=lambda p: -load[p])[:a.add_violations])
    collisions = len(overlapping(B, full))
    with open(a.out, "w") as f:
        f.write("id,offset\n")
        for (i, _, _, _) in B:
            f.write(f"{i},{full[i]}\n")
    print(f"start plan written to {a.out}: {collisions} pairs of buffers overlap (for the local search)")


if __name__ == "__main__":
    main()
