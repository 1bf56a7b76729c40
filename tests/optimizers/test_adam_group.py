"""Adam's one-node step size and the grouped update (``fused_group``).

Tolerance against the numpy kernels (fusion off): the same float operations in
the same order and dtype, so rtol 1e-6 / atol 1e-7 in float32 and 1e-12 in
float64; against the per-variable numba kernel the grouped one is held bitwise
equal (same loop body, no reduction).
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import optimizers as O
from kerasflow.backend import fusion, jit
from kerasflow.optimizers import fused_group, kernels

TOL = {"float32": {"rtol": 1e-6, "atol": 1e-7},
       "float64": {"rtol": 1e-12, "atol": 1e-12}}


@pytest.fixture(autouse=True)
def _reset():
    yield
    fusion.set_fusion(None)
    fused_group.ENABLED = True


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_step_size_is_bitwise_the_op_by_op_graph(dtype):
    it = K.Variable(0, dtype="int64")
    lr = K.Variable(np.array(3e-4, dtype), dtype=dtype)
    t = K.cast(K.add(it, 1), dtype)
    composite = K.multiply(lr, K.divide(K.sqrt(K.subtract(1.0, K.power(0.999, t))),
                                        K.subtract(1.0, K.power(0.9, t))))
    one = kernels.adam_step_size(lr, it, beta_1=0.9, beta_2=0.999)
    assert one.dtype == np.dtype(dtype) and one.shape == ()
    fn = K.Function([], [composite, one])
    for step in (0, 1, 2, 9, 99, 999, 123456):
        it.assign(step)
        want, got = fn()
        assert np.asarray(got).dtype == np.dtype(dtype)
        assert got == want, (step, got, want)
    it.assign(0)
    # t = 1: lr * sqrt(0.001) / 0.1, checkable by hand; float32 loses ~1e-5
    # relative in 1 - 0.999 (0.999 is not a float32).
    np.testing.assert_allclose(fn()[1], 3e-4 * np.sqrt(0.001) / 0.1,
                               rtol=1e-4 if dtype == "float32" else 1e-12)


def test_step_size_rejects_a_non_float_learning_rate():
    it = K.Variable(0, dtype="int64")
    with pytest.raises(TypeError, match="float learning rate"):
        kernels.adam_step_size(K.Variable(1, dtype="int64"), it, beta_1=0.9,
                               beta_2=0.999)


def _train(dtype, fused, grouped, make_opt=lambda: O.Adam(0.01), steps=4,
           constraint=None):
    """Adam steps on a 3-layer tanh MLP; variables of 4096 to 8 elements."""
    fusion.set_fusion(fused)
    fused_group.ENABLED = grouped
    rng = np.random.RandomState(0)
    x = K.placeholder(dtype, (None, 64))
    h, params = x, []
    for i, (a, b) in enumerate([(64, 64), (64, 32), (32, 8)]):
        w = K.Variable(rng.randn(a, b).astype(dtype) * 0.3, name=f"w{i}",
                       dtype=dtype, constraint=constraint if i == 1 else None)
        bias = K.Variable(np.zeros(b, dtype), name=f"b{i}", dtype=dtype)
        params += [w, bias]
        h = K.tanh(K.matmul(h, w) + bias)
    loss = K.mean(K.square(h - 0.5))
    opt = make_opt()
    fn = K.Function([x], [loss], opt.get_updates(loss, params))
    data = rng.randn(16, 64).astype(dtype)
    losses = [float(fn(data * (1 + 0.1 * i))[0]) for i in range(steps)]
    nodes = {id(n): n for n in fn._lines}.values()
    groups = [len(n.members) for n in nodes if n.op == "AdamGroup"]
    slots = [v.numpy() for v in opt.variables if v.shape != ()]
    return losses, [p.numpy() for p in params], slots, groups


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grouped_update_equals_per_variable_and_numpy(dtype):
    pytest.importorskip("numba")
    got = _train(dtype, True, True)
    assert got[3] == [6]  # one node for the six variables
    per_var = _train(dtype, True, False)
    assert per_var[3] == []
    plain = _train(dtype, False, True)
    assert plain[3] == []  # fusion off: no rewrite
    assert got[0] == per_var[0]
    for g, p, n in zip(got[1] + got[2], per_var[1] + per_var[2],
                       plain[1] + plain[2]):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, p)
        np.testing.assert_allclose(g, n, **TOL[dtype])
    assert len(got[2]) == 12  # m and v of each variable were updated too


def test_grouped_update_keeps_constraints_and_double_buffers():
    pytest.importorskip("numba")
    clip = lambda v: np.clip(v, -0.05, 0.05)  # noqa: E731
    got = _train("float32", True, True, constraint=clip)
    want = _train("float32", False, True, constraint=clip)
    assert got[3] == [6]
    assert np.abs(got[1][2]).max() <= 0.05
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, **TOL["float32"])


def test_parallel_grouped_update_equals_serial(monkeypatch):
    pytest.importorskip("numba")
    serial = _train("float32", True, True)
    monkeypatch.setattr(jit, "PARALLEL_MIN", 0)
    monkeypatch.setitem(jit._STATE, "threads", 2)
    monkeypatch.setattr(fused_group, "CHUNK", 1000)  # several chunks per variable
    parallel = _train("float32", True, True)
    for a, b in zip(serial[1] + serial[2], parallel[1] + parallel[2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make_opt", [lambda: O.Adam(0.01, amsgrad=True),
                                      lambda: O.AdamW(0.01, weight_decay=0.1)],
                         ids=["amsgrad", "adamw"])
def test_variants_outside_the_group_keep_one_node_per_variable(make_opt):
    pytest.importorskip("numba")
    got = _train("float32", True, True, make_opt)
    want = _train("float32", False, True, make_opt)
    assert got[3] == []
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, **TOL["float32"])


def test_group_falls_back_per_variable_on_a_read_only_gradient():
    pytest.importorskip("numba")
    fusion.set_fusion(True)
    ws = [K.Variable(np.ones(5, "float32")), K.Variable(np.ones((2, 3), "float32"))]
    gs = [K.placeholder("float32", (5,)), K.placeholder("float32", (2, 3))]
    opt = O.Adam(0.5)
    fn = K.Function(gs, [], opt.apply_gradients(zip(gs, ws)))
    nodes = {id(n): n for n in fn._lines}.values()
    assert [n.op for n in nodes if n.op == "AdamGroup"] == ["AdamGroup"]
    g0 = np.full(5, 2.0, "float32")
    g0.setflags(write=False)
    fn(g0, np.full((2, 3), -1.0, "float32"))
    # First Adam step: m_hat / sqrt(v_hat) = sign(g), so w -= lr * sign(g).
    np.testing.assert_allclose(ws[0].numpy(), 0.5, rtol=1e-4)
    np.testing.assert_allclose(ws[1].numpy(), 1.5, rtol=1e-4)
