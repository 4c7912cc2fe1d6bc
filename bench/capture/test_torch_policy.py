# SPDX-License-Identifier: Apache-2.0
"""torch_policy.py against PyTorch's rules on small traces, and against PyTorch's own figures on
the shared traces (../shared/traces/README.md, an H100) where ../shared is present."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_policy as tp  # noqa: E402

MIB = 1 << 20
SHARED = os.path.join(os.environ.get("TENSORMEM_SHARED_DIR") or
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared"), "traces")


def write_trace(tmp_path, ops):
    """ops: ("a", name, bytes) or ("f", name)."""
    lines = ["Thread,Time,Action,Pointer,Size,Stream"]
    sizes = {}
    for t, op in enumerate(ops):
        if op[0] == "a":
            sizes[op[1]] = op[2]
            lines.append(f"0,{t},allocate,{op[1]},{op[2]},0")
        else:
            lines.append(f"0,{t},free,{op[1]},{sizes[op[1]]},0")
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_small_requests_share_one_2mib_segment(tmp_path):
    r = tp.simulate(write_trace(tmp_path, [("a", "p1", 1000), ("a", "p2", 1000), ("a", "p3", 700 * 1024)]), False)
    assert r["peak_reserved"] == 2 * MIB
    assert r["driver_calls"] == 1


def test_large_requests_under_10mib_take_20mib_segments_and_split(tmp_path):
    r = tp.simulate(write_trace(tmp_path, [("a", "p1", 4 * MIB), ("a", "p2", 8 * MIB), ("a", "p3", 7 * MIB)]), False)
    assert r["peak_reserved"] == 20 * MIB  # one segment, split twice
    assert r["driver_calls"] == 1


def test_large_requests_of_10mib_or_more_are_rounded_to_2mib(tmp_path):
    r = tp.simulate(write_trace(tmp_path, [("a", "p1", 12 * MIB + 1)]), False)
    assert r["peak_reserved"] == 14 * MIB


def test_no_split_when_at_most_1mib_would_be_left(tmp_path):
    # 19.25 MiB (rounded to 20 MiB: one whole segment) leaves nothing to split; 1.5 MiB then needs a
    # new segment; 18.75 MiB leaves 1.25 MiB in a 20 MiB segment: split, and 1.2 MiB fits there.
    ops = [("a", "p1", 19 * MIB + MIB // 4), ("a", "p2", 3 * MIB // 2), ("f", "p1"), ("f", "p2"),
           ("a", "p3", 18 * MIB + 3 * MIB // 4), ("a", "p4", MIB + MIB // 5)]
    r = tp.simulate(write_trace(tmp_path, ops), False)
    assert r["peak_reserved"] == 40 * MIB
    assert r["driver_calls"] == 2


def test_freed_neighbours_merge_within_a_segment(tmp_path):
    ops = [("a", "p1", 5 * MIB), ("a", "p2", 5 * MIB), ("f", "p1"), ("f", "p2"), ("a", "p3", 9 * MIB)]
    r = tp.simulate(write_trace(tmp_path, ops), False)
    assert r["driver_calls"] == 1


def test_best_fit_takes_the_smallest_free_block(tmp_path):
    # Two free holes of 6 and 3 MiB in one segment (with live blocks around them): a 3 MiB request
    # takes the 3 MiB hole, so 6 MiB still fits afterwards without a new segment.
    ops = [("a", "h6", 6 * MIB), ("a", "x", 2 * MIB), ("a", "h3", 3 * MIB), ("a", "y", 2 * MIB),
           ("f", "h6"), ("f", "h3"), ("a", "p3", 3 * MIB), ("a", "p6", 6 * MIB)]
    r = tp.simulate(write_trace(tmp_path, ops), False)
    assert r["driver_calls"] == 1


def test_expandable_segments_extend_the_free_end_in_20mib_pages(tmp_path):
    ops = [("a", "p1", 3 * MIB // 2), ("a", "p2", 30 * MIB)]
    r = tp.simulate(write_trace(tmp_path, ops), True)
    # 20 MiB mapped for the first; the free 18.5 MiB at the end grown by one 20 MiB page for the second.
    assert r["peak_reserved"] == 40 * MIB
    assert r["driver_calls"] == 2


def test_expandable_segments_reuse_freed_space_before_mapping(tmp_path):
    ops = [("a", "p1", 8 * MIB), ("a", "p2", 8 * MIB), ("f", "p1"), ("a", "p3", 8 * MIB)]
    r = tp.simulate(write_trace(tmp_path, ops), True)
    assert r["peak_reserved"] == 20 * MIB
    assert r["calls_per_1k_ops_warm"] == 0.0  # the second pass finds everything cached


# PyTorch 2.11 on an H100 (../shared/traces/README.md): default and expandable reserved / in use.
PYTORCH_H100 = {
    "resnet18_train_b8.csv": (1.326, 1.076),
    "resnet50_train_b4.csv": (1.088, 1.057),
    "mobilenet_v2_train_b16.csv": (1.182, 1.013),
    "transformer_ctx128_forward_mixed.csv": (1.023, 1.007),
    "gpt2_medium_generate.csv.gz": (1.062, 1.046),
    "resnet50_train_b128.csv.gz": (1.237, 1.010),
}


@pytest.mark.parametrize("name", sorted(PYTORCH_H100))
def test_matches_pytorch_on_the_shared_traces(name):
    path = os.path.join(SHARED, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found (../shared is not beside the repository)")
    default, expandable = PYTORCH_H100[name]
    assert tp.simulate(path, False)["ratio"] == pytest.approx(default, abs=0.005)
    assert tp.simulate(path, True)["ratio"] == pytest.approx(expandable, abs=0.005)
