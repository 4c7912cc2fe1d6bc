# SPDX-License-Identifier: Apache-2.0
import gzip
import os
import shutil
import subprocess
import sys

import pytest

import tensormem as tm

INPUT_NAMES = {"resnet18": "input"}


def test_example_csv(examples):
    p = tm.load_problem(examples / "five_buffers.csv")
    assert len(p) == 5
    assert tm.plan(p, strategy="greedy_by_size", alignment=1).total == 12


def test_onnx_records(shared, tmp_path):
    if not tm.HAVE_ONNX:
        pytest.skip("built without the ONNX importer")
    model = shared / "models" / "resnet18.onnx"
    prob = tm.records_from_onnx(model)
    assert len(prob) > 10 and all(prob.sizes > 0)
    p = tm.plan(prob)
    assert p.total == p.lower_bound
    assert len(tm.load_problem(model)) == len(prob)
    name = INPUT_NAMES.get("resnet18")
    if name:
        same = tm.records_from_onnx(model, input_shapes={name: [1, 3, 224, 224]})
        assert same.lower_bound() == prob.lower_bound()
        # The exported graph fixes batch 1 in its Reshape: shape inference says so.
        with pytest.raises(ValueError, match="shape"):
            tm.records_from_onnx(model, input_shapes={name: [8, 3, 224, 224]})
    p.to_html(str(tmp_path / "resnet18.html"))


def test_onnx_records_in_a_chosen_order(shared):
    if not tm.HAVE_ONNX:
        pytest.skip("built without the ONNX importer")
    model = shared / "models" / "shufflenet_v2_x1_0.onnx"
    given = tm.records_from_onnx(model)
    for order in ("best", "exact"):
        chosen = tm.records_from_onnx(model, order=order)
        assert len(chosen) == len(given)
        assert chosen.lower_bound() <= given.lower_bound()
    with pytest.raises(ValueError, match="unknown order 'fastest'"):
        tm.records_from_onnx(model, order="fastest")


def test_plan_model_in_a_chosen_order(shared, tmp_path):
    if not tm.HAVE_ONNX:
        pytest.skip("built without the ONNX importer")
    model = shared / "models" / "shufflenet_v2_x1_0.onnx"
    given = tm.plan_model(model, strategy="best")
    assert given.order["method"] == "given" and given.order["candidates"] == []
    assert given.order["lower_bound"] is None  # the given order computes no bound
    assert given.total == tm.plan(tm.records_from_onnx(model), strategy="best").total
    for order in ("best", "exact"):
        p = tm.plan_model(model, strategy="best", order=order)
        assert p.order["peak"] <= p.order["given_peak"] == given.order["peak"]
        assert p.order["lower_bound"] <= p.order["peak"]
        assert len(p) == len(given)
    joint = tm.plan_model(model, strategy="best", order="joint")
    assert joint.total <= given.total and len(joint) == len(given)
    arenas = [c["arena"] for c in joint.order["candidates"]]
    assert joint.order["candidates"][0]["method"] == "given"
    assert arenas[0] == given.total and joint.total == min(arenas)
    # The plan is the chosen order's: its records are those of that order.
    if joint.order["method"] != "given":
        assert joint.lower_bound <= given.lower_bound
    joint.write(tmp_path / "joint.csv")
    assert tm.plan(tm.load_problem(tmp_path / "joint.csv"), strategy="best").total == joint.total
    with pytest.raises(ValueError, match="unknown order 'fastest'"):
        tm.plan_model(model, order="fastest")
    with pytest.raises(ValueError):
        tm.plan_model(model, strategy="fastest")
    assert tm.plan(tm.load_problem(model)).order is None


def shared_model():
    from conftest import SHARED
    path = SHARED / "models" / "resnet18.onnx"
    if not path.exists():
        pytest.skip("the shared models are absent")
    return path


def _load_from_stdin(data: bytes, call: str = "tm.load_problem('-')"):
    """What `call` gives with `data` on standard input, in a child process
    (standard input is read once per process)."""
    code = ("import tensormem as tm\n"
            f"try:\n    r = {call}\n    print('OK', len(r), repr(r))\n"
            "except Exception as e:\n    print('ERR', type(e).__name__, e)\n")
    return subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                          env=dict(os.environ), timeout=60).stdout.decode().strip()


def test_standard_input(examples):
    # "-" is standard input, gzip-compressed or not, named <stdin>.
    csv = (examples / "five_buffers.csv").read_bytes()
    out = _load_from_stdin(csv)
    assert out.startswith("OK 5 <tensormem.Problem 5 buffers from <stdin>>"), out
    assert _load_from_stdin(gzip.compress(csv)) == out
    # A model there is refused with the way to give it, with or without the importer.
    model = (examples / "resnet18.onnx").read_bytes()
    expected = ("ERR ValueError <stdin>: an ONNX model: give its file's path "
                "(models are not read from standard input or pipes)")
    assert _load_from_stdin(model) == expected
    if tm.HAVE_ONNX:
        assert _load_from_stdin(model, "tm.records_from_onnx('-')") == expected


def test_onnx_errors(tmp_path):
    if not tm.HAVE_ONNX:
        pytest.skip("built without the ONNX importer")
    with pytest.raises(FileNotFoundError):
        tm.records_from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="no graph input named 'zz'"):
        tm.records_from_onnx(shared_model(), input_shapes={"zz": [1]})
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises((ValueError, tm.TensormemError)):
        tm.records_from_onnx(bad)


def test_csv_gz(shared, tmp_path):
    src = shared / "traces" / "resnet50_train_b128.csv.gz"
    p = tm.load_problem(src)
    with gzip.open(src, "rb") as f, open(tmp_path / "t.csv", "wb") as g:
        shutil.copyfileobj(f, g)
    assert len(p) == len(tm.load_problem(tmp_path / "t.csv"))
