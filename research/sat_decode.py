#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a SAT solver's answer to sat_order_encoding's CNF (research tool,
docs/design/solver.md "A SAT model of the fit question") and writes the plan as the
problem's CSV with an offset column, after checking that no two buffers live
at once overlap.

  research/sat_decode.py SOLVER.out PROBLEM.map GRANULE > plan.csv
Exit 1 when the answer is not SATISFIABLE or the plan overlaps.
"""
import csv
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out, mapping, granule = sys.argv[1], sys.argv[2], int(sys.argv[3])
    status, true = None, set()
    for line in open(out):
        if line.startswith("s "):
            status = line[2:].strip()
        elif line.startswith("v "):
            true.update(int(t) for t in line.split()[1:] if int(t) > 0)
    if status != "SATISFIABLE":
        sys.exit(f"{out}: the solver answered {status or 'nothing'}")
    rows = []
    for r in csv.DictReader(open(mapping)):
        first, room = int(r["first_var"]), int(r["room"])
        offset = 0  # order encoding: the true y(i, v) are v = 1..offset
        while offset < room and first + offset in true:
            offset += 1
        rows.append((r["id"], int(r["lower"]), int(r["upper"]), int(r["size"]), offset * granule))
    rows.sort(key=lambda r: r[1])
    for k, a in enumerate(rows):  # sorted by lower: stop at the first that starts after a ends
        for b in rows[k + 1:]:
            if b[1] >= a[2]:
                break
            if a[4] < b[4] + b[3] and b[4] < a[4] + a[3]:
                sys.exit(f"buffers {a[0]} and {b[0]} overlap")
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", "offset"])
    w.writerows(rows)
    print(f"height {max(r[4] + r[3] for r in rows)}", file=sys.stderr)


if __name__ == "__main__":
    main()
