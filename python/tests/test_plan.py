# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tensormem as tm


def random_problem(n, seed=1):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 10 * n, n)
    last = first + rng.integers(0, 50, n)
    sizes = rng.integers(1, 1 << 16, n) * 64
    return sizes, first, last


def overlaps(sizes, first, last, offsets):
    """Pairs of buffers that are live together and overlap in memory."""
    bad = 0
    n = len(sizes)
    for i in range(n):
        for j in range(i + 1, n):
            if first[i] <= last[j] and first[j] <= last[i]:
                if offsets[i] < offsets[j] + sizes[j] and offsets[j] < offsets[i] + sizes[i]:
                    bad += 1
    return bad


def test_readme_example():
    p = tm.plan([4096, 1024, 8192], [0, 1, 2], [1, 2, 3])
    assert p.total == 9216 and p.lower_bound == 9216 and p.ratio == 1.0
    assert p.offsets.dtype == np.uint64 and list(p.offsets) == [0, 8192, 0]
    assert p.strategy.startswith("best") and p.seconds >= 0
    assert len(p) == 3 and "9216" in repr(p)


def test_strategies_and_every_plan_is_valid():
    sizes, first, last = random_problem(300)
    assert "best" in tm.strategies() and "greedy_by_size" in tm.strategies(objects=True)
    for s in tm.strategies():
        p = tm.plan(sizes, first, last, strategy=s, alignment=64, time_limit=1)
        assert p.total >= p.lower_bound
        assert np.all(p.offsets % 64 == 0)
        assert np.all(p.offsets + sizes <= p.total)
        assert overlaps(sizes, first, last, p.offsets) == 0, s


def test_numpy_dtypes_and_lists_agree():
    sizes, first, last = random_problem(200, seed=2)
    a = tm.plan(sizes, first, last)
    b = tm.plan(sizes.astype(np.uint32), first.astype(np.int32), last.astype(np.uint64))
    c = tm.plan(sizes.tolist(), first.tolist(), last.tolist())
    assert a.total == b.total == c.total
    assert np.array_equal(a.offsets, c.offsets)


def test_offsets_view_outlives_the_plan():
    offsets = tm.plan([100, 100], [0, 0], [0, 0], alignment=1).offsets
    assert sorted(offsets.tolist()) == [0, 100]  # the array keeps the plan alive


def test_objects():
    p = tm.plan([100, 50, 100], [0, 1, 2], [0, 1, 3], objects=True, strategy="greedy_by_size")
    assert p.objects and p.total == 100 and list(p.object_of) == [0, 0, 0]
    assert list(p.object_sizes) == [100]
    assert tm.plan([1], [0], [0]).object_of is None


def test_empty():
    p = tm.plan([], [], [])
    assert p.total == 0 and len(p.offsets) == 0


def test_problem_object_and_writers(tmp_path):
    prob = tm.Problem.from_arrays([10, 20, 30], [0, 1, 2], [1, 2, 3])
    assert len(prob) == 3 and prob.ids == ["0", "1", "2"] and prob.lower_bound() == 50
    p = tm.plan(prob, strategy="greedy_by_size", alignment=1)
    p.write(str(tmp_path / "plan.csv"))
    text = (tmp_path / "plan.csv").read_text()
    assert text.splitlines()[0].startswith("id,") and "offset" in text.splitlines()[0]
    p.write(str(tmp_path / "plan.json"))
    assert '"plan"' in (tmp_path / "plan.json").read_text()
    tm.write_problem(tmp_path / "p.csv", prob)
    again = tm.load_problem(tmp_path / "p.csv")
    assert list(again.sizes) == [10, 20, 30] and list(again.first) == [0, 1, 2]
    assert tm.plan(again, strategy="greedy_by_size", alignment=1).total == p.total


def test_to_html_and_svg(tmp_path):
    sizes, first, last = random_problem(1000, seed=3)
    p = tm.plan(sizes, first, last)
    p.to_html(str(tmp_path / "map.html"), title="random 1000")
    html = (tmp_path / "map.html").read_text()
    assert "<canvas" in html and f"const TOTAL={p.total}," in html and "random 1000" in html
    assert "http" not in html.replace("http-equiv", "")
    p.to_svg(str(tmp_path / "map.svg"))
    assert (tmp_path / "map.svg").read_text().startswith("<svg")


def test_gil_is_released_while_planning():
    import threading
    import time
    sizes, first, last = random_problem(20000, seed=4)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    start = time.perf_counter()
    tm.plan(sizes, first, last, strategy="best")
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    during = [x for x in ticks if start <= x <= start + elapsed]
    if elapsed > 0.05:  # long enough to tell
        assert len(during) >= 1, (elapsed, len(during))  # the other thread ran meanwhile


def test_best_on_threads_returns_the_one_thread_plan():
    sizes, first, last = random_problem(3000, seed=4)
    one = tm.plan(sizes, first, last, strategy="best")
    for threads in (2, 0):
        many = tm.plan(sizes, first, last, strategy="best", threads=threads)
        assert many.strategy == one.strategy
        assert np.array_equal(many.offsets, one.offsets)
    problem = tm.Problem.from_arrays(sizes, first, last)
    assert np.array_equal(tm.plan(problem, threads=2).offsets, tm.plan(problem).offsets)
    with pytest.raises(ValueError, match="threads"):
        tm.plan(sizes, first, last, threads=10_000)
    with pytest.raises((ValueError, TypeError), match="threads"):
        tm.plan(sizes, first, last, threads=-1)


def test_default_alignment_is_the_plan_alignment():
    # Arrays and a Problem alike: DEFAULTS["plan_alignment"] (1), as C++
    # PlanParams and `tensormem plan` on a problem file; a buffer's own
    # alignment applies on top.
    sizes, first, last = [100, 30, 7], [0, 1, 2], [1, 2, 3]
    assert tm.DEFAULTS["plan_alignment"] == 1
    assert tm.plan(sizes, first, last).total == tm.plan(sizes, first, last, alignment=1).total == 130
    problem = tm.Problem.from_arrays(sizes, first, last)
    assert tm.plan(problem).total == tm.plan(problem, alignment=1).total == 130
    assert tm.plan(problem, alignment=64).total == tm.plan(sizes, first, last, alignment=64).total == 158
