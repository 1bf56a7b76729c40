"""A group of Ray actors torn down at each stage of a shared-memory
collective's life leaves nothing in /dev/shm: before every rank attached
(rank 0 created the segment and waits), right after the group formed, and
with ranks blocked inside an allreduce."""

from __future__ import annotations

import os
import time

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.timeout(120),
              pytest.mark.usefixtures("ray_cluster")]


def _group(n=3):
    from kerasflow.distribute.collective.probe import CollectiveProbe
    from kerasflow.distribute.runtime.worker_group import WorkerGroup
    return WorkerGroup(CollectiveProbe, n, strategy="STRICT_PACK", num_cpus=0.25,
                       timeout=60)


def _present(name):
    return os.path.exists(os.path.join("/dev/shm", name))


def _wait_for(cond, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_killed_before_every_rank_attached():
    g = _group()
    try:
        plans = g.plan_collective(1000, "float64", "shm", timeout=30)
        name = plans[0]["shm_name"]
        # Only rank 0 opens: it creates the segment and waits for ranks 1, 2.
        g.submit("open_collective", per_rank=[(plans[0],)], ranks=[0])
        assert _wait_for(lambda: _present(name)), "rank 0 never created it"
        time.sleep(0.2)
        assert _present(name)
    finally:
        g.shutdown()
    assert not _present(name)
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(name)]


def test_killed_after_the_group_formed():
    g = _group()
    try:
        plans = g.setup_collective(1000, "float64", "shm", timeout=30)
        name = plans[0]["shm_name"]
        # Unlinked as soon as every rank attached, before any allreduce.
        assert not _present(name)
        assert g.execute("check", "SUM")[0].shape == (1000,)
    finally:
        g.shutdown()
    assert not _present(name)


def test_killed_mid_allreduce():
    g = _group()
    try:
        plans = g.setup_collective(1000, "float64", "shm", timeout=30)
        name = plans[0]["shm_name"]
        # Ranks 0 and 1 block in step 0's allreduce; rank 2 sleeps instead.
        g.submit("check", per_rank=[("SUM", 0, 1, ()), ("SUM", 0, 1, ()),
                                    ("SUM", 0, 1, (0,))])
        time.sleep(0.5)
    finally:
        t0 = time.monotonic()
        g.shutdown()
        took = time.monotonic() - t0
    assert not _present(name)
    assert took < 10  # busy actors are killed after the grace period
