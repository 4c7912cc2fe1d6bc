#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Research prototype: zero-slack fit by a time sweep over a PQ-tree.

Not part of the library: the prototype of src/solver/time_sweep.h (the C++
port, with backjumping and capped enumerations, runs in the solver). Kept
to try changes to the pairing order quickly (docs/design/solver.md, "Perfect
packings: the time sweep").

The idea. When every time section is exactly full (its live bytes equal the
capacity), a plan is a sequence of stacks: at every task the live buffers,
listed by offset, tile [0, capacity). At a boundary between tasks, the
buffers that end free byte ranges, and the buffers that start must fill
those ranges exactly. So each boundary pairs groups of ending buffers
(consecutive in the stack) with groups of starting buffers of the same total
size, and each starting group takes the place of its ending group. Which
orders of the live buffers are still possible is a consecutive-ones question,
and a PQ-tree (Booth and Lueker) holds all of them at once: a "group must be
consecutive" constraint is a reduction, and "this group is replaced by those
buffers" swaps the group's block for a P-node. The only branching left is
the pairing at each boundary (a subset-sum question). The plan is rebuilt
backwards from tree snapshots: the last stack is any frontier; each earlier
stack is the snapshot's frontier ordered by the offsets already fixed.

Limits found (see docs/design/solver.md): the pairing enumeration is capped (blocks
of up to 5 + 1 pivot items on the side with fewer items when that side has
more than 15), so a "none" is not a proof. Pairings whose subsets are dense
enough for equal sums to be chance are tried after the coarse pairing.

  zero_slack_sweep.py --self-test
  zero_slack_sweep.py --perfect 1000 --seeds 1-10 --node-budget 1500 --time-limit 40 --reverse
  zero_slack_sweep.py --csv plan_input.csv        # id,lower,upper,size
"""
import argparse
import collections
import copy
import csv
import itertools
import math
import random
import sys
import time

sys.setrecursionlimit(100000)


# --- PQ-tree -----------------------------------------------------------------
class Node:
    __slots__ = ("kind", "children", "leaf")

    def __init__(self, kind, children=None, leaf=None):
        self.kind = kind  # "L" leaf, "P" any order, "Q" this order or reversed
        self.children = children or []
        self.leaf = leaf


def make(kind, children):
    return children[0] if len(children) == 1 else Node(kind, children)


def leaf_node(i):
    return Node("L", leaf=i)


class Fail(Exception):
    pass


def _counts(root, wanted):
    total, hit = {}, {}

    def go(x):
        if x.kind == "L":
            total[id(x)] = 1
            hit[id(x)] = 1 if x.leaf in wanted else 0
            return
        t = h = 0
        for y in x.children:
            go(y)
            t += total[id(y)]
            h += hit[id(y)]
        total[id(x)], hit[id(x)] = t, h

    go(root)
    return total, hit


def _pertinent_root(root, wanted, hit):
    x = root
    while x.kind != "L":
        inside = [y for y in x.children if hit[id(y)] > 0]
        if len(inside) == 1 and hit[id(inside[0])] == len(wanted):
            x = inside[0]
        else:
            return x
    return x


def _label(y, total, hit):
    if hit[id(y)] == 0:
        return "E"
    return "F" if hit[id(y)] == total[id(y)] else "P"


def _split(children, labels):
    """Children by label: empty, full, partial."""
    return [[y for y, s in zip(children, labels) if s == want] for want in "EFP"]


def _partial(x, total, hit):
    """A partial non-root node as a child list: empty end left, full end right."""
    labels = [_label(y, total, hit) for y in x.children]
    if x.kind == "P":
        empty, full, part = _split(x.children, labels)
        if len(part) > 1:
            raise Fail
        out = [make("P", empty)] if empty else []
        if part:
            out += _partial(part[0], total, hit)
        if full:
            out.append(make("P", full))
        return out
    for kids, labs in ((x.children, labels), (x.children[::-1], labels[::-1])):
        s = "".join(labs)
        i = len(s) - len(s.lstrip("E"))
        j = i + (1 if i < len(s) and s[i] == "P" else 0)
        if set(s[j:]) <= {"F"} and s.count("P") <= 1:
            out = []
            for y, t in zip(kids, labs):
                out += _partial(y, total, hit) if t == "P" else [y]
            return out
    raise Fail


def reduce(root, wanted):
    """Restricts the tree to orders where `wanted` is consecutive; Fail if none."""
    if len(wanted) <= 1:
        return root
    total, hit = _counts(root, wanted)
    r = _pertinent_root(root, wanted, hit)
    if hit[id(r)] == total[id(r)]:
        return root
    labels = [_label(y, total, hit) for y in r.children]
    if r.kind == "P":
        empty, full, part = _split(r.children, labels)
        if len(part) > 2:
            raise Fail
        mid = _partial(part[0], total, hit) if part else []
        if full:
            mid.append(make("P", full))
        if len(part) == 2:
            mid += _partial(part[1], total, hit)[::-1]
        r.children = empty + [make("Q", mid) if part else mid[0]]
        return root
    s = "".join(labels)
    i = len(s) - len(s.lstrip("E"))
    j = len(s.rstrip("E")) - 1
    core = s[i:j + 1]
    if core.startswith("P"):
        core = core[1:]
    if core.endswith("P"):
        core = core[:-1]
    if set(core) - {"F"}:
        raise Fail
    out = list(r.children[:i])
    for k in range(i, j + 1):
        y = r.children[k]
        if labels[k] == "P":
            sub = _partial(y, total, hit)
            out += sub if k == i else sub[::-1]
        else:
            out.append(y)
    r.children = out + r.children[j + 1:]
    return root


def _parent(root, x):
    stack = [root]
    while stack:
        y = stack.pop()
        for z in y.children:
            if z is x:
                return y
            stack.append(z)
    return None


def replace(root, wanted, new):
    """Swaps the (consecutive) block of `wanted` for `new`."""
    total, hit = _counts(root, wanted)
    r = _pertinent_root(root, wanted, hit)
    if hit[id(r)] == total[id(r)]:
        if r is root:
            return new
        p = _parent(root, r)
        p.children = [new if y is r else y for y in p.children]
        return root
    labels = "".join(_label(y, total, hit) for y in r.children)
    i, j = labels.index("F"), labels.rindex("F")
    assert r.kind == "Q" and set(labels[i:j + 1]) == {"F"}
    r.children = r.children[:i] + [new] + r.children[j + 1:]
    if len(r.children) == 1:
        if r is root:
            return r.children[0]
        p = _parent(root, r)
        p.children = [r.children[0] if y is r else y for y in p.children]
    return root


def frontiers(x):
    """Every order the tree allows (small trees only: tests)."""
    if x.kind == "L":
        return [[x.leaf]]
    kid_orders = [frontiers(y) for y in x.children]
    arrangements = (itertools.permutations(range(len(x.children))) if x.kind == "P"
                    else [tuple(range(len(x.children))), tuple(reversed(range(len(x.children))))])
    out = set()
    for arr in arrangements:
        for pick in itertools.product(*(kid_orders[k] for k in arr)):
            out.add(tuple(l for part in pick for l in part))
    return [list(o) for o in out]


def keyed_frontier(x, key):
    """The frontier whose P-children and Q-orientations follow `key`."""
    if x.kind == "L":
        k = key[x.leaf]
        return [x.leaf], (k, k)
    parts = [keyed_frontier(y, key) for y in x.children]
    if x.kind == "P":
        parts.sort(key=lambda p: p[1])
    elif parts[0][1] > parts[-1][1]:
        parts.reverse()
    order = [l for p in parts for l in p[0]]
    return order, (min(p[1][0] for p in parts), max(p[1][1] for p in parts))


def leaves(x):
    return [x.leaf] if x.kind == "L" else [l for y in x.children for l in leaves(y)]


# --- pairing of ending and starting groups -----------------------------------
def subsets_with_sum(items, sizes, target, cap):
    out = []
    items = sorted(items, key=lambda i: -sizes[i])
    suffix = [0] * (len(items) + 1)
    for i in range(len(items) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + sizes[items[i]]

    def go(i, rem, cur):
        if len(out) >= cap:
            return
        if rem == 0:
            out.append(list(cur))
            return
        if i == len(items) or suffix[i] < rem:
            return
        if sizes[items[i]] <= rem:
            cur.append(items[i])
            go(i + 1, rem - sizes[items[i]], cur)
            cur.pop()
        go(i + 1, rem, cur)

    go(0, target, [])
    return out


def pairings(root, ending, starting, sizes, check=lambda: None):
    """Candidate pairings at one boundary, each with its reduced tree:
    fine pairings whose equal sums are unlikely to be chance first (smallest
    groups first), then all ending buffers as one group, then the rest."""

    def go(tree, ending, starting, blocks, sparse_only):
        if not ending:
            if not starting:
                yield list(blocks), tree
            return
        if not starting:
            return
        pivot_ending = len(ending) <= len(starting)
        side, other = (ending, starting) if pivot_ending else (starting, ending)
        other_sum = sum(sizes[i] for i in other)
        for r in range(len(side)):
            if r >= 5 and len(side) > 15:
                break
            for comb in itertools.combinations(side[1:], r):
                check()  # the enumeration can be long: the limits apply inside it too
                group = [side[0], *comb]
                total = sum(sizes[i] for i in group)
                if total > other_sum:
                    continue
                for match in subsets_with_sum(other, sizes, total, 16):
                    chance = (math.comb(len(other), len(match)) *
                              math.comb(len(side) - 1, len(group) - 1))
                    proper = len(match) < len(other) and len(group) < len(side)
                    if proper and (chance > total / 100) == sparse_only:
                        continue
                    a, b = (group, match) if pivot_ending else (match, group)
                    try:
                        reduced = reduce(copy.deepcopy(tree), set(a))
                    except Fail:
                        continue
                    yield from go(reduced, [i for i in ending if i not in a],
                                  [i for i in starting if i not in b], blocks + [(a, b)],
                                  sparse_only)

    for blocks, tree in go(root, ending, starting, [], True):
        if len(blocks) > 1:
            yield blocks, tree
    try:
        yield [(list(ending), list(starting))], reduce(copy.deepcopy(root), set(ending))
    except Fail:
        pass
    for blocks, tree in go(root, ending, starting, [], False):
        if len(blocks) > 1:
            yield blocks, tree


# --- the sweep ----------------------------------------------------------------
def solve(buffers, capacity, node_budget, time_limit=None):
    """buffers: (first task, end task exclusive, size). Returns (offsets or
    None, nodes, reason). A node is one boundary visited (so a run without a
    backtrack takes as many nodes as there are boundaries)."""
    deadline = time.perf_counter() + time_limit if time_limit else None
    sizes = [b[2] for b in buffers]
    starts, ends = collections.defaultdict(list), collections.defaultdict(list)
    for i, (lo, up, _) in enumerate(buffers):
        starts[lo].append(i)
        ends[up].append(i)
    times = sorted(set(starts) | set(ends))
    load = 0
    for t in times:
        load += sum(sizes[i] for i in starts[t]) - sum(sizes[i] for i in ends[t])
        if load not in (0, capacity):
            return None, 0, "not zero slack at task %d (load %d)" % (t, load)
    path = [None] * len(times)
    nodes = [0]

    def check_time():
        if deadline and time.perf_counter() > deadline:
            raise TimeoutError("time limit reached")

    def dfs(k, root):
        nodes[0] += 1
        if nodes[0] > node_budget:
            raise TimeoutError("node budget reached")
        check_time()
        if k == len(times):
            return True
        t = times[k]
        ending, starting = ends.get(t, []), starts.get(t, [])
        if root is None or not starting:  # a partition begins or ends
            path[k] = (copy.deepcopy(root), [(list(ending), [])]) if root is not None else None
            return dfs(k + 1, make("P", [leaf_node(i) for i in starting]) if starting else None)
        for blocks, tree in pairings(root, ending, starting, sizes, check_time):
            path[k] = (copy.deepcopy(tree), blocks)
            nxt = copy.deepcopy(tree)
            for a, b in blocks:
                nxt = replace(nxt, set(a), make("P", [leaf_node(i) for i in b]))
            if dfs(k + 1, nxt):
                return True
        return False

    try:
        if not dfs(0, None):
            return None, nodes[0], "no pairing left (the enumeration is capped: not a proof)"
    except TimeoutError as stop:
        return None, nodes[0], str(stop)
    offset = {}
    for k in range(len(times) - 1, -1, -1):
        if path[k] is None:
            continue
        tree, blocks = path[k]
        key = {}
        for a, b in blocks:
            start = min((offset[j] for j in b), default=0)
            for i in a:
                key[i] = (start, 0)
        for l in leaves(tree):
            key.setdefault(l, (offset.get(l, 0), 1))
        order, _ = keyed_frontier(tree, key)
        at = 0
        for l in order:
            if l in offset:
                assert offset[l] == at, "rebuilt stack disagrees with a later one"
            else:
                offset[l] = at
            at += sizes[l]
    return [offset[i] for i in range(len(buffers))], nodes[0], "fit"


def validate(buffers, offsets, capacity):
    """Independent check: in bounds, no two overlapping in time and bytes."""
    order = sorted(range(len(buffers)), key=lambda i: buffers[i][0])
    live = []
    for i in order:
        lo, up, size = buffers[i]
        if offsets[i] < 0 or offsets[i] + size > capacity:
            return "buffer %d out of bounds" % i
        live = [j for j in live if buffers[j][1] > lo]
        for j in live:
            if offsets[i] < offsets[j] + buffers[j][2] and offsets[j] < offsets[i] + size:
                return "buffers %d and %d overlap" % (i, j)
        live.append(i)
    return None


# --- the perfect-packing family (a port of harness/src/perfect_packing.cc) -----
MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, state):
        self.state = state & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def unit(self):
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)


def perfect_packing(n, seed, tasks=1000, units=1 << 20):
    """PerfectPackingVariant(n, seed): (buffers, capacity), buffers as
    (first task, end task exclusive, size), in the harness's order."""
    v = seed % 5
    depth, time_share, balance = ([0.0, 0.5, 0.9, 0.3, 0.7][v], [0.5, 0.3, 0.5, 0.7, 0.5][v],
                                  [0.2, 0.1, 0.1, 0.05, 0.3][v])
    rng = SplitMix64(seed * 0x2545F4914F6CDD1D + 0x1234567)

    def cut_at(lo, hi):
        length = hi - lo
        a = min(max(int(length * balance), 1), length - 1)
        b = min(max(int(length * (1.0 - balance)), a), length - 1)
        return lo + a + rng.next() % (b - a + 1)

    rects, open_ = [[0, tasks, 0, units]], [0]
    while len(rects) < n and open_:
        pick = len(open_) - 1
        if rng.unit() >= depth:
            best = 0
            for k, idx in enumerate(open_):
                t0, t1, b0, b1 = rects[idx]
                if (t1 - t0) * (b1 - b0) > best:
                    best, pick = (t1 - t0) * (b1 - b0), k
        idx = open_[pick]
        t0, t1, b0, b1 = rects[idx]
        can_time, can_bytes = t1 - t0 >= 2, b1 - b0 >= 2
        if not can_time and not can_bytes:
            open_.pop(pick)
            continue
        time_cut = rng.unit() < time_share
        if not can_time:
            time_cut = False
        if not can_bytes:
            time_cut = True
        a, b = [t0, t1, b0, b1], [t0, t1, b0, b1]
        if time_cut:
            a[1] = b[0] = cut_at(t0, t1)
        else:
            a[3] = b[2] = cut_at(b0, b1)
        if rng.next() & 1:
            a, b = b, a
        rects[idx] = a
        rects.append(b)
        open_.pop(pick)
        open_ += [idx, len(rects) - 1]
    for i in range(len(rects), 1, -1):
        j = rng.next() % i
        rects[i - 1], rects[j] = rects[j], rects[i - 1]
    return [(r[0], r[1], r[3] - r[2]) for r in rects], units


# --- checks -------------------------------------------------------------------
def self_test():
    rng = random.Random(7)
    # 1. Every reduction against brute force over permutations.
    for _ in range(400):
        n = rng.randint(2, 6)
        root = make("P", [leaf_node(i) for i in range(n)])
        allowed = set(itertools.permutations(range(n)))
        for _ in range(rng.randint(1, 4)):
            wanted = set(rng.sample(range(n), rng.randint(2, n)))
            allowed = {p for p in allowed
                       if max(p.index(w) for w in wanted) - min(p.index(w) for w in wanted)
                       == len(wanted) - 1}
            try:
                root = reduce(root, wanted)
            except Fail:
                assert not allowed, "reduction failed but %d orders remain" % len(allowed)
                break
            got = {tuple(o) for o in frontiers(root)}
            assert got == allowed, "tree orders differ from brute force"
    # 2. Small perfect packings fit, and the plans pass the validator.
    for n in (20, 60, 100):
        for seed in range(1, 6):
            buffers, capacity = perfect_packing(n, seed)
            offsets, _, reason = solve(buffers, capacity, 5000)
            assert offsets is not None, "perfect_packing(%d, %d): %s" % (n, seed, reason)
            problem = validate(buffers, offsets, capacity)
            assert problem is None, problem
    # 3. Not zero slack: refused with the task named.
    _, _, reason = solve([(0, 2, 5), (1, 3, 5)], 10, 100)
    assert reason.startswith("not zero slack"), reason
    print("self-test passed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--perfect", type=int, help="N of the perfect-packing family")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--csv", help="id,lower,upper,size (MiniMalloc's columns)")
    ap.add_argument("--capacity", type=int)
    ap.add_argument("--node-budget", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, help="seconds per instance")
    ap.add_argument("--reverse", action="store_true",
                    help="also solve each instance with time reversed (the sweep runs backwards)")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    jobs = []
    if args.perfect:
        lo, _, hi = args.seeds.partition("-")
        for seed in range(int(lo), int(hi or lo) + 1):
            jobs.append(("perfect_%d_%d" % (args.perfect, seed),) + perfect_packing(args.perfect, seed))
    if args.csv:
        if not args.capacity or args.capacity < 1:
            ap.error("--csv needs --capacity (a positive byte count)")
        with open(args.csv) as f:
            rows = [(int(r["lower"]), int(r["upper"]), int(r["size"])) for r in csv.DictReader(f)]
        jobs.append((args.csv, rows, args.capacity))
    if args.reverse:
        for name, buffers, capacity in list(jobs):
            end = max((b[1] for b in buffers), default=0)
            jobs.append((name + " reversed", [(end - up, end - lo, size) for lo, up, size in buffers],
                         capacity))
    if args.node_budget < 1 or (args.time_limit is not None and args.time_limit <= 0):
        ap.error("--node-budget and --time-limit must be positive")
    for name, buffers, capacity in jobs:
        t0 = time.perf_counter()
        offsets, nodes, reason = solve(buffers, capacity, args.node_budget, args.time_limit)
        seconds = time.perf_counter() - t0
        check = validate(buffers, offsets, capacity) if offsets else None
        print("%s buffers %d: %s, nodes %d, %.2f s%s" % (
            name, len(buffers), reason, nodes, seconds,
            (", validator: " + (check or "ok")) if offsets else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
