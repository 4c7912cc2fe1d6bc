# SPDX-License-Identifier: Apache-2.0
import pytest

import tensormem as tm

FACTORIES = [
    ("bfc", lambda: tm.BfcAllocator()),
    ("bfc", lambda: tm.BfcAllocator(preset="compact")),
    ("bfc", lambda: tm.BfcAllocator(memory_limit=64 << 20, growth="on_demand", virtual_memory=True)),
    ("pool", lambda: tm.BufferPool()),
    ("system", lambda: tm.SystemAllocator()),
]


@pytest.mark.parametrize("name, make", FACTORIES)
def test_allocate_free_stats(name, make):
    a = make()
    assert a.name == name and isinstance(a, tm.Allocator)
    blocks = [a.allocate(1000 * (i + 1), 256) for i in range(10)]
    assert all(b % 256 == 0 for b in blocks) and len(set(blocks)) == 10
    s = a.stats()
    assert s["num_allocs"] == 10 and s["bytes_in_use"] >= sum(1000 * (i + 1) for i in range(10))
    for b in blocks:
        a.free(b)
    s = a.stats()
    assert s["num_frees"] == 10 and s["bytes_in_use"] == 0
    a.close()
    with pytest.raises(tm.TensormemError, match="closed"):
        a.allocate(1)


@pytest.mark.parametrize("name, make", FACTORIES)
def test_bad_free_is_an_exception_not_a_crash(name, make):
    a = make()
    b = a.allocate(4096)
    with pytest.raises((tm.TensormemError, ValueError)):
        a.free(b + 8)
    a.free(b)
    with pytest.raises((tm.TensormemError, ValueError)):
        a.free(b)  # double free
    with pytest.raises(ValueError):
        a.allocate(10, alignment=3)


def test_out_of_memory_is_memory_error():
    a = tm.BfcAllocator(memory_limit=4 << 20, growth="on_demand")
    with pytest.raises(MemoryError, match="bfc|limit|memory"):
        a.allocate(64 << 20)
    assert a.stats()["num_failed_allocs"] == 1


def test_bad_parameters():
    with pytest.raises(ValueError, match="growth"):
        tm.BfcAllocator(growth="sideways")
    with pytest.raises(ValueError, match="reserve_all"):
        tm.BfcAllocator(growth="reserve_all")
    with pytest.raises(ValueError, match="split_granularity 48 is not a power of two"):
        tm.BufferPool(split_granularity=48)
    # One meaning of alignment: a power of two, named in the error.
    with pytest.raises(ValueError, match="^plan: alignment 3 is not a power of two"):
        tm.plan([8, 8], [0, 0], [1, 1], alignment=3)
    # The function's name, not the C++ parameter struct's, and before a start is read at it.
    problem = tm.Problem.from_arrays([8, 8], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="^solve: alignment 3 is not a power of two"):
        tm.solve(problem, alignment=3)
    with pytest.raises(ValueError, match="^solve: alignment 3 is not a power of two"):
        tm.solve(problem, alignment=3, start=[0, 8])


def test_vmm_allocator():
    assert tm.HAVE_VMM  # always built; the flag stays for callers that check it
    a = tm.VmmAllocator()
    assert a.name == "vmm"
    b = a.allocate(3 << 20)
    assert a.stats()["bytes_in_use"] >= 3 << 20
    c = a.counters()
    assert c["granules_created"] == 2 and c["map_calls"] >= 1  # 3 MiB on 2 MiB granules
    assert c["synchronizations"] == 0 and c["event_waits"] == 0
    a.free(b)
    assert tm.BufferPool().counters() is None
    a.close()
    with pytest.raises(tm.TensormemError, match="closed"):
        a.counters()


def test_vmm_growth_slack_is_checked():
    a = tm.VmmAllocator(growth_slack=0.05)
    a.free(a.allocate(1 << 20))
    with pytest.raises(ValueError, match="growth_slack"):
        tm.VmmAllocator(growth_slack=1.5)
    with pytest.raises(ValueError, match="max_handle_granules"):
        tm.VmmAllocator(max_handle_granules=0)


def test_vmm_grow_ahead_fills_run_handles_and_is_checked():
    calls = {}
    for ahead in (0.0, 1.0):
        a = tm.VmmAllocator(grow_ahead=ahead, max_handle_granules=8)
        blocks = [a.allocate(2 << 20) for _ in range(12)]  # a heap growing a granule at a time
        calls[ahead] = a.counters()["map_calls"]
        for b in blocks:
            a.free(b)
    assert calls == {0.0: 12, 1.0: 3}
    with pytest.raises(ValueError, match="grow_ahead"):
        tm.VmmAllocator(grow_ahead=-0.5)


def test_vmm_small_request_bytes_chooses_one_space_or_two():
    # A block of exactly one granule leaves no room on its page, so a small
    # request after it goes where small requests go: next to it in one space
    # (0), to a space of their own with two (1 MiB).
    # None: the C++ default, one space.
    apart = {}
    for small in (None, 0, 1 << 20):
        a = tm.VmmAllocator(small_request_bytes=small)
        large = a.allocate(2 << 20)
        tiny = a.allocate(4096)
        apart[small] = abs(tiny - large)
        a.free(tiny)
        a.free(large)
    assert apart[None] == apart[0] == 2 << 20
    assert apart[1 << 20] > 1 << 30
    with pytest.raises(ValueError, match="small_request_bytes"):
        tm.VmmAllocator(small_request_bytes=-1)


def test_vmm_protect_refaulted_lets_a_steady_loop_stop_mapping():
    # A loop of one small and four large requests after a larger heap left
    # pages cached (the C++ test ProtectRefaultedStopsASteadyLoopMovingItsPages).
    before = [251658, 996147, 2359296, 996147, 996147]
    loop = [(0, 996147), (1, 1184890), (0, None), (2, 1981808), (3, 251658), (4, 1981808),
            (1, None), (2, None), (3, None), (4, None)]
    late = {}
    for protect in (False, True):
        a = tm.VmmAllocator(protect_refaulted=protect, small_request_bytes=1 << 20)  # two spaces
        for b in [a.allocate(n) for n in before]:
            a.free(b)
        for iteration in range(20):
            if iteration == 10:
                start = a.counters()["map_calls"]
            live = {}
            for block, size in loop:
                if size is None:
                    a.free(live.pop(block))
                else:
                    live[block] = a.allocate(size)
        late[protect] = a.counters()["map_calls"] - start
    assert late[True] == 0 and late[False] >= 10
