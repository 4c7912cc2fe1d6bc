# SPDX-License-Identifier: Apache-2.0
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("TENSORMEM_SHARED_DIR", ROOT.parent / "shared"))


@pytest.fixture
def shared():
    if not SHARED.is_dir():
        pytest.skip(f"the shared data folder {SHARED} is absent")
    return SHARED


@pytest.fixture
def examples():
    return ROOT / "examples"


# A small allocation trace (RAPIDS replay-log CSV): one block never freed.
TRACE = """Thread,Time,Action,Pointer,Size,Stream
0,1,allocate,0x1000,1000,0
0,2,allocate,0x2000,3000000,0
0,3,free,0x1000,1000,0
0,4,allocate,0x3000,500,0
0,5,free,0x2000,3000000,0
"""


@pytest.fixture
def trace_file(tmp_path):
    p = tmp_path / "small.csv"
    p.write_text(TRACE)
    return p
