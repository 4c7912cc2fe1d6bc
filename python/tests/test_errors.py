# SPDX-License-Identifier: Apache-2.0
"""Bad input: a Python exception naming the problem, never a crash."""
import numpy as np
import pytest

import tensormem as tm


@pytest.mark.parametrize("args, match", [
    (([1, 2], [0], [1, 1]), "same length"),
    (([1, -2], [0, 0], [1, 1]), r"sizes\[1\] is negative"),
    (([1.5], [0], [1]), "sizes: dtype float64 is not an integer type"),
    ((["a"], [0], [1]), "sizes: dtype"),
    (([1], [0.0], [1]), "first: dtype float64"),
    ((np.ones((2, 2), dtype=np.int64), [0, 0], [1, 1]), "1-D"),
    (([1], [2], [1]), "lifetime"),
    (([1], [-1], [1]), "lifetime"),
    (([1], [0], [np.uint64(2**63 + 5)]), "out of range"),
    (([[1, 2], [3]], [0], [1]), "sizes"),
])
def test_bad_arrays(args, match):
    with pytest.raises(ValueError, match=match):
        tm.plan(*args)


def test_unknown_strategy_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown offsets strategy 'nope'.*greedy_by_size"):
        tm.plan([1], [0], [0], strategy="nope")
    with pytest.raises(ValueError, match="objects strategy"):
        tm.plan([1], [0], [0], strategy="nope", objects=True)


def test_alignment():
    with pytest.raises(ValueError, match="alignment"):
        tm.plan([1], [0], [0], alignment=0)
    with pytest.raises(ValueError, match="alignment must be non-negative"):
        tm.plan([1], [0], [0], alignment=-1)


def test_missing_files():
    with pytest.raises(FileNotFoundError, match="/no/such/file.csv"):
        tm.load_problem("/no/such/file.csv")
    with pytest.raises(FileNotFoundError):
        tm.load_trace("/no/such/trace.csv")
    with pytest.raises(FileNotFoundError):
        tm.replay("/no/such/trace.csv", "bfc")


def test_malformed_file_names_line_and_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\na,0,2,10\nb,0,2,x\n")
    with pytest.raises(ValueError, match=r"bad.csv:3.*size"):
        tm.load_problem(bad)


def test_write_to_a_missing_folder():
    p = tm.plan([1], [0], [0])
    with pytest.raises(FileNotFoundError, match="cannot open for writing: No such file or directory"):
        p.to_html("/no/such/dir/map.html")


def test_write_to_a_directory_or_failing_leaves_nothing(tmp_path):
    # As the CLI's outputs: a directory refused, and a file appears whole or not at all.
    p = tm.plan([1], [0], [0])
    with pytest.raises(ValueError, match="is a directory, not a file"):
        p.write(tmp_path)
    with pytest.raises(ValueError, match="is a directory, not a file"):
        tm.write_problem(tmp_path, tm.Problem.from_arrays([1], [0], [0]))
    out = tmp_path / "plan.csv"
    p.write(out)  # a pathlib.Path, as the loaders take
    p.to_html(tmp_path / "map.html")
    p.to_svg(str(tmp_path / "map.svg"))
    assert out.read_text().startswith("id,")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["map.html", "map.svg", "plan.csv"]
    with pytest.raises(TypeError, match="path must be a str"):
        p.write(bytes(out))


def test_a_huge_argument_is_cut_in_the_message_as_the_cli_cuts_it(tmp_path):
    name = str(tmp_path / ("x" * 100000 + ".csv"))
    with pytest.raises((OSError, ValueError, tm.TensormemError)) as e:
        tm.load_problem(name)
    assert "bytes cut)..." in str(e.value) and len(str(e.value)) < 2000


def test_error_type_is_exported():
    assert issubclass(tm.TensormemError, Exception)
    a = tm.BufferPool()
    a.close()
    with pytest.raises(tm.TensormemError, match="closed"):
        a.stats()


@pytest.mark.parametrize("call, match", [
    (lambda: tm.plan([1], [0], [0], alignment=-64), "alignment must be non-negative, got -64"),
    (lambda: tm.BfcAllocator(memory_limit=-1), "memory_limit must be non-negative"),
    (lambda: tm.BfcAllocator(initial_region_bytes=-5), "initial_region_bytes must be non-negative"),
    (lambda: tm.BufferPool(-64), "split_granularity must be non-negative"),
    (lambda: tm.solve(tm.Problem.from_arrays([1], [0], [0]), node_limit=-1), "node_limit must be non-negative"),
    (lambda: tm.solve(tm.Problem.from_arrays([1], [0], [0]), capacity=-1), "capacity must be non-negative"),
])
def test_negative_counts_are_value_errors_naming_the_argument(call, match):
    # The binding takes unsigned integers: a negative one was a TypeError
    # listing the whole signature.
    with pytest.raises(ValueError, match=match):
        call()


def test_counts_must_be_integers():
    with pytest.raises(TypeError, match="alignment must be an integer, not float"):
        tm.plan([1], [0], [0], alignment=64.0)
    assert tm.plan([1, 5], [0, 1], [1, 2], alignment=np.int64(64)).total == tm.plan([1, 5], [0, 1], [1, 2], alignment=64).total


def test_allocate_checks_its_counts():
    a = tm.SystemAllocator()
    with pytest.raises(ValueError, match="bytes must be non-negative, got -5"):
        a.allocate(-5)
    with pytest.raises(ValueError, match="alignment must be non-negative"):
        a.allocate(10, -64)
    with pytest.raises(OverflowError):
        a.allocate(2**64)
    p = a.allocate(10, 128)
    assert p % 128 == 0
    a.free(p)
