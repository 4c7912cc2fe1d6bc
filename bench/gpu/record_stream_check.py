#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""record_stream through the plug-in on a GPU, with tensormem.torch's own enable().

Usage: record_stream_check.py PLUGIN.so
A side stream spins (torch.cuda._sleep) and then reads a 16 MiB tensor, which the main stream
deletes at once. With record_stream the plug-in must not hand those bytes out again until the
side stream is done; a tensor deleted the same way without record_stream is handed out again at
once (PyTorch's documented hazard), which shows the check can tell the two apart. Then
torch.cuda.empty_cache() (which must give the blocks back through the plug-in),
set_per_process_memory_fraction (a request above the fraction is refused), a CUDA
graph capture, which the plug-in refuses with its reason (it has no graph memory pools), and an
allocation after it. Prints one JSON line; "ok" is true when all behave so. Needs PyTorch and a
GPU; outside the library and CI.
"""
import importlib.util
import json
import os
import sys

os.environ["TENSORMEM_TORCH_PLUGIN"] = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "tensormem_torch", os.path.join(here, "..", "..", "python", "tensormem", "torch.py"))
tt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tt)  # the module alone: the package's native part is not built on the device
import torch  # noqa: E402

tt.enable(0)
n = 16 << 20
side = torch.cuda.Stream()
out = {"torch": torch.__version__, "wired": tt.record_stream_wired()}


def side_read(t, record):
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(1 << 30)  # about half a second of spinning before the read
        total = t.sum()
    if record:
        t.record_stream(side)
    return total


# Without record_stream: the bytes come back at once (the hazard record_stream exists for).
w = torch.ones(n, dtype=torch.uint8, device="cuda")
ptr_w = w.data_ptr()
side_read(w, record=False)
del w
v = torch.zeros(n, dtype=torch.uint8, device="cuda")
out["reused_without_record"] = v.data_ptr() == ptr_w
side.synchronize()
del v

# With record_stream: held until the side stream is done.
x = torch.ones(n, dtype=torch.uint8, device="cuda")
ptr_x = x.data_ptr()
total = side_read(x, record=True)
del x
y = torch.zeros(n, dtype=torch.uint8, device="cuda")
out["reused_while_side_busy"] = y.data_ptr() == ptr_x
out["frees_deferred"] = tt.stats(0).get("frees_deferred")
side.synchronize()
out["side_sum_correct"] = int(total.item()) == n
z = torch.zeros(n, dtype=torch.uint8, device="cuda")
out["reused_after_side_done"] = z.data_ptr() == ptr_x

# torch.cuda.empty_cache() reaches the plug-in (set_reset_fn): the 16 MiB blocks go back.
reserved_before = tt.stats(0)["bytes_reserved"]
del y, z
torch.cuda.empty_cache()
out["empty_cache_gave_back"] = tt.stats(0)["bytes_reserved"] < reserved_before

# torch.cuda.set_per_process_memory_fraction reaches the plug-in (set_memory_fraction_fn).
torch.cuda.set_per_process_memory_fraction(0.01, 0)
out["fraction_limit"] = tt.stats(0).get("bytes_limit")
try:
    too_big = torch.empty(int(0.02 * torch.cuda.get_device_properties(0).total_memory), dtype=torch.uint8,
                          device="cuda")
    out["fraction_refused"] = False
    del too_big
except RuntimeError as e:  # the plug-in's refusal, thrown through PyTorch (OutOfMemoryError is one too)
    out["fraction_refused"] = True
    # Worded as PyTorch's own, so that batch-size finders recognise it.
    out["fraction_refusal_reads_as_oom"] = "CUDA out of memory." in str(e)
torch.cuda.set_per_process_memory_fraction(1.0, 0)

# CUDA graph capture: the plug-in has no graph pools, so an allocation on the
# capturing stream is refused with its reason (not events on the capture, not
# memory a replay would share with later tensors).
g = torch.cuda.CUDAGraph()
static_in = torch.ones(1 << 20, device="cuda")
try:
    with torch.cuda.graph(g):
        static_out = static_in * 2
    out["graph_capture"] = "captured (not expected)"
except Exception as e:  # noqa: BLE001  (the plug-in's refusal, thrown through PyTorch)
    out["graph_capture"] = "refused: " + str(e).splitlines()[0][:120]
lib = tt._load(os.environ["TENSORMEM_TORCH_PLUGIN"])
out["graph_capture_reason"] = tt._last_error(lib)[:160]
try:
    torch.cuda.synchronize()
    out["after_capture_alloc_ok"] = torch.ones(4, device="cuda").sum().item() == 4
except Exception as e:  # noqa: BLE001
    out["after_capture_alloc_ok"] = False
    out["after_capture_error"] = str(e).splitlines()[0][:160]

out["ok"] = bool(out["wired"] and out["reused_without_record"] and not out["reused_while_side_busy"]
                 and out["frees_deferred"] == 1 and out["side_sum_correct"] and out["reused_after_side_done"]
                 and out["empty_cache_gave_back"] and out["fraction_refused"] and bool(out["fraction_limit"])
                 and out.get("fraction_refusal_reads_as_oom", False)
                 and out["graph_capture"].startswith("refused")
                 and "CUDA graph" in out["graph_capture_reason"] and out["after_capture_alloc_ok"])
print(json.dumps(out))
