"""The TCP ring's ranks as threads of one process (no Ray): what it does
beside the allreduce."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from kerasflow.distribute.collective.tcp import TcpRing

pytestmark = pytest.mark.timeout(60)



def test_tcp_ring_watch_reports_a_closed_neighbour_and_leaves_its_traffic():
    """``TcpRing.watch`` only peeks: a broadcast still arrives whole while it
    watches; a neighbour that closes its ring is reported once, naming it."""
    secret = os.urandom(32)
    rings = [TcpRing(r, 2, timeout=20, token="job-w", secret=secret) for r in range(2)]
    addrs = [r.address for r in rings]
    ts = [threading.Thread(target=r.connect, args=(addrs,)) for r in rings]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    lost = []
    reported = threading.Event()

    def on_lost(peer, message):
        lost.append((peer, message))
        reported.set()

    rings[0].watch(on_lost, interval=0.02)
    time.sleep(0.1)
    sent = np.arange(1 << 16, dtype=np.float64)  # 512 KiB: several segments
    got = np.zeros_like(sent)
    t = threading.Thread(target=rings[1].broadcast, args=(sent, 1))
    t.start()
    time.sleep(0.2)  # the bytes wait in rank 0's socket while it watches
    rings[0].broadcast(got, 1)
    t.join(30)
    np.testing.assert_array_equal(got, sent)
    assert lost == []
    t0 = time.monotonic()
    rings[1].close()
    assert reported.wait(5), "rank 0 never noticed rank 1 leave"
    assert time.monotonic() - t0 < 2
    assert lost == [(1, "Rank 1 closed its connection to rank 0.")]
    rings[0].close()  # stops the watcher; idempotent afterwards
    rings[0].close()
