#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The research local search (research/overlap_local_search.cc) and
its start-plan driver (research/point_restriction.py): on small
random problems built around a known plan (fixed seeds), the search repairs
a start with every buffer at offset 0, and lowers a plan set higher, to
plans that an independent check here accepts; below the peak it answers
"no plan" (exit 1) and writes nothing; bad input is refused with a message
naming it. The driver's start plan covers every buffer, and it refuses bad
arguments.

  overlap_local_search_test.py PATH/TO/overlap_local_search PATH/TO/tensormem
"""
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "point_restriction.py")
G = 4  # bytes per granule


def live_together(a, b):
    return a[1] < b[2] and b[1] < a[2]


def check_plan(bufs, plan, height):
    assert set(plan) == {b[0] for b in bufs}, "the plan names other buffers"
    for b in bufs:
        assert plan[b[0]] % G == 0 and 0 <= plan[b[0]] and plan[b[0]] + b[3] <= height, (b, plan[b[0]])
    for i in range(len(bufs)):
        for j in range(i + 1, len(bufs)):
            a, b = bufs[i], bufs[j]
            if live_together(a, b):
                assert plan[a[0]] + a[3] <= plan[b[0]] or plan[b[0]] + b[3] <= plan[a[0]], (a, b)


def random_problem(rng, n):
    """n buffers placed first-fit at random offsets: a problem and its plan."""
    bufs, plan = [], {}
    for k in range(n):
        lo = rng.randrange(0, 40)
        b = (f"b{k}", lo, lo + rng.randrange(1, 20), G * rng.randrange(1, 8))
        off = 0
        while True:
            clash = [c for c in bufs if live_together(b, c) and plan[c[0]] < off + b[3] and off < plan[c[0]] + c[3]]
            if not clash:
                break
            off = max(plan[c[0]] + c[3] for c in clash)
        bufs.append(b)
        plan[b[0]] = off
    return bufs, plan


def peak(bufs):
    return max(sum(b[3] for b in bufs if b[1] <= t < b[2]) for t in {b[1] for b in bufs})


def write_problem(path, bufs):
    with open(path, "w") as f:
        f.write("id,lower,upper,size\n")
        for b in bufs:
            f.write(f"{b[0]},{b[1]},{b[2]},{b[3]}\n")


def write_plan(path, plan):
    with open(path, "w") as f:
        f.write("id,offset\n")
        for k, v in plan.items():
            f.write(f"{k},{v}\n")


def read_plan(path):
    lines = open(path).read().split()
    assert lines[0] == "id,offset"
    return {k: int(v) for k, v in (line.split(",") for line in lines[1:])}


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def main():
    search = sys.argv[1]
    tensormem = sys.argv[2] if len(sys.argv) > 2 else ""
    d = tempfile.mkdtemp(prefix="ols_test_")
    prob, start, out = (os.path.join(d, x) for x in ("p.csv", "s.csv", "o.csv"))
    repaired = lowered = 0
    for seed in range(1, 31):
        rng = random.Random(seed)
        bufs, plan = random_problem(rng, rng.randrange(5, 25))
        height = max(plan[b[0]] + b[3] for b in bufs)
        write_problem(prob, bufs)
        # Repair: everything at offset 0, the known plan's height.
        write_plan(start, {b[0]: 0 for b in bufs})
        r = run([search, prob, start, str(height), str(G), "2000000", str(seed), out])
        assert r.returncode == 0, (seed, r.stdout, r.stderr)
        check_plan(bufs, read_plan(out), height)
        repaired += 1
        # Lower: the known plan moved up by three granules, asked at its height.
        write_plan(start, {k: v + 3 * G for k, v in plan.items()})
        r = run([search, prob, start, str(height), str(G), "2000000", str(seed), out])
        assert r.returncode == 0, (seed, r.stdout, r.stderr)
        check_plan(bufs, read_plan(out), height)
        lowered += 1
        # Below the peak no plan exists: exit 1, nothing written.
        os.remove(out)
        r = run([search, prob, start, str(peak(bufs) - G), str(G), "20000", str(seed), out])
        assert r.returncode == 1 and "no plan" in r.stdout and not os.path.exists(out), (seed, r.stdout, r.stderr)

    # Bad input: exit 2 and a message naming what is wrong.
    bufs, plan = random_problem(random.Random(99), 6)
    write_problem(prob, bufs)
    write_plan(start, plan)
    h = str(max(plan[b[0]] + b[3] for b in bufs))
    bad_cases = [
        ([prob, start, "10", str(G), "10", "1", out], "HEIGHT: 10 is not a multiple of GRANULE"),
        ([prob, start, h, "0", "10", "1", out], "GRANULE: must be positive"),
        ([prob, start, h, str(G), "-5", "1", out], "MAX_STEPS"),
        ([prob, start, h, str(G), "ten", "1", out], "MAX_STEPS: 'ten'"),
        ([os.path.join(d, "missing.csv"), start, h, str(G), "10", "1", out], "cannot open"),
        ([prob, start, str(G), str(G), "10", "1", out], "larger than HEIGHT"),
    ]
    refused = 0
    for args, want in bad_cases:
        r = run([search] + args)
        assert r.returncode == 2 and want in r.stderr, (args, r.stderr)
        refused += 1
    for text, want in [
        ("id,lower,upper,size\na,0,5,3\n", "size 3 is not a multiple of GRANULE"),
        ("id,lower,upper,size\na,5,5,4\n", "upper 5 is not after lower 5"),
        ("id,lower,upper,size\na,0,5,4\na,1,2,4\n", "id 'a' appears twice"),
        ("id,lower,size\na,0,4\n", "no 'upper' column"),
        ("id,lower,upper,size\na,0,5\n", "3 cells, the header has 4"),
    ]:
        with open(prob, "w") as f:
            f.write(text)
        write_plan(start, {"a": 0})
        r = run([search, prob, start, "64", str(G), "10", "1", out])
        assert r.returncode == 2 and want in r.stderr, (text, r.stderr)
        refused += 1
    write_problem(prob, [("a", 0, 5, 8), ("b", 2, 6, 4)])
    for plan_text, want in [
        ("id,offset\na,0\n", "no offset for id 'b'"),
        ("id,offset\na,0\nb,4\nc,0\n", "id 'c' is not in"),
        ("id,offset\na,0\nb,4\nb,8\n", "id 'b' appears twice"),
        ("id,offset\na,0\nb,6\n", "offset 6 is not a multiple of GRANULE"),
        ("id\na\nb\n", "no 'offset' column"),
    ]:
        with open(start, "w") as f:
            f.write(plan_text)
        r = run([search, prob, start, "64", str(G), "10", "1", out])
        assert r.returncode == 2 and want in r.stderr, (plan_text, r.stderr)
        refused += 1

    # The driver: a start plan for every buffer of a small problem, then the
    # search repairs it; bad arguments are refused.
    drivers = 0
    if tensormem and os.path.exists(tensormem):
        bufs, plan = random_problem(random.Random(7), 30)
        height = max(plan[b[0]] + b[3] for b in bufs)
        write_problem(prob, bufs)
        r = run([sys.executable, DRIVER, tensormem, prob, str(height), start, "--time-limit", "5",
                 "--gap-time-limit", "2", "--segments", "3", "--work", os.path.join(d, "work")])
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert set(read_plan(start)) == {b[0] for b in bufs}
        r = run([search, prob, start, str(height), str(G), "2000000", "3", out])
        assert r.returncode == 0, (r.stdout, r.stderr)
        check_plan(bufs, read_plan(out), height)
        # Every exact solve cut short, so the local search repairs each step,
        # and the violated points are added until the whole plan is one.
        for seed in (1, 4):
            bufs, plan = random_problem(random.Random(seed), 60)
            height = max(plan[b[0]] + b[3] for b in bufs)
            write_problem(prob, bufs)
            r = run([sys.executable, DRIVER, tensormem, prob, str(height), start, "--time-limit", "0.000001",
                     "--tries", "1", "--gap-time-limit", "2", "--segments", "3", "--local-search", search,
                     "--granule", str(G), "--add-violations", "1000", "--work", os.path.join(d, f"work{seed}")])
            assert r.returncode == 0, (r.stdout, r.stderr)
            assert "local search, seed" in r.stdout and ": 0 pairs of buffers overlap" in r.stdout, r.stdout
            check_plan(bufs, read_plan(start), height)
        r = run([sys.executable, DRIVER, tensormem, prob, "0", start])
        assert r.returncode == 2 and "must be positive" in r.stderr, r.stderr
        r = run([sys.executable, DRIVER, tensormem, prob, "64", start, "--ls-steps", "0"])
        assert r.returncode == 2 and "--ls-steps" in r.stderr, r.stderr
        with open(prob, "w") as f:
            f.write("id,lower,upper,size\na,4,2,8\n")
        r = run([sys.executable, DRIVER, tensormem, prob, "64", start])
        assert r.returncode == 2 and "buffer 'a' has lower 4, upper 2" in r.stderr, r.stderr
        drivers = 1
    print(f"ok: {repaired} repaired, {lowered} lowered, {refused} bad inputs refused, driver checked: {drivers}")


if __name__ == "__main__":
    main()
