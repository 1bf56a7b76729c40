"""Collective allreduce between real Ray actors: results equal a numpy sum for
2 and 3 ranks over shm, tcp and hierarchical transports; a peer that never
arrives raises within the deadline, naming the rank and the step."""

from __future__ import annotations

import time

import numpy as np
import pytest

from kerasflow.distribute.collective.plan import CollectiveEndpoint, make_plan
from kerasflow.distribute.collective.probe import CollectiveProbe, probe_data
from kerasflow.distribute.collective.base import CollectiveTimeoutError

pytestmark = [pytest.mark.ray, pytest.mark.timeout(120),
              pytest.mark.usefixtures("ray_cluster")]


def _group(n, strategy="STRICT_PACK", **kw):
    from kerasflow.distribute.runtime.worker_group import WorkerGroup
    return WorkerGroup(CollectiveProbe, n, strategy=strategy, num_cpus=0.25,
                       timeout=60, **kw)


def _expected(n, size, dtype, op="SUM"):
    parts = [probe_data(r, size, dtype) for r in range(n)]
    if op == "MAX":
        return np.max(parts, axis=0)
    total = parts[0].copy()
    for p in parts[1:]:
        total += p  # rank order, like the shm transport
    return total / n if op == "MEAN" else total


@pytest.fixture(scope="module")
def groups():
    """Probe groups shared by the correctness tests (a group can form several
    collectives one after another): 2 and 3 ranks on one node, 3 on 3 nodes."""
    made = {}

    def get(n, strategy):
        if (n, strategy) not in made:
            made[n, strategy] = _group(n, strategy)
        return made[n, strategy]
    yield get
    for g in made.values():
        g.shutdown()


@pytest.mark.parametrize("transport,n,strategy", [
    ("shm", 2, "STRICT_PACK"), ("shm", 3, "STRICT_PACK"),
    ("tcp", 2, "STRICT_PACK"), ("tcp", 3, "STRICT_PACK"),
    ("tcp", 3, "STRICT_SPREAD")])
def test_allreduce_matches_numpy_sum(groups, transport, n, strategy):
    size = 10_007  # not divisible by 2 or 3: uneven slices and chunks
    g = groups(n, strategy)
    plans = g.setup_collective(size, "float64", transport, timeout=20)
    assert plans[0]["transport"] == transport
    results = g.execute("check", "SUM", 0, 2)
    want = _expected(n, size, "float64")
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-13, atol=1e-13)
        # Every rank holds bitwise the same result: one fixed order.
        np.testing.assert_array_equal(r, results[0])
    if transport == "shm":
        np.testing.assert_array_equal(results[0], want)  # exactly rank order
    mean = g.execute("check", "MEAN")
    np.testing.assert_allclose(mean[1], _expected(n, size, "float64", "MEAN"),
                               rtol=1e-13)
    np.testing.assert_array_equal(g.execute("check", "MAX")[0],
                                  _expected(n, size, "float64", "MAX"))


def test_hierarchical_float32(groups):
    # Ranks {0, 1} and {2} as two "nodes": shm inside, tcp ring between leaders.
    g = groups(3, "STRICT_PACK")
    plans = make_plan(["a", "a", "b"], 4099, "float32", "hier", timeout=20)
    addrs = g.execute("open_collective", per_rank=[(p,) for p in plans])
    ring = [a for _, a in sorted((p["ring_index"], a)
                                 for p, a in zip(plans, addrs) if a)]
    assert len(ring) == 2
    g.execute("connect_collective", ring)
    results = g.execute("check", "SUM", 0, 3)
    want = _expected(3, 4099, "float32")
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(r, results[0])


@pytest.mark.parametrize("transport,strategy", [("shm", "STRICT_PACK"),
                                                ("tcp", "STRICT_SPREAD")])
def test_missing_peer_times_out_naming_rank_and_step(transport, strategy):
    from kerasflow.distribute.runtime.errors import ReplicaFailedError
    with _group(3, strategy) as g:
        g.setup_collective(1000, "float32", transport, timeout=1.5)
        # Rank 2 joins steps 0 and 1, then stays away at step 2.
        refs = g.submit("check", per_rank=[("SUM", 0, 3, ()), ("SUM", 0, 3, ()),
                                           ("SUM", 0, 3, (2,))])
        t0 = time.monotonic()
        with pytest.raises(ReplicaFailedError) as info:
            g.wait(refs[:2], timeout=30, what="check")
        elapsed = time.monotonic() - t0
    err = info.value
    assert isinstance(err.cause, CollectiveTimeoutError)
    assert "step 2" in str(err)
    # shm names the missing local rank; the tcp ring names the neighbour
    # awaited (rank 1 waits for rank 0 which waits for rank 2: either blames
    # the chain towards rank 2).
    if transport == "shm":
        assert "[2]" in str(err)
    else:
        assert "rank 2" in str(err) or "rank 0" in str(err)
    assert elapsed < 10


def test_stuck_replica_is_reported(groups):
    from kerasflow.distribute.runtime.errors import ReplicaTimeoutError
    g = groups(2, "STRICT_PACK")
    g.stall_timeout, g.poll_interval = 1.0, 0.3
    try:
        refs = g.submit("stall", 2.5, ranks=[1])
        with pytest.raises(ReplicaTimeoutError, match=r"1 is stuck.*progress stayed"):
            g.wait(refs, ranks=[1], timeout=30, what="stall")
    finally:
        g.stall_timeout, g.poll_interval = None, 5.0


def test_endpoint_rejects_bad_buffers():
    plan = make_plan(["a"], 8, "float32")[0]
    coll = CollectiveEndpoint(plan).connect()
    buf = np.zeros(8, np.float32)
    assert coll.allreduce(buf) is buf
    with pytest.raises(ValueError, match="op in"):
        coll.allreduce(buf, op="PROD")
    with pytest.raises(ValueError, match="transport in"):
        make_plan(["a", "a"], 8, transport="carrier-pigeon")
    with pytest.raises(ValueError, match="one node"):
        make_plan(["a", "b"], 8, transport="shm")


def test_shm_rejects_wrong_buffer_in_process():
    from kerasflow.distribute.collective.shm import ShmAllreduce
    shm = ShmAllreduce(f"kf-test-{time.time_ns()}", 0, 1, 16, "float64", timeout=1)
    try:
        with pytest.raises(ValueError, match="16 float64"):
            shm.allreduce(np.zeros(8))
        with pytest.raises(TypeError, match="numpy.ndarray"):
            shm.allreduce([0.0] * 16)
    finally:
        shm.close()


def test_tcp_ring_refuses_strangers_and_still_forms():
    """A connection that does not prove the job's secret (a port scanner,
    another job, a stranger who knows the group's name) is closed; the ring
    forms when the real neighbour comes."""
    import hmac
    import os
    import socket
    import struct
    import threading

    from kerasflow.distribute.collective.tcp import _HELLO, _MAGIC, TcpRing
    from kerasflow.distribute.job_secret import ring_key

    secret = os.urandom(32)
    rings = [TcpRing(r, 2, timeout=20, token="job-a", secret=secret) for r in range(2)]
    addrs = [r.address for r in rings]
    rogue = [socket.create_connection(a) for a in addrs]  # they arrive first
    rogue[0].sendall(b"garbage, not a hello" * 2)
    # rank 1 knocking on rank 0 with what anyone who knows the group's name can
    # compute (the key without the secret): the right rank, a wrong proof
    rogue[1].close()
    rogue[1] = socket.create_connection(addrs[0])
    mine = os.urandom(16)
    rogue[1].sendall(_HELLO.pack(_MAGIC, 1, mine))
    answer = []

    def forge():  # answers rank 0's challenge once rank 0 starts accepting
        rogue[1].settimeout(30)
        nonce = rogue[1].recv(16)
        rogue[1].recv(32)
        rogue[1].sendall(hmac.new(ring_key(None, "job-a"), b"C" + nonce + mine
                                  + struct.pack("<qq", 1, 0), "sha256").digest())
        answer.append(rogue[1].recv(1))

    threads = [threading.Thread(target=forge)]
    threads += [threading.Thread(target=r.connect, args=(addrs,)) for r in rings]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answer == [b""]  # refused: closed without the acceptance byte
    bufs = [np.full(5, r + 1.0, np.float32) for r in range(2)]
    ts = [threading.Thread(target=r.allreduce, args=(b,)) for r, b in zip(rings, bufs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    np.testing.assert_array_equal(bufs[0], np.full(5, 3.0))
    np.testing.assert_array_equal(bufs[1], np.full(5, 3.0))
    for s in rogue:
        s.close()
    for r in rings:
        r.close()
