import gzip
import shutil

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


def shared_model():
    from conftest import SHARED
    path = SHARED / "models" / "resnet18.onnx"
    if not path.exists():
        pytest.skip("the shared models are absent")
    return path


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
    try:
        p = tm.load_problem(src)
    except (ValueError, tm.TensormemError) as e:
        pytest.skip(f".csv.gz reading is not in this build yet: {e}")
    with gzip.open(src, "rb") as f, open(tmp_path / "t.csv", "wb") as g:
        shutil.copyfileobj(f, g)
    assert len(p) == len(tm.load_problem(tmp_path / "t.csv"))
