"""Where the tcp ring listens: ``CommunicationOptions(port_range=, interface=)``.

The listeners bind on the named interface in the given port range (checked on
real Ray actors on three simulated nodes), a range with too few free ports
fails with an error naming it, and MultiWorkerMirroredStrategy trains with the
options as without them."""

from __future__ import annotations

import socket

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.distribute.collective.netaddr import (
    bind_listener, interface_address, parse_port_range,
)
from kerasflow.distribute.collective.probe import CollectiveProbe, probe_data


def _free_range(n):
    """``n`` consecutive ports free right now, outside Ray's worker range."""
    for low in range(24000, 30000, 97):
        socks = []
        try:
            for p in range(low, low + n):
                socks.append(socket.create_server(("127.0.0.1", p)))
            return low, low + n - 1
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.skip("no free port range")


@pytest.mark.parametrize("spec,want", [("20000-20100", (20000, 20100)),
                                       ((7, 9), (7, 9)), (8080, (8080, 8080)),
                                       ("9000:9001", (9000, 9001)), (None, None)])
def test_parse_port_range(spec, want):
    assert parse_port_range(spec) == want


@pytest.mark.parametrize("bad", ["a-b", (9, 3), (0, 4), (1, 2, 3), "70000", 1.5])
def test_parse_port_range_refuses(bad):
    with pytest.raises(ValueError, match="port range"):
        parse_port_range(bad)


def test_interface_address():
    assert interface_address("lo") == "127.0.0.1"
    assert interface_address("10.1.2.3") == "10.1.2.3"
    with pytest.raises(ValueError, match=r"interface.*'lo'.*Received: interface='nope9'"):
        interface_address("nope9")


def test_bind_listener_takes_first_free_port_and_names_a_full_range():
    low, high = _free_range(2)
    a = bind_listener("127.0.0.1", (low, high))
    b = bind_listener("127.0.0.1", (low, high))
    try:
        assert {a.getsockname()[1], b.getsockname()[1]} == {low, high}
        with pytest.raises(OSError, match=f"No free port on 127.0.0.1 in the range "
                                          f"{low}-{high}"):
            bind_listener("127.0.0.1", (low, high))
    finally:
        a.close()
        b.close()


def test_options_refuse_bad_range():
    with pytest.raises(ValueError, match="port range"):
        kf.distribute.experimental.CommunicationOptions(port_range=(5, 1))


@pytest.mark.ray
@pytest.mark.timeout(120)
@pytest.mark.usefixtures("ray_cluster")
class TestOnRay:
    def test_ring_listens_in_range_on_interface(self):
        from kerasflow.distribute.runtime.worker_group import WorkerGroup
        low, high = _free_range(6)
        with WorkerGroup(CollectiveProbe, 3, strategy="STRICT_SPREAD", num_cpus=0.25,
                         timeout=60) as g:
            plans = g.plan_collective(5003, "float64", "tcp", timeout=20,
                                      port_range=(low, high), interface="lo")
            addrs = g.execute("open_collective", per_rank=[(p,) for p in plans])
            assert all(h == "127.0.0.1" and low <= p <= high for h, p in addrs), addrs
            g.execute("connect_collective", addrs)
            got = g.execute("check", "SUM", 0, 2)
        want = sum(probe_data(r, 5003, "float64") for r in range(3))
        for r in got:
            np.testing.assert_allclose(r, want, rtol=1e-13)

    def test_fit_with_options_and_a_taken_range(self):
        x = np.random.default_rng(0).standard_normal((64, 4))
        y = (x[:, 0] > 0).astype(int)

        def fit(opts):
            strategy = kf.distribute.MultiWorkerMirroredStrategy(
                num_workers=2, communication_options=opts, max_failures=0)
            try:
                with strategy.scope():
                    np.random.seed(0)
                    model = kf.Sequential([kf.layers.Dense(2, input_shape=(4,))])
                    model.compile("sgd", kf.losses.SparseCategoricalCrossentropy(
                        from_logits=True))
                    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
                return model.get_weights()
            finally:
                strategy.close()

        low, high = _free_range(4)
        opts = kf.distribute.experimental.CommunicationOptions
        plain = fit(opts(implementation="tcp", timeout_seconds=30))
        ranged = fit(opts(implementation="tcp", timeout_seconds=30,
                          port_range=(low, high), interface="lo"))
        for a, b in zip(plain, ranged):
            np.testing.assert_array_equal(a, b)
        taken = socket.create_server(("127.0.0.1", low))
        try:
            with pytest.raises(Exception, match=f"range {low}-{low}"):
                fit(opts(implementation="tcp", timeout_seconds=30,
                         port_range=(low, low), interface="lo"))
        finally:
            taken.close()
