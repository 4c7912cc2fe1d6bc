# SPDX-License-Identifier: Apache-2.0
import math
import os
import signal
import threading
import time

import numpy as np
import pytest

import tensormem as tm


def hard(n, seed):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, n)
    last = first + rng.integers(0, n // 4, n)
    sizes = rng.integers(1, 1000, n)
    return tm.Problem.from_arrays(sizes, first, last)


def test_minimize_small_is_optimal():
    prob = tm.Problem.from_arrays([4, 4, 4, 8], [0, 0, 1, 2], [1, 2, 3, 3])
    r = tm.solve(prob, time_limit=5)
    assert r.status == "optimal" and r.height == r.lower_bound and r.gap == 0
    assert r.offsets is not None and len(r.offsets) == 4
    # The diagnostics: the heuristic plan it started from, and no deep probe needed.
    assert r.heuristic_height >= r.height and r.partitions >= 1
    assert r.restriction_bound == 0 and r.deep_probes == r.deep_probe_plans == r.deep_probe_proofs == 0
    assert r.relay_buffers == r.relay_height == 0  # solved before the relay probe's turn
    assert r.relay_samples == r.relay_sample_plans == 0
    assert r.fit_descent_turns == r.fit_descent_plans == 0  # no capacity: no fit question


def test_fit_descent_beside_the_fit_question(shared):
    # J at 1,000,448 (above its bound): unknown within the nodes either way,
    # but with the descent beside it (the default) its plan is the descent's,
    # below the heuristic's; tuning fit_descent=False searches at the
    # capacity alone.
    prob = tm.load_problem(shared / "benchmarks" / "minimalloc" / "J.1048576.csv")
    beside = tm.solve(prob, capacity=1000448, node_limit=150000, time_limit=60)
    alone = tm.solve(prob, capacity=1000448, node_limit=150000, time_limit=60,
                     tuning={"fit_descent": False})
    assert beside.status == alone.status == "unknown"
    assert beside.fit_descent_turns >= 1 and alone.fit_descent_turns == alone.fit_descent_plans == 0
    assert beside.height < alone.height == alone.heuristic_height


def test_weighted_restarts_prove_the_same_minimum():
    # One complete search instead of the portfolio: the same proven minima,
    # and a proof that nothing fits below them.
    for seed in range(4):
        prob = hard(24, seed)
        default = tm.solve(prob, time_limit=20)
        weighted = tm.solve(prob, time_limit=20, tuning={"portfolio": "weighted"})
        assert default.status == weighted.status == "optimal"
        assert default.height == weighted.height
        below = tm.solve(prob, capacity=weighted.height - 1, time_limit=20, tuning={"portfolio": "weighted"})
        assert below.status == "infeasible"


def test_tuning_keys_and_errors():
    # One table: tuning_keys() lists what solve(tuning=...) takes; an unknown
    # key or a bad value is a ValueError naming it, a value of another type a
    # TypeError.
    keys = {name for name, _, _ in tm.tuning_keys()}
    assert {"fit_descent", "portfolio", "weighted_share", "restriction_bound"} <= keys
    prob = tm.Problem.from_arrays([4, 8, 4], [0, 1, 3], [2, 3, 4])
    r = tm.solve(prob, time_limit=5, tuning={"restriction_bound": True, "probe_node_budget": 64,
                                             "fit_descent_share": 0.5, "minimize_search": "bisection"})
    assert r.status == "optimal"
    for tuning, named in [({"no_such_key": 1}, "no_such_key"), ({"fit_descent": "maybe"}, "fit_descent"),
                          ({"fit_descent_share": 2.0}, "fit_descent_share"),
                          ({"probe_node_budget": -1}, "probe_node_budget")]:
        with pytest.raises(ValueError, match=named):
            tm.solve(prob, time_limit=5, tuning=tuning)
    with pytest.raises(TypeError, match="portfolio"):
        tm.solve(prob, time_limit=5, tuning={"portfolio": [1]})


def test_the_answer_does_not_depend_on_the_rows_order():
    # The same problem with its rows reversed: the same status, height and
    # bound under a node limit, and each plan one of its own problem.
    sizes, first, last = [], [], []
    for i in range(60):
        sizes.append(1 + (i * 37) % 23)
        first.append((i * 11) % 40)
        last.append((i * 11) % 40 + (i * 7) % 9)
    a = tm.solve(tm.Problem.from_arrays(sizes, first, last), node_limit=3000, time_limit=None)
    b = tm.solve(tm.Problem.from_arrays(sizes[::-1], first[::-1], last[::-1]), node_limit=3000, time_limit=None)
    assert (a.status, a.height, a.lower_bound, a.nodes) == (b.status, b.height, b.lower_bound, b.nodes)


def test_capacity_infeasible_with_subset():
    prob = tm.Problem.from_arrays([10, 10, 10], [0, 0, 0], [1, 1, 1])
    r = tm.solve(prob, capacity=25, iis=True)
    assert r.status == "infeasible" and r.offsets is None
    # Any two fit in 25 bytes, so the irreducible subset is all three.
    assert sorted(r.infeasible_subset) == [0, 1, 2]
    # Proven from the peak (30 > 25) before any heuristic ran.
    assert r.heuristic_height is None


def test_capacity_fits():
    prob = tm.Problem.from_arrays([10, 10, 10], [0, 1, 2], [0, 1, 2])
    r = tm.solve(prob, capacity=10)
    assert r.status in ("feasible", "optimal") and r.height <= 10


def test_bad_input():
    # Python's parameter names, not the C++ structs' (SolverParams::...).
    prob = tm.Problem.from_arrays([1], [0], [0])
    with pytest.raises(ValueError, match=r"^solve: time_limit must be >= 0 seconds \(math.inf for none\), got -1$"):
        tm.solve(prob, time_limit=-1)
    with pytest.raises(ValueError, match="^solve: time_limit must be >= 0 seconds .* got nan$"):
        tm.solve(prob, time_limit=float("nan"))
    with pytest.raises(ValueError, match=r"^solve: threads must be at most 256 \(0: one per hardware thread\), got 257$"):
        tm.solve(prob, threads=257)
    with pytest.raises(ValueError, match="^plan: time_limit must be >= 0 seconds .* got -0.5$"):
        tm.plan(prob, time_limit=-0.5)
    with pytest.raises(ValueError, match=r"^plan: threads must be at most 256 .* got 257$"):
        tm.plan(prob, threads=257)
    assert tm.solve(prob, time_limit=math.inf).status == "optimal"


@pytest.mark.parametrize("threads", [1, 3])
def test_ctrl_c_stops_the_search(threads):
    # Racing, the searches on other threads stop with the one on the calling
    # thread, which is where Python sees the signal.
    prob = hard(400, 3)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # Runs to its limit otherwise (3 s: gap 0.4 %, alone or racing).
            tm.solve(prob, time_limit=60, minimize=True, threads=threads)
    finally:
        timer.cancel()
    # Stopped within the 50 ms polling interval of the signal, not at the limit.
    assert time.perf_counter() - start < 5


def test_threads():
    prob = tm.Problem.from_arrays([4, 4, 4, 8, 3], [0, 0, 1, 2, 0], [1, 2, 3, 3, 3])
    one = tm.solve(prob, time_limit=5)
    raced = tm.solve(prob, time_limit=5, threads=3)
    assert raced.threads == 3 and one.threads == 1
    assert raced.status == one.status == "optimal" and raced.height == one.height
    assert len(raced.offsets) == 5
    with pytest.raises(ValueError, match="threads must be at most 256"):
        tm.solve(prob, threads=257)
    with pytest.raises(ValueError, match="threads must be at most 256 .*, got 4294967296"):
        tm.solve(prob, threads=1 << 32)  # would wrap to 0 in the narrowing
    with pytest.raises(ValueError, match="threads must be non-negative"):
        tm.solve(prob, threads=-1)


def test_start_from_a_previous_plan():
    prob = hard(120, 5)
    first = tm.solve(prob, node_limit=50000)
    heuristic = tm.solve(prob, time_limit=0)
    assert first.height < heuristic.height
    # From the previous offsets, even the heuristics-only run answers at
    # least as low, and still reports the heuristics' own height.
    again = tm.solve(prob, time_limit=0, start=first.offsets)
    assert again.height == first.height
    assert again.heuristic_height == heuristic.heuristic_height


def test_start_must_be_a_plan():
    prob = tm.Problem.from_arrays([4, 4, 4], [0, 0, 1], [1, 1, 2])
    with pytest.raises(ValueError, match="2 offsets for 3 buffers"):
        tm.solve(prob, start=[0, 4])
    with pytest.raises(ValueError, match="not a plan"):
        tm.solve(prob, start=[0, 0, 8])  # the first two share a byte
    with pytest.raises(ValueError, match=r"start\[1\] is negative"):
        tm.solve(prob, start=[0, -4, 8])
    with pytest.raises(ValueError, match="integer"):
        tm.solve(prob, start=[0.5, 4, 8])
    # All three share task 1: 12 bytes at least, and the start is optimal.
    r = tm.solve(prob, start=[8, 0, 4], time_limit=5)
    assert r.status == "optimal" and r.height == 12
