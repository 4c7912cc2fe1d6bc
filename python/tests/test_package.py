# SPDX-License-Identifier: Apache-2.0
"""The package as a user meets it: its version, what dir() shows, and every
replay allocator it lists actually replaying."""
import ctypes.util
import re

import pytest

import tensormem as tm
from conftest import ROOT


def test_version_is_the_projects_everywhere():
    cmake = re.search(r"project\(tensormem VERSION (\d+\.\d+\.\d+)", (ROOT / "CMakeLists.txt").read_text())
    pyproject = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert cmake and pyproject
    assert tm.__version__ == cmake.group(1) == pyproject.group(1)


def test_dir_shows_the_public_api():
    names = dir(tm)
    for name in tm.__all__:
        assert name in names and hasattr(tm, name), name
    assert "_tm" not in names and "os" not in names and "Any" not in names


TRACE = "Thread,Time,Action,Pointer,Size,Stream\n" + "".join(
    f"0,{2 * i},allocate,0x{0x1000 * (i + 1):x},{4096 * (i % 5 + 1)},0\n"
    f"0,{2 * i + 1},free,0x{0x1000 * (i + 1):x},{4096 * (i % 5 + 1)},0\n" for i in range(50))


@pytest.mark.parametrize("allocator", tm.replay_allocators())
def test_every_listed_allocator_replays(tmp_path, allocator):
    if allocator in ("jemalloc", "mimalloc") and ctypes.util.find_library(allocator) is None:
        pytest.skip(f"lib{allocator} is not installed")
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    r = tm.replay(str(path), allocator=allocator)
    assert r["ops"] == 100 and r["peak_in_use"] == 20480, r


def test_jemalloc_from_a_trace_object_and_a_missing_file(tmp_path):
    if ctypes.util.find_library("jemalloc") is None:
        pytest.skip("libjemalloc is not installed")
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    r = tm.replay(tm.load_trace(str(path)), allocator="jemalloc")
    assert r["peak_in_use"] == 20480
    with pytest.raises(FileNotFoundError):
        tm.replay(str(tmp_path / "missing.csv"), allocator="jemalloc")
