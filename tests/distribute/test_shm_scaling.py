"""The shared-memory allreduce with 2 to 64 ranks as separate processes (no
Ray): SUM and MEAN equal numpy's sum of every rank's buffer, a rank that
never arrives is named in a CollectiveTimeoutError within the deadline, and
nothing is left in /dev/shm afterwards. The ranks run in processes forked
from a forkserver that imported the module once, so 64 of them start fast
on two cores (oversubscribed on purpose)."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import uuid

import numpy as np
import pytest

from kerasflow.distribute.collective.probe import probe_data, shm_rank_main

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def ctx():
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["kerasflow.distribute.collective.probe",
                                "kerasflow.distribute.collective.shm"])
    return ctx


def _leftovers(prefix):
    return [f for f in os.listdir("/dev/shm") if f.startswith(prefix)]


def run_group(ctx, world, size, calls, timeout=30.0, absent=None, absent_from=0,
              dtype="float64", started=None):
    """Runs ``world`` ranks (those in ``started``, default all) and returns
    their queue tuples by rank, with the group's name."""
    name = f"kf-test-{uuid.uuid4().hex[:10]}"
    out = ctx.Queue()
    ranks = range(world) if started is None else started
    procs = [ctx.Process(target=shm_rank_main, daemon=True,
                         args=(name, r, world, size, dtype, calls, timeout,
                               absent_from if r == absent else None, out))
             for r in ranks]
    for p in procs:
        p.start()
    got = {}
    try:
        for _ in procs:
            item = out.get(timeout=timeout * 4 + 60)
            got[item[0]] = item
    except queue.Empty:
        pytest.fail(f"ranks {sorted(set(ranks) - set(got))} of {world} hung "
                    f"(group {name})")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return got, name


def _expected(world, size, dtype, seed):
    total = probe_data(0, size, dtype, seed)
    for r in range(1, world):
        total = total + probe_data(r, size, dtype, seed)  # rank order
    return total


@pytest.mark.parametrize("world,size,calls", [
    (2, 10_007, 6), (3, 10_007, 6), (8, 4_099, 5), (16, 4_099, 4),
    (32, 1_031, 3), (64, 1_031, 2)])
def test_allreduce_many_ranks_matches_numpy(ctx, world, size, calls):
    got, name = run_group(ctx, world, size, calls)
    want = _expected(world, size, "float64", calls - 1)
    for r in range(world):
        rank, total, mean, err, _ = got[r]
        assert err is None, f"rank {r}: {err}"
        # Slots are reduced in rank order: bitwise the numpy rank-order sum.
        np.testing.assert_array_equal(total, want)
        np.testing.assert_allclose(mean, want / world, rtol=1e-15)
        np.testing.assert_allclose(total, np.sum(
            [probe_data(i, size, "float64", calls - 1) for i in range(world)], 0),
            rtol=1e-12, atol=1e-12)
    assert _leftovers(name) == []


@pytest.mark.parametrize("world", [3, 16])
def test_rank_that_never_arrives_is_named(ctx, world):
    absent = world - 1
    t0 = time.monotonic()
    got, name = run_group(ctx, world, 1000, 3, timeout=1.5, absent=absent,
                          absent_from=1)
    elapsed = time.monotonic() - t0
    for r in range(world - 1):
        rank, total, mean, err, took = got[r]
        assert err is not None and err[0] == "CollectiveTimeoutError", err
        assert f"[{absent}]" in err[1] and "step 1" in err[1], err[1]
        assert took < 1.5 * 2 + 3  # two waits of the deadline at most, no hang
    assert elapsed < 30
    assert _leftovers(name) == []


def test_rank_that_never_starts_fails_the_group_and_leaves_nothing(ctx):
    got, name = run_group(ctx, 4, 100, 1, timeout=1.5, started=[0, 1, 2])
    err = got[0][3]
    assert err[0] == "CollectiveTimeoutError"
    assert "[3]" in err[1] and "attach" in err[1]
    # Ranks 1 and 2 time out at their first allreduce, naming rank 3 too.
    assert all(got[r][3][0] == "CollectiveTimeoutError" for r in (1, 2))
    assert _leftovers(name) == []


def test_killed_ranks_leave_nothing_after_attach(ctx):
    """SIGKILL mid-allreduce: the name was unlinked when the group formed, so
    the memory goes with the processes."""
    name = f"kf-test-{uuid.uuid4().hex[:10]}"
    out = ctx.Queue()
    procs = [ctx.Process(target=shm_rank_main, daemon=True,
                         args=(name, r, 3, 1000, "float64", 3, 30.0,
                               1 if r == 2 else None, out))
             for r in range(3)]
    for p in procs:
        p.start()
    # The name disappears once all three attached; they then block in call 1
    # (rank 2 sleeps there). It may come and go between two looks.
    t0, seen = time.monotonic(), False
    while time.monotonic() - t0 < 60:
        present = bool(_leftovers(name))
        seen = seen or present
        if not present and (seen or time.monotonic() - t0 > 5):
            break
        time.sleep(0.005)
    time.sleep(0.3)
    for p in procs:
        p.kill()
        p.join(10)
    assert _leftovers(name) == []
