"""Fusion pass: fused elementwise chains against the op-by-op numpy plan.

Tolerance: fused kernels run the same float operations in the same dtype, so
they agree with numpy to float rounding; we allow rtol 2e-6 / atol 1e-6 in
float32 (exp/tanh may differ by an ulp between numpy's and LLVM's libm) and
rtol 1e-12 / atol 1e-12 in float64.
"""

from __future__ import annotations

import math
import subprocess
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from kerasflow import backend as K
from kerasflow.backend import fusion, jit
from tests.backend.gradcheck import check_gradients

numba = pytest.importorskip("numba")

TOL = {
    "float32": {"rtol": 2e-6, "atol": 1e-6},
    "float64": {"rtol": 1e-12, "atol": 1e-12},
}


@pytest.fixture(autouse=True)
def _reset_switch():
    yield
    fusion.set_fusion(None)


def _plans(build, dtype, n_in):
    """(fused Function, unfused Function) of ``build(*placeholders)``."""
    fns = []
    for on in (True, False):
        fusion.set_fusion(on)
        phs = [K.placeholder(dtype, s) for s in n_in]
        outs = build(*phs)
        fns.append(K.Function(phs, outs if isinstance(outs, list) else [outs]))
    fusion.set_fusion(None)
    return fns


def _fused_ops(fn):
    return [n.name for n in fn._lines if isinstance(n, fusion.FusedNode)]


PATTERNS = {
    # name: (build, input shapes, expected fused op chains)
    "bias_add_relu": (lambda x, b: K.relu(x + b), [(None, 96), (96,)],
                      ["Add+Relu"]),
    "sigmoid_affine": (lambda x, a, b: K.sigmoid(x * a + b), [(None, 96), (), (96,)],
                       ["Mul+Add+Sigmoid"]),
    "clip_scale": (lambda x, y: K.clip(x, -0.5, 0.5) * 2.0 - y,
                   [(None, 96), (None, 96)], ["ClipByValue+Mul+Sub"]),
    "unary_chain": (lambda x, y: K.tanh(K.exp(-K.square(x)) / (K.sqrt(
        K.abs(y) + 1.0))), [(None, 96), (None, 96)], None),
    "max_min": (lambda x, y: K.minimum(K.maximum(x, y), 0.25) + x,
                [(None, 96), (None, 96)], ["Maximum+Minimum+Add"]),
    "flat_1d": (lambda x: K.relu(x * 3.0 - 1.0), [(None,)], ["Mul+Sub+Relu"]),
}


def _values(shapes, dtype, rows, rng):
    vals = []
    for s in shapes:
        shape = tuple(rows * 96 if d is None and len(s) == 1 else rows
                      if d is None else d for d in s)
        vals.append(np.asarray(rng.randn(*shape)).astype(dtype))
    return vals


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_fused_pattern_matches_numpy(name, dtype):
    build, shapes, chains = PATTERNS[name]
    fused, plain = _plans(build, dtype, shapes)
    names = _fused_ops(fused)
    assert names and not _fused_ops(plain)
    if chains is not None:
        assert [n.split("fused: ")[1][:-1] for n in names] == chains
    rng = np.random.RandomState(0)
    vals = _values(shapes, dtype, 64, rng)  # 6144 elements: above MIN_SIZE
    if vals[0].ndim > 1:
        vals[0][0, 0] = np.nan  # NaN propagates as in numpy (max/min/relu)
    got, want = fused(*vals)[0], plain(*vals)[0]
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, **TOL[dtype])
    again = fused(*vals)[0]
    np.testing.assert_array_equal(again, got)  # deterministic run to run


def test_small_and_broadcast_inputs_fall_back_to_numpy():
    fused, plain = _plans(lambda x, b: K.relu(x + b), "float32",
                          [(None, 96), (None, 96)])
    rng = np.random.RandomState(1)
    x = rng.randn(64, 96).astype("float32")
    b = rng.randn(1, 96).astype("float32")  # broadcasts: not the full shape
    np.testing.assert_array_equal(fused(x, b)[0], plain(x, b)[0])
    small = x[:2], x[2:4]  # below MIN_SIZE
    np.testing.assert_array_equal(fused(*small)[0], plain(*small)[0])


def test_intermediate_read_elsewhere_is_not_fused_away():
    def build(x, b):
        h = x + b
        return [K.relu(h), h * 2.0]

    fused, plain = _plans(build, "float32", [(None, 96), (96,)])
    assert all("Add" not in n.split("fused:")[1] for n in _fused_ops(fused))
    rng = np.random.RandomState(2)
    vals = [rng.randn(64, 96).astype("float32"), rng.randn(96).astype("float32")]
    for g, w in zip(fused(*vals), plain(*vals)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_relu_gradients_fused_match_numpy(dtype):
    """Add+Relu forward, ReluGrad backward, SumToLike reading the fused Add."""
    rng = np.random.RandomState(3)
    w = rng.randn(40, 96).astype(dtype)
    b = rng.randn(96).astype(dtype)

    def build(x):
        wv, bv = K.constant(w), K.constant(b)
        h = K.relu(K.matmul(x, wv) + bv)
        loss = K.sum(K.square(h))
        return [loss, *K.gradients(loss, [x])]

    fused, plain = _plans(build, dtype, [(None, 40)])
    ops = " ".join(_fused_ops(fused))
    assert "Add+Relu" in ops and "ReluGrad" in ops
    x = rng.randn(64, 40).astype(dtype)
    for g, want in zip(fused(x), plain(x)):
        np.testing.assert_allclose(g, want, **TOL[dtype])


def test_gradient_checks_pass_with_fusion_on(float64, monkeypatch):
    monkeypatch.setattr(fusion, "MIN_SIZE", 0)  # fuse even these small arrays
    fusion.set_fusion(True)
    rng = np.random.RandomState(4)
    w = rng.randn(5, 6)

    def net(x, b):
        h = K.relu(K.matmul(x, K.constant(w)) + b)
        return K.sigmoid(h * 0.5 - 0.25) + K.sum(K.tanh(K.clip(x, -1.0, 1.0)))

    check_gradients(net, [rng.randn(4, 5), rng.randn(6)])


def test_switch_env_and_missing_numba(monkeypatch):
    build = PATTERNS["bias_add_relu"][0]
    x = K.placeholder("float32", (None, 96))
    b = K.placeholder("float32", (96,))
    monkeypatch.setenv("KERASFLOW_FUSION", "0")
    assert not fusion.fusion_enabled()
    assert not _fused_ops(K.Function([x, b], [build(x, b)]))
    monkeypatch.setenv("KERASFLOW_FUSION", "1")
    fusion.set_fusion(False)  # the call wins over the environment
    assert not _fused_ops(K.Function([x, b], [build(x, b)]))
    fusion.set_fusion(None)
    assert _fused_ops(K.Function([x, b], [build(x, b)]))
    with pytest.raises(TypeError, match="Received: 'no'"):
        fusion.set_fusion("no")
    monkeypatch.setitem(jit._STATE, "numba", None)  # as if numba were missing
    assert not _fused_ops(K.Function([x, b], [build(x, b)]))


def test_thread_count_follows_omp_num_threads(monkeypatch):
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 8)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert jit.num_threads(numba) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "32")
    assert jit.num_threads(numba) == 8
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert jit.num_threads(numba) == 8


def test_spread_runs_round_robin_shares_at_once_with_serial_blas(monkeypatch):
    jit.numba_module()
    monkeypatch.setattr(jit, "worker_threads", lambda: 3)
    together = threading.Barrier(3, timeout=30)  # all three shares run at once
    seen = {}

    def work(share):
        together.wait()
        infos = [i for i in threadpool_info() if i["user_api"] == "blas"]
        mine = [i for i in infos if "numpy" in i["filepath"]] or infos
        seen[threading.get_ident()] = (list(share),
                                       max(i["num_threads"] for i in mine))

    jit.spread(range(7), work, jit.SPREAD_MIN)
    assert sorted(share for share, _ in seen.values()) == [[0, 3, 6], [1, 4], [2, 5]]
    assert {blas for _, blas in seen.values()} == {1}

    def fail(share):
        if share[0] == 1:
            raise ValueError(f"share {list(share)}")

    with pytest.raises(ValueError, match=r"share \[1, 4\]"):
        jit.spread(range(6), fail, jit.SPREAD_MIN)
    calls = []

    def record(share):
        calls.append((list(share), threading.get_ident()))

    jit.spread(range(4), record, jit.SPREAD_MIN - 1)  # too small to share out
    monkeypatch.setattr(jit, "worker_threads", lambda: 1)
    jit.spread(range(4), record, jit.SPREAD_MIN)
    assert calls == [([0, 1, 2, 3], threading.get_ident())] * 2  # in this thread


def test_spread_sum_is_the_same_for_any_thread_count(monkeypatch):
    jit.numba_module()
    monkeypatch.setattr(jit, "SPREAD_MIN", 0)
    # Values whose float sum depends on the order of the additions.
    rng = np.random.default_rng(7)
    values = rng.standard_normal((20, 3)) * 10.0 ** rng.integers(-8, 9, (20, 3))

    def make():
        def product(i, dst):
            dst[...] = values[i]
        return product

    sums = []
    for threads in (1, 2, 3, 8):
        monkeypatch.setattr(jit, "worker_threads", lambda t=threads: t)
        sums.append(jit.spread_sum(range(20), (3,), np.float64, 60, make))
    for other in sums[1:]:
        np.testing.assert_array_equal(other, sums[0])
    np.testing.assert_allclose(sums[0], [math.fsum(c) for c in values.T],
                               rtol=1e-12)


def test_import_kerasflow_does_not_import_numba():
    code = "import sys, kerasflow; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["bias_add_relu", "sigmoid_affine"])
def test_parallel_kernel_equals_serial_kernel(name, monkeypatch):
    build, shapes, _ = PATTERNS[name]
    fused, _plain = _plans(build, "float32", shapes)
    vals = _values(shapes, "float32", 64, np.random.RandomState(5))
    serial = fused(*vals)[0]
    jit.numba_module()
    monkeypatch.setattr(jit, "PARALLEL_MIN", 0)
    monkeypatch.setitem(jit._STATE, "threads", 2)
    np.testing.assert_array_equal(fused(*vals)[0], serial)
