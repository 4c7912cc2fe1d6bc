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
