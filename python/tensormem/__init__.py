# SPDX-License-Identifier: Apache-2.0
"""tensormem: tensor memory planning and allocators, from Python.

The C++ library does the work (``tensormem._tensormem``, a pybind11 module);
this package gives it a small, typed surface:

- :func:`plan` -- offsets (or shared objects) for buffers given as sizes and
  inclusive lifetimes (lists or NumPy arrays), or for a :class:`Problem`;
- :func:`solve` -- the exact solver (stops cleanly on Ctrl-C);
- :func:`load_problem`, :func:`write_problem`, :func:`records_from_onnx`,
  :func:`load_trace` -- files;
- :class:`BfcAllocator`, :class:`BufferPool`, :class:`SystemAllocator` (and
  :class:`VmmAllocator` where built) -- allocators with ``allocate`` /
  ``free`` / ``stats``; :func:`replay` -- a trace through them (every one by default);
- :mod:`tensormem.torch` -- PyTorch's CUDA allocations through tensormem.

Errors arrive as exceptions carrying the library's message: ``ValueError``
(bad input), ``FileNotFoundError``, ``MemoryError``, or
:class:`TensormemError`. The GIL is released while planning, solving and
replaying.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _tensormem as _tm
from ._tensormem import Plan, Problem, SolveResult, Trace, TensormemError, Allocator

__all__ = [
    "plan", "plan_model", "strategies", "solve", "tuning_keys", "load_problem", "write_problem", "records_from_onnx",
    "load_trace", "replay", "replay_allocators", "bfc_presets", "DEFAULTS", "Plan", "Problem", "SolveResult",
    "Trace",
    "TensormemError", "Allocator", "BfcAllocator", "BufferPool", "SystemAllocator",
    "VmmAllocator", "HAVE_ONNX", "HAVE_VMM",
]
# The library's version (project(VERSION) in CMakeLists.txt, tensormem/version.h).
__version__: str = _tm.__version__


def __dir__() -> List[str]:
    """``dir(tensormem)`` lists the public API (``__all__``), not the imports."""
    return sorted(__all__ + ["torch", "__version__"])

HAVE_ONNX: bool = bool(_tm.HAVE_ONNX)
HAVE_VMM: bool = bool(_tm.HAVE_VMM)

#: The defaults every surface shares (C++ ``tensormem/defaults.h``, the CLI,
#: these functions): ``plan_alignment`` for planning and solving (a buffer's
#: own alignment applies on top), ``tensor_alignment`` for what is made from
#: tensors (an ONNX model's records, a trace's replayed allocations),
#: ``time_limit`` (seconds), ``replay_repetitions``, ``replay_warm_passes``, ``replay_allocators``
#: (``"all"``: what :func:`replay` compares).
DEFAULTS: Dict[str, Any] = dict(_tm.DEFAULTS)

ArrayLike = Any  # a sequence of ints or a 1-D NumPy integer array
PathLike = Union[str, "os.PathLike[str]"]


def _count(name: str, value: Any, optional: bool = False) -> Any:
    """A non-negative integer argument, checked before the binding's
    unsigned parameter would fail as a TypeError listing the whole signature
    (the binding's one check: TypeError, ValueError or OverflowError naming it)."""
    if optional and value is None:
        return value
    return _tm._non_negative(value, name)


def strategies(objects: bool = False) -> List[str]:
    """The strategy names :func:`plan` accepts (offsets, or shared objects)."""
    return list(_tm.objects_strategies() if objects else _tm.offsets_strategies())


def plan(sizes: Union[ArrayLike, Problem], first: Optional[ArrayLike] = None,
         last: Optional[ArrayLike] = None, strategy: str = "best",
         alignment: int = DEFAULTS["plan_alignment"], objects: bool = False,
         time_limit: float = DEFAULTS["time_limit"], threads: int = 1) -> Plan:
    """Plans memory for buffers: ``sizes[i]`` bytes live during tasks
    ``first[i]..last[i]`` (inclusive). Or pass a :class:`Problem` alone.

    ``alignment`` (bytes, a power of two): every offset is a multiple of it
    and of the buffer's own alignment; ``DEFAULTS["plan_alignment"]`` (1),
    as ``tensormem plan`` on a problem file and the C++ ``PlanParams``.

    Returns a :class:`Plan`: ``offsets`` (NumPy uint64), ``total``,
    ``lower_bound``, ``ratio``, ``strategy``, ``seconds``, and for ``best``
    what its exact polish spent, ``polish_seconds`` and ``polish_nodes``
    (None when it did not run); ``objects=True`` gives shared objects
    (``object_of``, ``object_sizes``; ``offsets`` are the objects laid back to
    back). ``time_limit`` covers every strategy; ``best``'s polish takes at
    most ``DEFAULTS["polish_time_share"]`` of it (and
    ``DEFAULTS["polish_seconds"]``).
    ``threads``: offsets ``best`` runs its candidate strategies on that many
    threads (0: one per hardware thread); the plan is the one of one thread
    unless ``time_limit`` passes.
    ``plan(...).to_html(path)`` writes the interactive memory map.
    """
    if isinstance(sizes, Problem):
        if first is not None or last is not None:
            raise ValueError("plan(problem, ...): first and last come from the problem")
        return _tm._plan_problem(sizes, strategy, _count("alignment", alignment),
                                 objects, time_limit, _count("threads", threads))
    if first is None or last is None:
        raise ValueError("plan(sizes, first, last): first and last are required with sizes")
    return _tm._plan_arrays(sizes, first, last, strategy, _count("alignment", alignment),
                            objects, time_limit, _count("threads", threads))


def solve(problem: Union[Problem, PathLike], capacity: Optional[int] = None,
          time_limit: float = 10.0, minimize: bool = False, node_limit: int = 0,
          alignment: int = 1, iis: bool = False, start=None, threads: int = 1,
          tuning: Optional[Mapping[str, Any]] = None) -> SolveResult:
    """The exact offset solver. Without a capacity (or with ``minimize``):
    the smallest arena, anytime, with a proven lower bound. With one: a plan
    that fits (``status == "feasible"``/``"optimal"``), ``"infeasible"`` (a
    proof; ``iis=True`` names a subset) or ``"unknown"`` at the limit.
    The answer does not depend on the order of the buffers or their ids.
    ``start``: offsets to start from, one per buffer (e.g. a previous
    result's ``offsets``); they must form a plan (``ValueError`` otherwise).
    ``threads``: searches racing on threads, each in its own buffer order,
    sharing plans and bounds (0: one per hardware thread); beyond 1 the
    answer may differ between runs.
    ``tuning``: knobs of the search, ``{key: value}`` (as ``solve --tuning
    KEY=VALUE``); the defaults are the best general choice. ``tuning_keys()``
    lists the keys; an unknown key or a bad value raises ``ValueError``.
    Ctrl-C stops the search and raises ``KeyboardInterrupt``.
    """
    if not isinstance(problem, Problem):
        problem = load_problem(problem)
    if time_limit is None:
        time_limit = float("inf")
    return _tm._solve(problem, _count("capacity", capacity, optional=True), float(time_limit), minimize,
                      _count("node_limit", node_limit), _count("alignment", alignment), iis, start,
                      _count("threads", threads), dict(tuning or {}))


def tuning_keys() -> List[Tuple[str, str, str]]:
    """The solver's tuning keys, ``(name, values, help)`` each: what
    ``solve(tuning=...)`` and ``tensormem solve --tuning`` take."""
    return _tm.tuning_keys()


def load_problem(path: PathLike) -> Problem:
    """A planning problem from a file: MiniMalloc CSV, JSON, an allocation
    trace (RAPIDS replay-log CSV) or an ONNX model (its scratch arena)."""
    return _tm.load_problem(os.fspath(path))


def write_problem(path: PathLike, problem: Problem) -> None:
    """Writes the problem as MiniMalloc CSV, or JSON when ``path`` ends in
    ``.json``. (``Plan.write`` writes a problem with its plan.)"""
    _tm.write_problem(os.fspath(path), problem)


def records_from_onnx(path: PathLike, input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                      dims: Optional[Mapping[str, int]] = None,
                      alignment: int = DEFAULTS["tensor_alignment"], order: str = DEFAULTS["order"]) -> Problem:
    """An ONNX model's scratch-arena usage records (one buffer per tensor
    owning memory, ids = tensor names) as a :class:`Problem`.
    ``input_shapes={"input": [1, 3, 224, 224]}``, ``dims={"batch": 8}``.
    ``order``: the node order the lifetimes follow, ``"given"`` (the
    file's), ``"best"`` (the best heuristic order, never a higher peak of
    live bytes than the given one), ``"exact"`` (best, then a search that
    proves the lowest peak where it can within 10 s) or ``"joint"`` (the
    order whose arena, TFLite's ``arena`` strategy, is smallest; as
    ``tensormem records --order``)."""
    if not HAVE_ONNX:
        raise TensormemError("this tensormem was built without the ONNX importer "
                             "(libonnx and protobuf were not found)")
    return _tm.records_from_onnx(os.fspath(path), {k: list(v) for k, v in (input_shapes or {}).items()},
                                 dict(dims or {}), _count("alignment", alignment), order)


def plan_model(path: PathLike, strategy: str = "best", order: str = DEFAULTS["order"],
               alignment: int = DEFAULTS["tensor_alignment"],
               input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
               dims: Optional[Mapping[str, int]] = None,
               time_limit: float = DEFAULTS["time_limit"], threads: int = 1) -> Plan:
    """Plans an ONNX model's scratch arena with the graph planner, as
    ``tensormem plan MODEL -s STRATEGY --order ORDER``: one offsets
    ``strategy`` (:func:`strategies`), in the node ``order``: ``"given"``
    (the file's), ``"best"`` (the lowest peak of the heuristic orders and
    the given one), ``"exact"`` (best, then a search that proves the lowest
    peak where it can) or ``"joint"`` (every distinct order exact met,
    each placed with the strategy: the smallest arena, never larger than
    the given order's). ``time_limit`` bounds the order search and the
    placement each. The :class:`Plan`'s buffers are the model's (ids =
    tensor names) with lifetimes in the chosen order; ``Plan.order`` says
    which order, its peak of live bytes, and for joint every candidate's
    peak and arena."""
    if not HAVE_ONNX:
        raise TensormemError("this tensormem was built without the ONNX importer "
                             "(libonnx and protobuf were not found)")
    if time_limit is None:
        time_limit = float("inf")
    return _tm._plan_model(os.fspath(path), {k: list(v) for k, v in (input_shapes or {}).items()},
                           dict(dims or {}), strategy, order, _count("alignment", alignment),
                           float(time_limit), _count("threads", threads))


def load_trace(path: PathLike) -> Trace:
    """An allocation trace (RAPIDS replay-log CSV: Thread,Time,Action,Pointer,Size,Stream)."""
    return _tm.load_trace(os.fspath(path))


def replay_allocators() -> List[str]:
    """The allocator names :func:`replay` accepts."""
    return list(_tm.replay_allocators())


def bfc_presets() -> List[str]:
    """The preset names :func:`BfcAllocator` accepts (``tensormem replay --bfc-preset``)."""
    return list(_tm.bfc_presets())


def replay(trace: Union[Trace, PathLike],
           allocator: Union[str, Sequence[str], Allocator] = DEFAULTS["replay_allocators"],
           repetitions: int = DEFAULTS["replay_repetitions"], alignment: int = DEFAULTS["tensor_alignment"],
           isolate: bool = True, html: Optional[PathLike] = None, write_pages: bool = True,
           warm_passes: int = DEFAULTS["replay_warm_passes"]) -> Dict[str, Any]:
    """Replays a trace through allocators and returns their figures.

    ``allocator`` is what ``tensormem replay -a`` takes: ``"all"`` (the
    default, :data:`DEFAULTS`), one name from :func:`replay_allocators`, a
    comma-separated list of names or a list of them -- or an
    :class:`Allocator` object. One allocator (a name, or an object) returns
    its figures: ops, ns_per_op (the cold pass: a fresh allocator),
    cpu_ns_per_op, warm_ns_per_op (a second pass over the same allocator),
    peak_in_use, peak_reserved (resident memory, every block's pages
    written, the same definition for every allocator; see the replay
    guide), reserved_over_in_use, fragmentation (1 - peak_in_use /
    peak_reserved), peak_held and held_source (the allocator's own
    statistic), and for vmm its device calls in each pass (``vmm``,
    ``vmm_warm``: map_calls, handles_created, ...). Several (``"all"``, a
    list, even of one name) return a dict of those, keyed by allocator name
    in the order of :func:`replay_allocators` (or the order given); with
    ``"all"`` a malloc peer that cannot be loaded is left out with a
    warning, as the CLI skips it. ``html=path`` also writes the replay's
    memory map (x = event, y = address, reserved bytes as a line) of the
    allocator, or of the first of ours among several. ``repetitions`` timed
    passes, the median reported, and ``alignment`` are the CLI's defaults
    (:data:`DEFAULTS`). ``write_pages=False`` is the CLI's
    ``--no-page-writes``: peak_reserved is then each allocator's own
    statistic (much faster on large traces, but the malloc peers' statistics
    are not comparable with ours). ``warm_passes`` is the CLI's
    ``--warm-passes``: passes over the same allocator after the cold one,
    warm_ns_per_op and ``vmm_warm`` being the last one's (a training loop's
    steady state; named allocators only).
    """
    names = _replay_selection(allocator)
    if names is None:
        return _replay_one(trace, allocator, repetitions, alignment, isolate, write_pages, html, warm_passes)
    if not isinstance(trace, Trace):
        trace = load_trace(trace)
    skip_unavailable = isinstance(allocator, str) and allocator == "all"
    drawn = next((n for n in names if n not in _MALLOC_PEERS), None) if html is not None else None
    if html is not None and drawn is None:
        raise ValueError("replay(html=...) draws where one of our allocators put the blocks; the malloc peers "
                         "do not say")
    results: Dict[str, Dict[str, Any]] = {}
    for name in names:
        if skip_unavailable and name in _MALLOC_PEERS:
            why = _replay_unavailable(name)
            if why:
                warnings.warn(f"replay: {name} skipped: {why}", RuntimeWarning, stacklevel=2)
                continue
        results[name] = _replay_one(trace, name, repetitions, alignment, isolate, write_pages,
                                    html if name == drawn else None, warm_passes)
    return results


# The malloc peers among replay_allocators(): they report no placement.
_MALLOC_PEERS = tuple(_tm._malloc_peers())


def _replay_selection(allocator: Union[str, Sequence[str], Allocator]) -> Optional[List[str]]:
    """The names replay() runs when several are asked (``"all"``, a
    comma-separated string, a list), checked; None for one allocator."""
    if isinstance(allocator, Allocator) or (isinstance(allocator, str) and allocator != "all" and
                                            "," not in allocator):
        return None
    if isinstance(allocator, str):
        names = replay_allocators() if allocator == "all" else allocator.split(",")
    elif isinstance(allocator, Sequence) and all(isinstance(a, str) for a in allocator):
        names = list(allocator)
    else:
        raise TypeError("replay: allocator is 'all', a name, a comma-separated list of names, a list of names "
                        f"or an Allocator, not {type(allocator).__name__}")
    known = replay_allocators()
    for i, name in enumerate(names):
        if name not in known:
            raise ValueError(f"replay: unknown allocator {name!r} (known: {', '.join(known)})")
        if name in names[:i]:
            raise ValueError(f"replay: allocator {name!r} is listed twice")
    if not names:
        raise ValueError("replay: no allocator asked for")
    return names


def _replay_unavailable(name: str) -> str:
    """Why a malloc peer cannot be loaded ("" when it can), asked where
    replay() would run it: a static-TLS peer in a child with spare static TLS."""
    if name in _NEEDS_STATIC_TLS and not _has_static_tls():
        child = subprocess.run([sys.executable, "-c", f"import tensormem as tm; "
                                f"print(tm._tm._replay_unavailable({name!r}))"],
                               env=_static_tls_env(), capture_output=True, text=True)
        return child.stdout.strip() if child.returncode == 0 else child.stderr.strip()[-2000:]
    return _tm._replay_unavailable(name)


def _replay_one(trace: Union[Trace, PathLike], allocator: Union[str, Allocator], repetitions: int,
                alignment: int, isolate: bool, write_pages: bool, html: Optional[PathLike],
                warm_passes: int) -> Dict[str, Any]:
    """replay() of one allocator: its figures."""
    if isinstance(allocator, str) and allocator in _NEEDS_STATIC_TLS and not _has_static_tls():
        return _replay_in_child(trace, allocator, repetitions, alignment, isolate, write_pages, html, warm_passes)
    if not isinstance(trace, Trace):
        trace = load_trace(trace)
    if not isinstance(allocator, Allocator):
        allocator = str(allocator)
    return _tm._replay(trace, allocator, _count("repetitions", repetitions), _count("alignment", alignment), isolate,
                       bool(write_pages), "" if html is None else os.fspath(html), _count("warm_passes", warm_passes))


# Malloc peers that use initial-exec TLS: glibc loads them with dlopen only
# into a process started with spare static TLS (GLIBC_TUNABLES). `tensormem
# replay` re-executes itself so; replay() runs them in a child interpreter.
_NEEDS_STATIC_TLS = ("jemalloc",)
_STATIC_TLS_TUNABLE = "glibc.rtld.optional_static_tls=16384"


def _has_static_tls() -> bool:
    return "glibc.rtld.optional_static_tls" in os.environ.get("GLIBC_TUNABLES", "")


def _static_tls_env() -> Dict[str, str]:
    """This process's environment with spare static TLS, for a child
    interpreter that imports this package."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    env = dict(os.environ, GLIBC_TUNABLES=(tunables + ":" if tunables else "") + _STATIC_TLS_TUNABLE)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


_CHILD_REPLAY = """
import json, sys
import tensormem as tm
a = json.load(sys.stdin)
try:
    r = tm.replay(a["trace"], allocator=a["allocator"], repetitions=a["repetitions"],
                  alignment=a["alignment"], isolate=a["isolate"], write_pages=a["write_pages"], html=a["html"],
                  warm_passes=a["warm_passes"])
except Exception as e:
    json.dump({"error": type(e).__name__, "message": str(e)}, sys.stdout)
else:
    json.dump({"result": r}, sys.stdout)
"""


def _replay_in_child(trace: Union[Trace, PathLike], allocator: str, repetitions: int, alignment: int,
                     isolate: bool, write_pages: bool, html: Optional[PathLike], warm_passes: int) -> Dict[str, Any]:
    """replay() in a child interpreter started with spare static TLS, for the
    malloc peers that this process cannot load; the child reads the trace's
    file again, so a trace from standard input cannot go there."""
    path = trace.source if isinstance(trace, Trace) else os.fspath(trace)
    if path in ("<stdin>", "-"):
        raise ValueError(f"replay(allocator={allocator!r}): {allocator} runs in a child process started "
                         "with spare static TLS, which reads the trace from its file; give the trace's "
                         "path, or start Python with GLIBC_TUNABLES=" + _STATIC_TLS_TUNABLE)
    env = _static_tls_env()
    request = {"trace": path, "allocator": allocator, "repetitions": _count("repetitions", repetitions),
               "alignment": _count("alignment", alignment), "isolate": bool(isolate), "write_pages": bool(write_pages),
               "html": None if html is None else os.fspath(html), "warm_passes": _count("warm_passes", warm_passes)}
    child = subprocess.run([sys.executable, "-c", _CHILD_REPLAY], input=json.dumps(request), env=env,
                           capture_output=True, text=True)
    try:
        answer = json.loads(child.stdout)
    except ValueError:
        raise TensormemError(f"replay(allocator={allocator!r}) in a child process failed (exit "
                             f"{child.returncode}): {child.stderr.strip()[-2000:]}") from None
    if "result" in answer:
        return answer["result"]
    errors = {"ValueError": ValueError, "FileNotFoundError": FileNotFoundError, "MemoryError": MemoryError,
              "TypeError": TypeError, "KeyboardInterrupt": KeyboardInterrupt}
    raise errors.get(answer["error"], TensormemError)(answer["message"])


def BfcAllocator(memory_limit: Optional[int] = None, growth: Optional[str] = None,
                 initial_region_bytes: Optional[int] = None, virtual_memory: Optional[bool] = None,
                 preset: str = "tensorflow") -> Allocator:
    """TensorFlow's best-fit-with-coalescing allocator under a preset (a name
    from :func:`bfc_presets`: ``"tensorflow"``, TensorFlow's defaults over
    host memory; ``"compact"``, on-demand growth and coalesced regions over
    virtual memory, replay's ``bfc_compact``). ``growth`` (doubling,
    on_demand, reserve_all), ``initial_region_bytes`` and ``virtual_memory``
    change the preset's values when given, as ``replay --bfc-*`` does."""
    return _tm._bfc(_count("memory_limit", memory_limit, optional=True), growth,
                    _count("initial_region_bytes", initial_region_bytes, optional=True),
                    None if virtual_memory is None else bool(virtual_memory), preset)


def BufferPool(split_granularity: int = 64) -> Allocator:
    """MNN-style splitting/merging buffer pool on host memory. A split keeps
    the front part rounded up to ``split_granularity`` bytes (a power of two);
    the alignment of each allocation is ``allocate``'s argument."""
    return _tm._pool(_count("split_granularity", split_granularity))


def SystemAllocator() -> Allocator:
    """The C library's aligned allocation, with pointer tracking."""
    return _tm._system()


def VmmAllocator(memory_limit: Optional[int] = None, granularity: int = 2 << 20,
                 growth_slack: float = 0.0, max_handle_granules: int = 16,
                 grow_ahead: float = 1.0 / 1024, protect_refaulted: bool = False,
                 small_request_bytes: Optional[int] = None) -> Allocator:
    """The virtual-memory (vmm) allocator over host physical memory
    (``HostPhysicalMemory``).
    ``growth_slack`` (0 to 1): create granules rather than re-stitch cached
    ones while the memory held stays within that fraction above the most
    pages ever touched at once (``VmmParams::growth_slack``).
    ``max_handle_granules``: new granules for a run of pages come as handles
    of up to this many granules (``VmmParams::max_handle_granules``).
    ``grow_ahead`` (0 to 1): a block that grows the heap also gets the pages
    above it to the end of its run handle, at most that fraction of the
    granules held (``VmmParams::grow_ahead``).
    ``protect_refaulted``: re-stitch pages a loop no longer reaches before
    pages it needed again soon after they were last taken: fewer map calls
    in steady loops (``VmmParams::protect_refaulted``).
    ``small_request_bytes``: requests up to this many bytes share pages in a
    space of their own, apart from larger ones; 0 puts every request in one
    space (None: ``VmmParams::small_request_bytes``' default)."""
    return _tm._vmm(_count("memory_limit", memory_limit, optional=True), _count("granularity", granularity),
                    growth_slack, _count("max_handle_granules", max_handle_granules), grow_ahead,
                    bool(protect_refaulted), _count("small_request_bytes", small_request_bytes, optional=True))
