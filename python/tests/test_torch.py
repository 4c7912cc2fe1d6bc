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


def test_enable_on_a_gpu():
    if not HAVE_TORCH:
        pytest.skip("PyTorch is not installed")
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    try:
        tt.plugin_path()
    except tt.TorchPluginError as e:
        pytest.skip(str(e))
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


def test_stats_through_the_real_plugin_without_a_gpu(monkeypatch):
    """The built plug-in answers stats and empty_cache through ctypes even
    where no GPU (and no PyTorch) is: a device never used reports {}."""
    monkeypatch.delenv("TENSORMEM_TORCH_PLUGIN", raising=False)
    try:
        path = tt.plugin_path()
    except tt.TorchPluginError as e:
        pytest.skip(str(e))
    monkeypatch.setattr(tt, "_lib", None)
    assert path.endswith("libtensormem_torch.so")
    assert tt.stats(7) == {}
    assert tt.empty_cache(7) == 0
