# SPDX-License-Identifier: Apache-2.0
"""Hostile use from Python: threads that close what another uses, paths and
inputs that must fail cleanly. None may crash the interpreter."""
import threading

import pytest

import tensormem as tm


def long_trace(path, pairs=10_000):
    """A trace of `pairs` allocate/free pairs (a replay of it takes a while)."""
    lines = ["Thread,Time,Action,Pointer,Size,Stream"]
    for i in range(pairs):
        lines.append(f"0,{2 * i},allocate,0x{0x1000 + i:x},{256 + (i % 7) * 64},0")
        if i >= 8:
            lines.append(f"0,{2 * i + 1},free,0x{0x1000 + i - 8:x},{256 + ((i - 8) % 7) * 64},0")
    path.write_text("\n".join(lines) + "\n")
    return tm.load_trace(path)


ALLOCATORS = [
    lambda: tm.BfcAllocator(),
    lambda: tm.BfcAllocator(preset="compact"),
    lambda: tm.BufferPool(),
    lambda: tm.SystemAllocator(),
    lambda: tm.VmmAllocator(),
]


@pytest.mark.parametrize("make", ALLOCATORS)
def test_close_while_a_replay_runs_through_the_allocator(tmp_path, make):
    trace = long_trace(tmp_path / "t.csv")
    a = make()
    started = threading.Event()
    results = []

    def run():
        started.set()
        try:
            results.append(tm.replay(trace, allocator=a))
        except tm.TensormemError as e:  # closed before the replay began
            results.append(str(e))

    t = threading.Thread(target=run)
    t.start()
    started.wait()
    refused = 0
    while t.is_alive():
        try:
            a.close()
        except tm.TensormemError as e:
            assert "in use by a replay" in str(e)
            refused += 1
            continue
        break  # closed: the replay had returned (or had not yet begun)
    t.join()
    assert len(results) == 1 and (isinstance(results[0], dict) or "closed" in results[0])
    a.close()  # closing twice is fine
    with pytest.raises(tm.TensormemError, match="closed"):
        tm.replay(trace, allocator=a)


def hard(n, seed):
    """A problem exact search does not finish in seconds (as test_solve's)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, n)
    last = first + rng.integers(0, n // 4, n)
    return tm.Problem.from_arrays(rng.integers(1, 1000, n), first, last)


class Interrupted(Exception):
    pass


@pytest.fixture
def sigint_raises():
    """SIGINT raises Interrupted (not pytest's KeyboardInterrupt handling);
    send(delay) delivers one to the main thread after `delay` seconds."""
    import signal
    old = signal.signal(signal.SIGINT, lambda *_: (_ for _ in ()).throw(Interrupted()))
    timers = []

    def send(delay):
        t = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
        timers.append(t)
        t.start()
        return t

    yield send
    for t in timers:
        t.cancel()
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_stops_an_exact_plan(sigint_raises):
    import time
    start = time.perf_counter()
    sigint_raises(0.5)
    with pytest.raises(Interrupted):
        tm.plan(hard(400, 3), strategy="exact", time_limit=120)
    assert time.perf_counter() - start < 10  # within the polling interval, not at the limit


def test_a_pipe_with_no_writer_lets_other_threads_run_and_ctrl_c_stops_it(tmp_path, sigint_raises):
    import os
    import time
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    ticks = [0]
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    # Were the interrupt lost, a writer ends the wait so that the test fails
    # instead of hanging.
    rescue = threading.Timer(8, lambda: open(fifo, "w").write("id,lower,upper,size\na,0,1,4\n"))
    rescue.start()
    sigint_raises(1.0)
    start = time.perf_counter()
    try:
        with pytest.raises(Interrupted):
            tm.load_problem(fifo)
    finally:
        stop.set()
        ticker.join()
    assert time.perf_counter() - start < 5
    assert ticks[0] > 20, "the GIL was held while waiting on the pipe"
    rescue.cancel()


NUL_PATHS = {
    "load_problem": lambda real, d: tm.load_problem(f"{real}\0.junk"),
    "load_trace": lambda real, d: tm.load_trace(f"{real}\0.junk"),
    "replay": lambda real, d: tm.replay(f"{real}\0.junk", allocator="bfc"),
    "replay html": lambda real, d: tm.replay(real, allocator="bfc", html=f"{d}/r.html\0.junk"),
    "write_problem": lambda real, d: tm.write_problem(f"{d}/out.csv\0.junk", tm.load_problem(real)),
    "to_html": lambda real, d: tm.plan(tm.load_problem(real)).to_html(f"{d}/map.html\0.junk"),
    "to_svg": lambda real, d: tm.plan(tm.load_problem(real)).to_svg(f"{d}/map.svg\0.junk"),
    "write": lambda real, d: tm.plan(tm.load_problem(real)).write(f"{d}/plan.csv\0.junk"),
    "records_from_onnx": lambda real, d: tm.records_from_onnx(f"{d}/model.onnx\0.junk"),
}


@pytest.mark.parametrize("name", sorted(NUL_PATHS))
def test_a_nul_in_a_path_is_a_value_error(tmp_path, name):
    """As open() does: the path cut at the NUL would name another file."""
    if name == "records_from_onnx" and not tm.HAVE_ONNX:
        pytest.skip("built without the ONNX importer")
    real = tmp_path / "real.csv"
    real.write_text("Thread,Time,Action,Pointer,Size,Stream\n0,1,allocate,0x10,64,0\n0,2,free,0x10,64,0\n")
    with pytest.raises(ValueError, match="null byte"):
        NUL_PATHS[name](real, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real.csv"], "nothing written under a cut name"


def test_replay_repetitions_are_bounded_as_in_the_cli(tmp_path):
    trace = long_trace(tmp_path / "t.csv", pairs=10)
    assert tm.replay(trace, allocator="bfc", repetitions=1000, isolate=False)["ops"] == len(trace)
    with pytest.raises(ValueError, match="repetitions must be between 1 and 1000, got 1001"):
        tm.replay(trace, allocator="bfc", repetitions=1001)
    with pytest.raises(ValueError, match="repetitions must be between 1 and 1000, got 0"):
        tm.replay(trace, allocator="bfc", repetitions=0)
    assert tm.replay(trace, allocator="bfc", warm_passes=100, isolate=False)["ops"] == len(trace)
    with pytest.raises(ValueError, match="warm_passes must be between 1 and 100, got 101"):
        tm.replay(trace, allocator="bfc", warm_passes=101)
    with pytest.raises(ValueError, match="warm_passes must be between 1 and 100, got 0"):
        tm.replay(trace, allocator="bfc", warm_passes=0)
    with pytest.raises(ValueError, match="warm_passes needs an allocator name"):
        tm.replay(trace, allocator=tm.BufferPool(), warm_passes=2)


def test_the_svg_is_well_formed_whatever_the_ids_hold(tmp_path):
    import xml.etree.ElementTree as ElementTree
    ids = [b"\xff", b"\xef\xbf\xbe", b"\xed\xa0\x80", b"\xc0\xaf", b"a<&>\"b", b"\x01", "caf\u00e9".encode()]
    rows = b"".join(b'"%s",%d,%d,8\n' % (i.replace(b'"', b'""'), k, k + 2) for k, i in enumerate(ids))
    src = tmp_path / "ids.csv"
    src.write_bytes(b"id,lower,upper,size\n" + rows)
    plan = tm.plan(tm.load_problem(src))
    plan.to_svg(tmp_path / "map.svg")
    root = ElementTree.parse(tmp_path / "map.svg").getroot()
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("caf\u00e9:") for t in titles) and any(t.startswith("\ufffd:") for t in titles)


def stress(workdir, seconds=4.0):
    """Threads replay through shared allocators while others close and
    replace them, allocate and free, and plan; the main thread plans and is
    interrupted again and again. Raises AssertionError listing any error
    that is not a documented one."""
    import random
    import signal
    import time
    trace = long_trace(workdir / "t.csv")
    small = hard(60, 1)
    allocators = [make() for _ in range(2) for make in ALLOCATORS]
    deadline = time.monotonic() + seconds
    errors = []

    def guarded(body):
        def run():
            rng = random.Random(threading.get_ident())
            while time.monotonic() < deadline:
                try:
                    body(rng)
                except tm.TensormemError as e:
                    if "in use by a replay" not in str(e) and "closed" not in str(e):
                        errors.append(repr(e))
                except MemoryError:
                    pass  # an allocator at its limit
                except Exception as e:  # noqa: BLE001 - anything else is a finding
                    errors.append(repr(e))
        return threading.Thread(target=run)

    def replayer(rng):
        tm.replay(trace, allocator=rng.choice(allocators))

    def closer(rng):
        time.sleep(rng.random() * 0.01)
        i = rng.randrange(len(allocators))
        allocators[i].close()  # (refused while a replay runs through it)
        allocators[i] = ALLOCATORS[i % len(ALLOCATORS)]()

    def user(rng):
        a = rng.choice(allocators)
        a.free(a.allocate(rng.randrange(1, 1 << 16)))

    def planner(rng):
        tm.plan(small, strategy=rng.choice(["best", "greedy_by_size", "exact"]), time_limit=0.2)

    signal.signal(signal.SIGINT, lambda *_: (_ for _ in ()).throw(Interrupted()))
    threads = [guarded(f) for f in (replayer, replayer, replayer, closer, user, planner)]
    for t in threads:
        t.start()
    interrupts = 0
    try:
        while True:
            try:  # (the whole step: a signal's handler may run at any statement)
                if time.monotonic() >= deadline:
                    break
                timer = threading.Timer(0.05, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
                timer.start()
                tm.plan(hard(200, interrupts), strategy="exact", time_limit=1)
                timer.join()
                time.sleep(0.05)  # the signal's handler runs here when the plan finished first
            except Interrupted:
                interrupts += 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a last timer's signal, if any, lands nowhere
        for t in threads:
            t.join()
    assert not errors, errors[:5]
    assert interrupts > 0


def test_stress_close_replay_plan_and_interrupt_at_once(tmp_path):
    """stress() in a child interpreter: a crash is a failure naming the
    signal, not the end of the test run (and the child's heap, grown by
    thousands of allocations, is not the one later replay figures measure)."""
    import pathlib
    import subprocess
    import sys
    here = str(pathlib.Path(__file__).resolve().parent)
    code = ("import pathlib, sys; sys.path.insert(0, %r); import test_hardening; "
            "test_hardening.stress(pathlib.Path(%r)); print('stress: ok')" % (here, str(tmp_path)))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "stress: ok" in p.stdout, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])


@pytest.mark.parametrize("alignment", [8192, 1 << 16, 2 << 20])
def test_compact_bfc_takes_alignments_above_a_page(tmp_path, alignment):
    a = tm.BfcAllocator(preset="compact")
    small = a.allocate(100, 64)
    p = a.allocate(1000, alignment)
    assert p % alignment == 0
    a.free(p)
    a.free(small)
    trace = long_trace(tmp_path / "t.csv", pairs=50)
    assert tm.replay(trace, "bfc_compact", alignment=alignment, repetitions=1, isolate=False)["ops"] == len(trace)
