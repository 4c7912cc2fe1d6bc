# SPDX-License-Identifier: Apache-2.0
"""PyTorch's CUDA allocations through tensormem.

``enable(device=0)`` routes every CUDA allocation of this process through
tensormem's PyTorch plug-in (``libtensormem_torch.so``, the CMake target
``tensormem_torch``, built where a CUDA toolkit is found) with
``torch.cuda.memory.CUDAPluggableAllocator``. It must run before PyTorch
allocates anything on the GPU. ``stats(device)`` returns the plug-in's
figures as a dict; ``empty_cache(device)`` gives cached memory back, and so
does ``torch.cuda.empty_cache()`` (every device) once enabled, and
``torch.cuda.set_per_process_memory_fraction`` sets the plug-in's limit.

``Tensor.record_stream`` reaches the plug-in where PyTorch lets a pluggable
allocator see it (``set_record_stream_fn`` on the pluggable allocator): a tensor
used on a second stream is then freed only once that stream's work queued at
its ``del`` has finished, as with PyTorch's own allocator.
``record_stream_wired()`` says whether it is; where it is not, ``enable``
warns, and such a tensor must be freed on the stream that used it last.

The plug-in is looked for in: the ``TENSORMEM_TORCH_PLUGIN`` environment
variable (a file), next to this package, then the build folders of a
source checkout (``build*/plugins/torch/``).
"""
from __future__ import annotations

import ctypes
import glob
import json
import os
import warnings
from typing import Any, Dict, List, Optional

__all__ = ["enable", "enabled", "record_stream_wired", "stats", "empty_cache", "plugin_path",
           "TorchPluginError"]

_LIBRARY = "libtensormem_torch.so"
_lib: Optional[ctypes.CDLL] = None
_enabled_path: Optional[str] = None
_record_stream_wired = False


class TorchPluginError(RuntimeError):
    """tensormem.torch cannot do what was asked; the message says why."""


def _candidates() -> List[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, _LIBRARY)]
    # A source checkout: python/tensormem/ -> the repository root; the
    # package built by CMake: <build>/python/tensormem/ -> <build>.
    root = os.path.dirname(os.path.dirname(here))
    out.append(os.path.join(root, "plugins", "torch", _LIBRARY))
    for build in sorted(glob.glob(os.path.join(root, "build*"))):
        out.append(os.path.join(build, "plugins", "torch", _LIBRARY))
    return out


def plugin_path() -> str:
    """The plug-in that :func:`enable` would load; TorchPluginError when none is found."""
    env = os.environ.get("TENSORMEM_TORCH_PLUGIN")
    if env:
        if not os.path.isfile(env):
            raise TorchPluginError(f"TENSORMEM_TORCH_PLUGIN={env}: no such file")
        return os.path.abspath(env)
    tried = _candidates()
    for path in tried:
        if os.path.isfile(path):
            return path
    raise TorchPluginError(
        f"{_LIBRARY} not found (tried: {', '.join(tried)}). It is built by CMake (target "
        "tensormem_torch) only where a CUDA toolkit is found; or set TENSORMEM_TORCH_PLUGIN "
        "to its path.")


def _load(path: str) -> ctypes.CDLL:
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise TorchPluginError(f"{path}: cannot be loaded: {e}") from e
        try:
            lib.tensormem_torch_stats.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
            lib.tensormem_torch_stats.restype = ctypes.c_size_t
            lib.tensormem_torch_last_error.argtypes = []
            lib.tensormem_torch_last_error.restype = ctypes.c_char_p
            lib.tensormem_torch_release_cached.argtypes = [ctypes.c_int]
            lib.tensormem_torch_release_cached.restype = ctypes.c_longlong
            lib.tensormem_torch_record_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.tensormem_torch_record_stream.restype = None
            lib.tensormem_torch_empty_cache.argtypes = []
            lib.tensormem_torch_empty_cache.restype = None
            lib.tensormem_torch_set_memory_fraction.argtypes = [ctypes.c_double, ctypes.c_int]
            lib.tensormem_torch_set_memory_fraction.restype = None
        except AttributeError as e:
            raise TorchPluginError(f"{path}: not tensormem's plug-in, or built from another version "
                                   f"of it: {e}") from e
        _lib = lib
    return _lib


def _import_torch():
    try:
        import torch  # noqa: F401  (imported here: tensormem works without PyTorch)
    except ImportError as e:
        raise TorchPluginError(f"PyTorch is not importable ({e}); tensormem.torch needs it") from e
    return torch


def enabled() -> bool:
    """True once :func:`enable` has switched PyTorch to the plug-in."""
    return _enabled_path is not None


def record_stream_wired() -> bool:
    """True once :func:`enable` has given PyTorch the plug-in's record_stream."""
    return _record_stream_wired


def _wire_hooks(allocator, lib: ctypes.CDLL) -> bool:
    """Hands PyTorch the plug-in's hooks it binds; True when record_stream is among them."""
    # PyTorch binds CUDAPluggableAllocator::set_record_stream_fn on the
    # object allocator() returns; without it record_stream would be a silent
    # no-op, and a block freed while another stream still reads it reused.
    # set_reset_fn is what torch.cuda.empty_cache() calls (a no-op unless set).
    native = allocator.allocator()
    reset = getattr(native, "set_reset_fn", None)
    if reset is not None:
        reset(ctypes.cast(lib.tensormem_torch_empty_cache, ctypes.c_void_p).value)
    fraction = getattr(native, "set_memory_fraction_fn", None)  # set_per_process_memory_fraction
    if fraction is not None:
        fraction(ctypes.cast(lib.tensormem_torch_set_memory_fraction, ctypes.c_void_p).value)
    setter = getattr(native, "set_record_stream_fn", None)
    if setter is None:
        return False
    setter(ctypes.cast(lib.tensormem_torch_record_stream, ctypes.c_void_p).value)
    return True


def enable(device: int = 0) -> str:
    """Routes PyTorch's CUDA allocations through tensormem (call it before
    any CUDA tensor exists). Returns the plug-in's path. Raises
    TorchPluginError when PyTorch is not importable, no CUDA device is
    there, the plug-in was not built, or PyTorch's CUDA allocator is already
    in use (another allocator was initialised first)."""
    global _enabled_path, _record_stream_wired
    if _enabled_path is not None:
        return _enabled_path
    torch = _import_torch()
    if not torch.cuda.is_available():
        raise TorchPluginError("no CUDA device is available to PyTorch "
                               f"(torch {torch.__version__}, CUDA {torch.version.cuda})")
    if device < 0 or device >= torch.cuda.device_count():
        raise TorchPluginError(f"device {device}: PyTorch sees {torch.cuda.device_count()} CUDA devices")
    path = plugin_path()
    lib = _load(path)
    try:
        # The raising variant: PyTorch takes a NULL from alloc_fn as a tensor
        # at address 0 instead of an error.
        allocator = torch.cuda.memory.CUDAPluggableAllocator(path, "tensormem_torch_malloc_or_raise",
                                                             "tensormem_torch_free")
        wired = _wire_hooks(allocator, lib)
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:
        raise TorchPluginError(
            "PyTorch's CUDA allocator is already initialised (a CUDA tensor was created, or "
            "another allocator was set, before tensormem.torch.enable()); call enable() first "
            f"in the process: {e}") from e
    torch.cuda.set_device(device)
    _enabled_path = path
    _record_stream_wired = wired
    if not wired:
        warnings.warn(f"torch {torch.__version__} gives a pluggable allocator no record_stream hook: "
                      "a tensor used on a second stream must be freed on that stream (or after "
                      "synchronising it)", RuntimeWarning, stacklevel=2)
    return path


def _last_error(lib: ctypes.CDLL) -> str:
    msg = lib.tensormem_torch_last_error()
    return msg.decode("utf-8", "replace") if msg else "unknown error"


def stats(device: int = 0) -> Dict[str, Any]:
    """The plug-in's statistics for a device (bytes in use, reserved, peaks,
    counts), as a dict."""
    lib = _load(_enabled_path or plugin_path())
    size = 4096
    while True:
        buf = ctypes.create_string_buffer(size)
        n = lib.tensormem_torch_stats(device, buf, size)
        if n < size:
            text = buf.value.decode("utf-8")
            try:
                return json.loads(text)
            except ValueError as e:
                raise TorchPluginError(f"tensormem_torch_stats(device {device}): not JSON: "
                                       f"{text[:200]!r} ({_last_error(lib)})") from e
        size = n + 1  # the JSON did not fit: n is its length


def empty_cache(device: int = 0) -> int:
    """Gives the plug-in's cached (unused) memory on the device back to the
    driver; returns the bytes given back."""
    lib = _load(_enabled_path or plugin_path())
    released = lib.tensormem_torch_release_cached(device)
    if released < 0:
        raise TorchPluginError(f"tensormem_torch_release_cached(device {device}): {_last_error(lib)}")
    return int(released)
