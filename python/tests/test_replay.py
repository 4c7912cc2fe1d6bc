# SPDX-License-Identifier: Apache-2.0
import inspect
import warnings

import pytest

import tensormem as tm


def test_trace_and_its_problem(trace_file):
    t = tm.load_trace(trace_file)
    assert len(t) == 5 and t.num_allocations == 3 and t.num_frees == 2 and t.num_never_freed == 1
    p = t.to_problem()
    assert p.ids == ["line2", "line3", "line5"] and list(p.first) == [0, 1, 3]
    assert tm.load_problem(trace_file).ids == p.ids


@pytest.mark.parametrize("allocator", ["bfc", "bfc_compact", "vmm", "pool", "system", "malloc"])
def test_replay_figures(trace_file, allocator):
    if allocator not in tm.replay_allocators():
        pytest.skip(f"no '{allocator}' replay allocator in this build")
    r = tm.replay(trace_file, allocator=allocator, repetitions=2)
    assert r["allocator"] == allocator and r["ops"] == 5
    # A malloc peer may serve a block partly from heap pages resident before the pass (its
    # reserved figure then falls short by up to a page or two, as the replay guide says).
    least = {"system": 0, "malloc": 3001000 - 2 * 4096}.get(allocator, 3001000)
    assert r["peak_in_use"] == 3001000 and r["peak_reserved"] >= least
    # Reserved is resident memory (every block's pages written); held the allocator's own figure.
    assert r["reserved_source"].startswith("resident pages") and r["held_source"]
    assert r["peak_held"] is None or r["peak_held"] >= 0
    assert r["warm_ns_per_op"] > 0  # a second pass, peers included
    if allocator == "vmm":  # its device calls, as replay's JSON has them
        assert r["vmm"]["map_calls"] >= 1 and r["vmm"]["granules_created"] >= 1
        assert set(r["vmm_warm"]) == set(r["vmm"])
    else:
        assert "vmm" not in r


@pytest.mark.parametrize("allocator", ["bfc_compact", "jemalloc"])
def test_replay_without_page_writes(trace_file, allocator):
    # The CLI's --no-page-writes: reserved is the allocator's own statistic (jemalloc runs in a child).
    if allocator not in tm.replay_allocators():
        pytest.skip(f"no '{allocator}' replay allocator in this build")
    r = tm.replay(trace_file, allocator=allocator, repetitions=1, write_pages=False)
    assert "the caller asked for no pages written" in r["reserved_source"]
    assert r["peak_reserved"] == r["peak_held"]


def test_replay_names_come_from_the_library(trace_file):
    names = tm.replay_allocators()
    assert {"bfc", "pool", "system"} <= set(names)
    with pytest.raises(ValueError, match="unknown replay allocator|known"):
        tm.replay(trace_file, allocator="nope")


def test_replay_through_an_allocator_object(trace_file):
    a = tm.BufferPool()
    r = tm.replay(tm.load_trace(trace_file), allocator=a)
    assert r["allocator"] == "pool" and r["ops"] == 5
    assert a.stats()["bytes_in_use"] == 0


@pytest.mark.parametrize("allocator", ["bfc", "vmm"])
def test_replay_map(trace_file, tmp_path, allocator):
    if allocator not in tm.replay_allocators():
        pytest.skip(f"no '{allocator}' replay allocator in this build")
    out = tmp_path / "replay.html"
    tm.replay(trace_file, allocator=allocator, html=out)
    html = out.read_text()
    assert "<canvas" in html and "const RK=[" in html and "event" in html


def test_shared_trace(shared, tmp_path):
    trace = shared / "traces" / "resnet18_train_b8.csv"
    r = tm.replay(trace, allocator="bfc_compact", html=tmp_path / "r.html")
    assert r["ops"] > 1000 and 1.0 <= r["reserved_over_in_use"] < 1.2


def test_bad_trace(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("Thread,Time,Action,Pointer,Size,Stream\n0,1,free,0x10,5,0\n")
    with pytest.raises(ValueError, match="bad.csv:2"):
        tm.load_trace(p)


def test_replay_compares_every_allocator_by_default(trace_file):
    # The CLI's default (-a all), from the one table.
    assert tm.DEFAULTS["replay_allocators"] == "all"
    assert inspect.signature(tm.replay).parameters["allocator"].default == "all"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a malloc peer not installed is left out, with a warning
        r = tm.replay(trace_file, repetitions=1)
    # A dict keyed by allocator, in the table's order; each value the figures
    # a one-allocator replay returns.
    names = tm.replay_allocators()
    assert list(r) == [n for n in names if n in r]
    assert {"bfc", "bfc_compact", "vmm", "pool", "system", "malloc"} <= set(r)
    for name, figures in r.items():
        assert figures["allocator"] == name and figures["ops"] == 5
    # The same figures as a replay of that allocator alone, to the page: resident memory counts
    # whole pages, and where a block starts within a page depends on the heap the forked child
    # inherits from this process, which the earlier calls changed.
    alone = tm.replay(trace_file, "pool", repetitions=1)
    assert r["pool"]["peak_in_use"] == alone["peak_in_use"]
    assert abs(r["pool"]["peak_reserved"] - alone["peak_reserved"]) <= 2 * 4096


def test_replay_several_allocators(trace_file, tmp_path):
    r = tm.replay(trace_file, ["pool", "bfc"], repetitions=1)
    assert list(r) == ["pool", "bfc"] and r["bfc"]["allocator"] == "bfc"
    assert list(tm.replay(trace_file, "system,pool", repetitions=1)) == ["system", "pool"]
    # A list of one is still several: the same shape as any list.
    assert list(tm.replay(trace_file, ["pool"], repetitions=1)) == ["pool"]
    # One name: its figures, as before.
    assert tm.replay(trace_file, "pool", repetitions=1)["allocator"] == "pool"
    with pytest.raises(ValueError, match="'pool' is listed twice"):
        tm.replay(trace_file, ["pool", "pool"])
    with pytest.raises(ValueError, match=", ".join(tm.replay_allocators())):
        tm.replay(trace_file, "pool,nope")
    with pytest.raises(ValueError, match="no allocator"):
        tm.replay(trace_file, [])
    with pytest.raises(TypeError, match="allocator is"):
        tm.replay(trace_file, [tm.BufferPool()])
    # html= draws the first of ours among several (malloc peers place nothing).
    out = tmp_path / "map.html"
    tm.replay(trace_file, ["malloc", "bfc"], repetitions=1, html=out)
    assert "<canvas" in out.read_text()
    with pytest.raises(ValueError, match="malloc peers"):
        tm.replay(trace_file, ["malloc"], html=tmp_path / "none.html")
