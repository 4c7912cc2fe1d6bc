#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The SAT model of the fit question (research/sat_order_encoding.cc)
against brute force: on small random problems (fixed seeds) the CNF is
satisfiable at the minimum height and not one granule below, with and
without the redundant counting, decided by a small DPLL here (no SAT solver
needed); every model decodes (research/sat_decode.py) to a plan
within the height; bad input is refused with a message naming it.

  sat_order_encoding_test.py PATH/TO/sat_order_encoding
"""
import itertools
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DECODE = os.path.join(HERE, "sat_decode.py")
G = 4  # bytes per granule: sizes and heights below are granules times G


def overlap(a, b):
    return a[0] < b[1] and b[0] < a[1]


def min_height(bufs):
    """Smallest height (granules) by trying every offset vector."""
    lo = max(sum(s for a, b, s in bufs if a <= t < b) for t in {a for a, _, _ in bufs})
    for h in itertools.count(lo):
        ranges = [range(h - s + 1) for _, _, s in bufs]
        for offs in itertools.product(*ranges):
            if all(not (overlap(bufs[i], bufs[j]) and offs[i] < offs[j] + bufs[j][2] and offs[j] < offs[i] + bufs[i][2])
                   for i in range(len(bufs)) for j in range(i + 1, len(bufs))):
                return h


def read_cnf(path):
    clauses, nvars = [], 0
    for line in open(path):
        if line.startswith("p cnf"):
            nvars = int(line.split()[2])
        elif line.strip():
            lits = [int(t) for t in line.split()]
            assert lits[-1] == 0, line
            clauses.append(lits[:-1])
    return nvars, clauses


def dpll(nvars, clauses):
    """A model (set of true variables) or None. Unit propagation, then a
    branch on the first unassigned variable of the shortest open clause."""
    def solve(assign):
        while True:
            unit, best = None, None
            for c in clauses:
                open_lits, sat = [], False
                for l in c:
                    v = assign.get(abs(l))
                    if v is None:
                        open_lits.append(l)
                    elif v == (l > 0):
                        sat = True
                        break
                if sat:
                    continue
                if not open_lits:
                    return None
                if len(open_lits) == 1:
                    unit = open_lits[0]
                    break
                if best is None or len(open_lits) < len(best):
                    best = open_lits
            if unit is not None:
                assign[abs(unit)] = unit > 0
                continue
            if best is None:
                return assign
            for value in (best[0] > 0, best[0] < 0):
                trial = dict(assign)
                trial[abs(best[0])] = value
                got = solve(trial)
                if got is not None:
                    return got
            return None

    got = solve({})
    if got is None:
        return None
    return {v for v in range(1, nvars + 1) if got.get(v, False)}


def write_problem(path, bufs):
    with open(path, "w") as f:
        f.write("id,lower,upper,size\n")
        for i, (a, b, s) in enumerate(bufs):
            f.write(f"b{i},{a},{b},{s * G}\n")


def main():
    tool = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        csv_path, cnf, mp = (os.path.join(d, x) for x in ("p.csv", "p.cnf", "p.map"))
        for seed in range(40):
            rng = random.Random(seed)
            n = rng.randint(2, 4)
            bufs = []
            for _ in range(n):
                a = rng.randint(0, 4)
                bufs.append((a, a + rng.randint(1, 4), rng.randint(1, 3)))
            h = min_height(bufs)
            write_problem(csv_path, bufs)
            for slack_limit in (0, 8):
                for height, want in ((h, True), (h - 1, False)):
                    if any(s > height for _, _, s in bufs):
                        run = subprocess.run([tool, csv_path, str(height * G), str(G), str(slack_limit), cnf, mp],
                                             capture_output=True, text=True)
                        if run.returncode != 2 or "size above HEIGHT" not in run.stderr:
                            print(f"seed {seed} height {height}: a buffer above the height not refused: {run.stderr}")
                            failures += 1
                        continue
                    subprocess.run([tool, csv_path, str(height * G), str(G), str(slack_limit), cnf, mp],
                                   check=True, capture_output=True)
                    model = dpll(*read_cnf(cnf))
                    if (model is not None) != want:
                        print(f"seed {seed} {bufs} height {height} slack limit {slack_limit}: "
                              f"{'satisfiable' if model else 'unsatisfiable'}, brute force says the minimum is {h}")
                        failures += 1
                        continue
                    if model is None:
                        continue
                    out = os.path.join(d, "solver.out")
                    with open(out, "w") as f:
                        f.write("s SATISFIABLE\nv " + " ".join(str(v) for v in sorted(model)) + " 0\n")
                    dec = subprocess.run([sys.executable, DECODE, out, mp, str(G)], capture_output=True, text=True)
                    rows = [r.split(",") for r in dec.stdout.split()[1:]]
                    top = max((int(r[4]) + int(r[3]) for r in rows), default=-1)
                    if dec.returncode != 0 or len(rows) != n or top > height * G:
                        print(f"seed {seed} height {height}: decode failed ({dec.returncode}, top {top}): {dec.stderr}")
                        failures += 1
        # Bad input: each refused with exit 2 and a message naming it.
        write_problem(csv_path, [(0, 2, 1)])
        bad_rows = os.path.join(d, "bad.csv")
        with open(bad_rows, "w") as f:
            f.write("id,lower,upper,size\nx,5,3,4\n")
        for args, words in (([os.path.join(d, "missing.csv"), "8", "4", "0"], "cannot open"),
                            ([csv_path, "10", "4", "0"], "HEIGHT: not a multiple"),
                            ([csv_path, "8", "0", "0"], "GRANULE: must be positive"),
                            ([csv_path, "-8", "4", "0"], "not a non-negative integer"),
                            ([bad_rows, "8", "4", "0"], "upper must exceed lower")):
            run = subprocess.run([tool, *args, cnf, mp], capture_output=True, text=True)
            if run.returncode != 2 or words not in run.stderr:
                print(f"{args}: expected exit 2 and '{words}', got {run.returncode}: {run.stderr}")
                failures += 1
    print("sat_order_encoding_test:", "failed" if failures else "passed", f"({failures} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
