# SPDX-License-Identifier: Apache-2.0
"""The same defaults and names on every surface: the CLI (run as a program),
the Python functions and the C++ table they both read (tensormem.DEFAULTS
is tensormem/defaults.h)."""
import csv
import inspect
import io
import json
import os
import pathlib
import subprocess
import warnings

import pytest

import tensormem as tm

ROOT = pathlib.Path(__file__).resolve().parents[2]
def cli(*args, ok=True):
    path = os.environ.get("TENSORMEM_CLI", "")
    if not path:
        pytest.skip("the CLI was not built (TENSORMEM_CLI is unset)")
    r = subprocess.run([path, *map(str, args)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def default(fn, name):
    return inspect.signature(fn).parameters[name].default


def test_plan_and_solve_defaults_agree(tmp_path):
    sizes, first, last = [100, 30, 7], [0, 1, 2], [1, 2, 3]
    path = tmp_path / "p.csv"
    tm.write_problem(path, tm.Problem.from_arrays(sizes, first, last))
    j = json.loads(cli("plan", path, "-s", "greedy_by_size", "--json").stdout)
    assert j["alignment"] == tm.DEFAULTS["plan_alignment"] == default(tm.plan, "alignment")
    assert default(tm.solve, "alignment") == tm.DEFAULTS["plan_alignment"]
    python = tm.plan(sizes, first, last, strategy="greedy_by_size").total
    assert j["results"][0]["total"] == python == tm.plan(tm.load_problem(path), strategy="greedy_by_size").total
    assert default(tm.plan, "time_limit") == default(tm.solve, "time_limit") == tm.DEFAULTS["time_limit"]
    time_limit = next(line for line in cli("plan", "--help").stdout.splitlines() if "--time-limit" in line)
    assert time_limit.rstrip().endswith(f"={tm.DEFAULTS['time_limit']:g}")


def test_best_polish_is_reported_alike(tmp_path):
    """best's exact polish: the same defaults (tensormem.DEFAULTS) and the
    same figures in Python's Plan and the CLI's JSON row. The heuristics
    miss the bound here (160 bytes against a peak of 144)."""
    assert tm.DEFAULTS["polish_nodes"] == 50_000
    assert 0 < tm.DEFAULTS["polish_time_share"] <= 1 and tm.DEFAULTS["polish_seconds"] > 0
    sizes, first, last = [48, 48, 48, 32, 64, 16, 64], [3, 0, 3, 2, 5, 2, 2], [4, 0, 6, 4, 5, 5, 2]
    path = tmp_path / "p.csv"
    tm.write_problem(path, tm.Problem.from_arrays(sizes, first, last))
    row = json.loads(cli("plan", path, "-s", "best", "--json").stdout)["results"][0]
    p = tm.plan(sizes, first, last, strategy="best")
    assert p.total == row["total"] == 144
    assert p.polish_nodes == row["polish_nodes"] <= tm.DEFAULTS["polish_nodes"]
    assert 0 <= p.polish_seconds <= p.seconds
    heuristic = tm.plan(sizes, first, last, strategy="greedy_by_size")
    assert heuristic.polish_seconds is None and heuristic.polish_nodes is None
    help_text = " ".join(cli("plan", "--help").stdout.split())
    share, cap = tm.DEFAULTS["polish_time_share"] * 100, tm.DEFAULTS["polish_seconds"]
    assert f"polish takes at most {share:g} % of it ({cap:g} s at most)" in help_text


def test_model_defaults_agree(tmp_path):
    if not tm.HAVE_ONNX:
        pytest.skip("built without the ONNX importer")
    model = ROOT / "examples" / "resnet18.onnx"
    j = json.loads(cli("plan", model, "-s", "naive", "--json").stdout)
    assert j["alignment"] == tm.DEFAULTS["tensor_alignment"] == default(tm.records_from_onnx, "alignment")
    assert default(tm.plan_model, "alignment") == tm.DEFAULTS["tensor_alignment"]
    # The node order: the CLI's --order default, Python's, the C++ table's.
    assert j["graph"]["order"]["method"] == tm.DEFAULTS["order"] == default(tm.records_from_onnx, "order")
    assert default(tm.plan_model, "order") == tm.DEFAULTS["order"]
    order = next(line for line in cli("plan", "--help").stdout.splitlines() if "--order" in line)
    assert order.split()[1].endswith("=" + tm.DEFAULTS["order"])
    # The naive total below the table is the naive row.
    assert j["graph"]["naive_scratch_bytes"] == j["results"][0]["total"]
    rows = list(csv.DictReader(io.StringIO(cli("records", model).stdout)))
    problem = tm.load_problem(model)
    assert [int(r["size"]) for r in rows] == list(problem.sizes)
    assert problem.ids == tm.records_from_onnx(model).ids == [r["id"] for r in rows]
    # solve reads a model as plan and Python's load_problem do.
    out = tmp_path / "solved.csv"
    cli("solve", model, "--time-limit", "1", "--out", out)
    assert len(list(csv.DictReader(out.open()))) == len(problem)


def test_replay_defaults_agree(trace_file):
    trace = trace_file
    j = json.loads(cli("replay", trace, "-a", "pool,bfc_compact", "--json").stdout)
    assert j["repetitions"] == tm.DEFAULTS["replay_repetitions"] == default(tm.replay, "repetitions")
    assert j["warm_passes"] == tm.DEFAULTS["replay_warm_passes"] == default(tm.replay, "warm_passes")
    assert j["alignment"] == tm.DEFAULTS["tensor_alignment"] == default(tm.replay, "alignment")
    for row in j["results"]:
        r = tm.replay(trace, row["allocator"])
        assert (r["peak_in_use"], r["peak_held"]) == (row["peak_in_use"], row["peak_held"])
        assert_same_resident(r["peak_reserved"], row["peak_reserved"])
    # bfc_compact is the BFC under the compact preset, on every surface. An
    # allocator object is not fresh, so its replay has no measured pass: its
    # reserved figure is its own statistic, the CLI's peak_held.
    a = tm.BfcAllocator(preset="compact")
    try:
        assert tm.replay(trace, a)["peak_reserved"] == j["results"][1]["peak_held"]
    finally:
        a.close()


def assert_same_resident(python, cli_figure):
    # Resident memory is the process's: the Python interpreter and the CLI
    # differ by a few pages of their own heaps (an allocator over the C
    # library's memory sees them), so the figures agree to a page or two per
    # MiB, not to the byte. peak_held, the allocator's statistic, is exact.
    assert abs(python - cli_figure) <= 64 * 1024 + cli_figure // 100, (python, cli_figure)


def test_names_come_from_one_table(trace_file):
    plan_help = cli("plan", "--help").stdout
    for name in tm.strategies() + tm.strategies(objects=True):
        assert name in plan_help
    replay_help = cli("replay", "--help").stdout
    for name in tm.replay_allocators() + tm.bfc_presets():
        assert name in replay_help
    r = cli("replay", "-", "-a", "nope", ok=False)
    assert r.returncode == 2 and ", ".join(tm.replay_allocators()) in r.stderr
    with pytest.raises(ValueError, match=", ".join(tm.replay_allocators())):
        tm.replay(trace_file, "nope")


def test_replay_compares_the_same_allocators(trace_file):
    # replay() and `tensormem replay` both compare every allocator unless told.
    assert default(tm.replay, "allocator") == tm.DEFAULTS["replay_allocators"]
    j = json.loads(cli("replay", trace_file, "--json", "-r", "1").stdout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        python = tm.replay(trace_file, repetitions=1)
    assert [row["allocator"] for row in j["results"]] == list(python)
    peers = set(tm._MALLOC_PEERS)
    for row in j["results"]:
        if row["allocator"] not in peers:
            assert python[row["allocator"]]["peak_held"] == row["peak_held"], row["allocator"]
            assert_same_resident(python[row["allocator"]]["peak_reserved"], row["peak_reserved"])
