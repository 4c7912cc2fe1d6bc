# SPDX-License-Identifier: Apache-2.0
"""tensormem.torch: the error paths run everywhere; enabling needs PyTorch,
a GPU and the built plug-in (skipped with the reason otherwise)."""
import importlib.util
import os
import subprocess
import sys

import pytest

import tensormem.torch as tt

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def test_plugin_path_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORMEM_TORCH_PLUGIN", str(tmp_path / "missing.so"))
    with pytest.raises(tt.TorchPluginError, match="TENSORMEM_TORCH_PLUGIN=.*no such file"):
        tt.plugin_path()
    fake = tmp_path / "libtensormem_torch.so"
    fake.write_bytes(b"not a library")
    monkeypatch.setenv("TENSORMEM_TORCH_PLUGIN", str(fake))
    assert tt.plugin_path() == str(fake)


def test_not_built_names_where_it_looked(monkeypatch):
    monkeypatch.delenv("TENSORMEM_TORCH_PLUGIN", raising=False)
    monkeypatch.setattr(tt, "_candidates", lambda: ["/nowhere/libtensormem_torch.so"])
    with pytest.raises(tt.TorchPluginError, match="not found.*tensormem_torch.*CUDA toolkit"):
        tt.plugin_path()


def test_a_broken_plugin_is_an_error_not_a_crash(tmp_path, monkeypatch):
    fake = tmp_path / "libtensormem_torch.so"
    fake.write_bytes(b"not a library")
    monkeypatch.setenv("TENSORMEM_TORCH_PLUGIN", str(fake))
    monkeypatch.setattr(tt, "_lib", None)
    with pytest.raises(tt.TorchPluginError, match="cannot be loaded"):
        tt.stats()


def test_a_library_that_is_not_the_plugin_is_named(monkeypatch):
    import tensormem._tensormem as native  # a real shared library, without the plug-in's functions
    monkeypatch.setenv("TENSORMEM_TORCH_PLUGIN", native.__file__)
    monkeypatch.setattr(tt, "_lib", None)
    with pytest.raises(tt.TorchPluginError, match="not tensormem's plug-in"):
        tt.stats()


def test_without_torch_enable_says_so():
    if HAVE_TORCH:
        pytest.skip("PyTorch is installed here")
    # In a child process, so that no import state leaks.
    code = ("import tensormem.torch as tt\n"
            "try:\n    tt.enable()\nexcept tt.TorchPluginError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), timeout=60).stdout
    assert out.startswith("ERR PyTorch is not importable"), out
    assert not tt.enabled()


def _skip_without_a_gpu_and_the_plugin():
    if not HAVE_TORCH:
        pytest.skip("PyTorch is not installed")
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    try:
        tt.plugin_path()
    except tt.TorchPluginError as e:
        pytest.skip(str(e))


def test_enable_on_a_gpu():
    _skip_without_a_gpu_and_the_plugin()
    code = ("import torch, tensormem.torch as tt\n"
            "tt.enable(0)\n"
            "x = torch.empty(1 << 20, device='cuda')\n"
            "s = tt.stats(0)\n"
            "assert s['bytes_in_use'] >= 4 << 20, s\n"
            "del x\n"
            "tt.empty_cache(0)\n"
            "print('OK', s['bytes_in_use'])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.stdout.startswith("OK"), r.stdout + r.stderr


def test_record_stream_on_a_gpu():
    """A tensor used on a side stream and deleted: with record_stream its
    memory is not handed out again while the side stream's work is queued,
    and the bytes it held come back once that work is done."""
    _skip_without_a_gpu_and_the_plugin()
    code = ("import torch, tensormem.torch as tt\n"
            "tt.enable(0)\n"
            "if not tt.record_stream_wired():\n    print('SKIP no hook'); raise SystemExit\n"
            "x = torch.ones(16 << 20, dtype=torch.uint8, device='cuda')\n"
            "side = torch.cuda.Stream()\n"
            "side.wait_stream(torch.cuda.current_stream())\n"
            "with torch.cuda.stream(side):\n"
            "    torch.cuda._sleep(1 << 30)\n"  # about a second of spinning on the side stream
            "    total = x.sum()\n"
            "x.record_stream(side)\n"
            "ptr = x.data_ptr()\n"
            "del x\n"
            "y = torch.zeros(16 << 20, dtype=torch.uint8, device='cuda')\n"
            "assert y.data_ptr() != ptr, 'reused while the side stream still reads it'\n"
            "s = tt.stats(0)\n"
            "assert s['frees_deferred'] == 1, s\n"
            "side.synchronize()\n"
            "assert total.item() == 16 << 20\n"
            "z = torch.zeros(16 << 20, dtype=torch.uint8, device='cuda')\n"
            "assert z.data_ptr() == ptr, 'not reused after the side stream finished'\n"
            "print('OK')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if r.stdout.startswith("SKIP"):
        pytest.skip("this PyTorch has no set_record_stream_fn")
    assert r.stdout.startswith("OK"), r.stdout + r.stderr


def _built_plugin_or_skip(monkeypatch):
    """The plug-in of this build (not TENSORMEM_TORCH_PLUGIN's), loaded afresh."""
    monkeypatch.delenv("TENSORMEM_TORCH_PLUGIN", raising=False)
    try:
        path = tt.plugin_path()
    except tt.TorchPluginError as e:
        pytest.skip(str(e))
    monkeypatch.setattr(tt, "_lib", None)
    return path


def test_record_stream_is_wired_where_pytorch_has_the_hook(monkeypatch):
    """Without a GPU or PyTorch: the real plug-in's record_stream and
    empty_cache are what enable() hands to set_record_stream_fn and
    set_reset_fn, an allocator without the hooks is
    reported as not wired, and a pointer no device gave out is an error in
    last_error, not a crash."""
    import ctypes
    path = _built_plugin_or_skip(monkeypatch)
    lib = tt._load(path)
    given = []

    class Native:
        def set_record_stream_fn(self, pointer):
            given.append(pointer)

        def set_reset_fn(self, pointer):
            given.append(("reset", pointer))

        def set_memory_fraction_fn(self, pointer):
            given.append(("fraction", pointer))

    class Pluggable:
        def __init__(self, native):
            self.native = native

        def allocator(self):
            return self.native

    assert tt._wire_hooks(Pluggable(Native()), lib)
    assert given == [("reset", ctypes.cast(lib.tensormem_torch_empty_cache, ctypes.c_void_p).value),
                     ("fraction", ctypes.cast(lib.tensormem_torch_set_memory_fraction, ctypes.c_void_p).value),
                     ctypes.cast(lib.tensormem_torch_record_stream, ctypes.c_void_p).value]
    lib.tensormem_torch_set_memory_fraction(1.5, 0)
    assert "not in [0, 1]" in tt._last_error(lib)
    lib.tensormem_torch_empty_cache()  # no device used yet: nothing to give back, no error
    assert not tt._wire_hooks(Pluggable(object()), lib)
    local = ctypes.c_int(0)
    lib.tensormem_torch_record_stream(ctypes.addressof(local), None)
    assert "no device's allocator" in tt._last_error(lib)


def test_stats_through_the_real_plugin_without_a_gpu(monkeypatch):
    """The built plug-in answers stats and empty_cache through ctypes even
    where no GPU (and no PyTorch) is: a device never used reports {}."""
    path = _built_plugin_or_skip(monkeypatch)
    assert path.endswith("libtensormem_torch.so")
    assert tt.stats(7) == {}
    assert tt.empty_cache(7) == 0
