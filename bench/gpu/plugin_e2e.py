#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end with the PyTorch plug-in, for a machine with an NVIDIA GPU and PyTorch.

Usage: plugin_e2e.py WORKLOAD ALLOCATOR [PLUGIN.so]
  WORKLOAD: gpt2_train_varlen | gpt2_medium_generate (the workloads of ../shared/gpu/capture.py)
  ALLOCATOR: default | expandable | tensormem
Run each allocator in its own process (PyTorch's allocator is chosen before the first CUDA
allocation). Prints one JSON line: per-step seconds (losses or generated tokens, to compare
runs), peak reserved by the allocator's own statistics (PyTorch's max_memory_reserved, or the
plug-in's peak_bytes_reserved), and the device memory nvidia-smi saw at the end.
Not run in this repository's CI: no GPU there. Measurement tool, outside the library.
"""
import ctypes, json, os, subprocess, sys, time

W, ALLOC = sys.argv[1], sys.argv[2]
PLUGIN = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "plugins", "torch", "libtensormem_torch.so")
if ALLOC == "expandable":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
import torch  # noqa: E402  (after the environment is set)

lib = None
if ALLOC == "tensormem":
    a = torch.cuda.memory.CUDAPluggableAllocator(PLUGIN, "tensormem_torch_malloc_or_raise", "tensormem_torch_free")
    lib = ctypes.CDLL(PLUGIN)
    # record_stream wired as tensormem.torch.enable() does (these workloads use one stream).
    setter = getattr(a.allocator(), "set_record_stream_fn", None)
    if setter is not None:
        setter(ctypes.cast(lib.tensormem_torch_record_stream, ctypes.c_void_p).value)
    torch.cuda.memory.change_current_allocator(a)
    lib.tensormem_torch_stats.restype = ctypes.c_size_t
    lib.tensormem_torch_stats.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]

dev = "cuda"
g = torch.Generator().manual_seed(0)
rint = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))
torch.manual_seed(0)


def gpt2(n_layer=12, n_embd=768, n_head=12):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=1024, vocab_size=50257)
    return GPT2LMHeadModel(cfg).to(dev)


def gpt2_train_varlen(steps):
    m = gpt2()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    for _ in range(12):
        L = rint(16, 128) * 8
        x = torch.randint(0, 50257, (8, L), device=dev)
        t0 = time.perf_counter()
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = m(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        steps.append({"seconds": time.perf_counter() - t0, "tokens": 8 * L, "loss": float(loss)})


@torch.no_grad()
def gpt2_medium_generate(steps):
    m = gpt2(24, 1024, 16).to(torch.bfloat16).eval()
    for _ in range(8):
        b, L = [1, 2, 4, 8, 16][rint(0, 4)], rint(4, 64) * 8
        x = torch.randint(0, 50000, (b, L), device=dev)
        t0 = time.perf_counter()
        out = m.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=64,
                         min_new_tokens=64, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
        steps.append({"seconds": time.perf_counter() - t0, "batch": b, "prompt": L,
                      "tokens_checksum": int(out[:, L:].sum())})


steps = []
torch.cuda.init()
{"gpt2_train_varlen": gpt2_train_varlen, "gpt2_medium_generate": gpt2_medium_generate}[W](steps)
torch.cuda.synchronize()
row = {"workload": W, "allocator": ALLOC, "steps": steps,
       "settings": {k: v for k, v in os.environ.items() if k.startswith(("TENSORMEM_VMM_", "PYTORCH_CUDA_ALLOC"))},
       "step_seconds_median": sorted(s["seconds"] for s in steps)[len(steps) // 2]}
if lib is not None:
    buf = ctypes.create_string_buffer(4096)
    lib.tensormem_torch_stats(0, buf, len(buf))
    st = json.loads(buf.value.decode())
    row.update(peak_reserved=st.get("peak_bytes_reserved"), peak_in_use=st.get("peak_bytes_in_use"),
               tensormem=st)
else:
    row.update(peak_reserved=torch.cuda.max_memory_reserved(), peak_in_use=torch.cuda.max_memory_allocated())
try:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                         capture_output=True, text=True, timeout=30)
    row["nvidia_smi_used_mib"] = int(smi.stdout.strip().splitlines()[0])
except Exception as e:  # the figure is optional; say why it is missing
    row["nvidia_smi_used_mib"] = f"unavailable: {e}"
print(json.dumps(row))
