"""Fused (numba) optimizer updates against the numpy kernels, every optimizer.

Tolerance: the same float operations in the same order and dtype, so rtol 1e-6 /
atol 1e-7 in float32 and 1e-12 in float64 (they are bitwise equal in practice).
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import optimizers as O
from kerasflow.backend import fusion

pytest.importorskip("numba")

TOL = {
    "float32": {"rtol": 1e-6, "atol": 1e-7},
    "float64": {"rtol": 1e-12, "atol": 1e-12},
}
CONFIGS = {
    "sgd": lambda: O.SGD(0.1),
    "sgd_wd_clipvalue": lambda: O.SGD(0.1, weight_decay=0.01, clipvalue=0.5),
    "momentum": lambda: O.SGD(0.05, momentum=0.9),
    "nesterov_clipnorm": lambda: O.SGD(0.05, momentum=0.9, nesterov=True,
                                       clipnorm=1.0),
    "adam": lambda: O.Adam(0.01),
    "adam_amsgrad_global_clipnorm": lambda: O.Adam(0.01, amsgrad=True,
                                                   global_clipnorm=1.0),
    "adamw": lambda: O.AdamW(0.01, weight_decay=0.05),
    "rmsprop": lambda: O.RMSprop(0.01),
    "rmsprop_centered_momentum_wd": lambda: O.RMSprop(
        0.01, momentum=0.5, centered=True, weight_decay=0.01),
    "adagrad": lambda: O.Adagrad(0.05),
    "adagrad_wd": lambda: O.Adagrad(0.05, weight_decay=0.01),
    # graph ops, no update kernel: its elementwise chains are fused instead
    "adadelta_wd_clipnorm": lambda: O.Adadelta(1.0, weight_decay=0.01, clipnorm=1.0),
}
APPLY_OPS = {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "ApplyRMSProp",
             "ApplyAdagrad"}


@pytest.fixture(autouse=True)
def _reset_switch():
    yield
    fusion.set_fusion(None)


def _train(make_opt, dtype, fused, steps=3):
    """Steps of a least-squares problem on a (64, 80) weight and a (80,) bias."""
    fusion.set_fusion(fused)
    rng = np.random.RandomState(0)
    w = K.Variable(rng.randn(64, 80).astype(dtype), name="w", dtype=dtype)
    b = K.Variable(rng.randn(80).astype(dtype), name="b", dtype=dtype)
    x = K.placeholder(dtype, (None, 64))
    target = K.constant(rng.randn(16, 80).astype(dtype))
    loss = K.mean(K.square(K.matmul(x, w) + b - target))
    opt = make_opt()
    fn = K.Function([x], [loss], opt.get_updates(loss, [w, b]))
    data = rng.randn(16, 64).astype(dtype)
    losses = [float(fn(data * (1 + i))[0]) for i in range(steps)]
    slots = [v.numpy() for v in opt.variables if v.shape == (64, 80)]
    fusion.set_fusion(None)
    return losses, w.numpy(), b.numpy(), slots


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_fused_update_matches_numpy(name, dtype):
    got = _train(CONFIGS[name], dtype, True)
    want = _train(CONFIGS[name], dtype, False)
    np.testing.assert_allclose(got[0], want[0], **TOL[dtype])
    for g, w in zip(got[1:3] + tuple(got[3]), want[1:3] + tuple(want[3])):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g, w, **TOL[dtype])
    assert len(got[3]) == len(want[3])
    again = _train(CONFIGS[name], dtype, True)
    np.testing.assert_array_equal(again[1], got[1])  # deterministic


def test_fused_kernel_replaces_the_numpy_one_only_when_on():
    from kerasflow.optimizers import kernels

    var = K.Variable(np.ones((64, 80), "float32"))
    g = K.placeholder("float32", (64, 80))
    op = kernels.apply_gradient_descent(var, g, K.constant(np.float32(0.5)))
    for on in (True, False):
        fusion.set_fusion(on)
        fn = K.Function([g], [], updates=[op])
        node = next(n for n in fn._lines if n.op == "ApplyGradientDescent")
        kernel = fn._run.__globals__[f"k{node.id}"]
        is_numpy = getattr(kernel, "func", None) is kernels._apply_gradient_descent
        assert is_numpy != on
        fn(np.full((64, 80), 2.0, "float32"))
    np.testing.assert_array_equal(var.numpy(), np.full((64, 80), -1.0, "float32"))


def test_double_buffering_and_constraints_kept():
    fusion.set_fusion(True)
    plain = K.Variable(np.zeros((64, 80), "float32"))
    clipped = K.Variable(np.zeros((64, 80), "float32"),
                         constraint=lambda v: np.clip(v, -0.25, 0.25))
    loss = K.sum(plain * 1.0) + K.sum(clipped * 1.0)
    fn = K.Function([], [], O.SGD(0.1).get_updates(loss, [plain, clipped]))
    fetched = plain.value
    ids = set()
    for _ in range(4):
        fn()
        ids.add(id(plain.value))
    np.testing.assert_array_equal(fetched, 0.0)  # earlier value never written
    assert len(ids) == 2  # two buffers, swapped, never reallocated
    np.testing.assert_allclose(plain.numpy(), -0.4, rtol=1e-6)
    np.testing.assert_allclose(clipped.numpy(), -0.25)


@pytest.mark.parametrize("name", ["adam_amsgrad_global_clipnorm",
                                  "rmsprop_centered_momentum_wd"])
def test_parallel_update_equals_serial_update(name, monkeypatch):
    from kerasflow.backend import jit
    from kerasflow.optimizers import fused

    serial = _train(CONFIGS[name], "float32", True)
    monkeypatch.setattr(jit, "PARALLEL_MIN", 0)
    monkeypatch.setattr(fused, "PARALLEL_MIN", 0)
    monkeypatch.setitem(jit._STATE, "threads", 2)
    parallel = _train(CONFIGS[name], "float32", True)
    for a, b in zip(serial[1:3] + tuple(serial[3]), parallel[1:3] + tuple(parallel[3])):
        np.testing.assert_array_equal(a, b)


def test_updates_run_serial_below_the_memory_bound_threshold(monkeypatch):
    from kerasflow.backend import jit
    from kerasflow.optimizers import fused

    sizes = []
    real = jit.launch

    def spy(kernels, size, *args):
        sizes.append(size)
        return real(kernels, size, *args)

    monkeypatch.setattr(jit, "launch", spy)
    monkeypatch.setattr(jit, "PARALLEL_MIN", 0)
    _train(CONFIGS["adam"], "float32", True, steps=1)
    assert sizes == [0, 0]  # (64, 80) and (80,): serial
    sizes.clear()
    monkeypatch.setattr(fused, "PARALLEL_MIN", 80)
    _train(CONFIGS["adam"], "float32", True, steps=1)
    assert sorted(sizes) == [80, 64 * 80]


def _sparse_train(make_opt, dtype, fused, ids_batches, row=(2, 3)):
    """Lazy row updates of a (30, *row) table."""
    fusion.set_fusion(fused)
    rng = np.random.RandomState(1)
    table = K.Variable(rng.randn(30, *row).astype(dtype), name="table", dtype=dtype)
    ids = K.placeholder("int32", (None, None))
    target = K.constant(rng.randn(*row).astype(dtype))
    loss = K.sum(K.square(K.embedding_lookup(table, ids) - target))
    opt = make_opt()
    fn = K.Function([ids], [loss], opt.get_updates(loss, [table]))
    node = next(n for n in fn._lines if n.op == "SparseApply")
    kernel = fn._run.__globals__[f"k{node.id}"]
    assert ("_sparse_adam" in getattr(kernel, "__qualname__", "")) == fused
    for batch in ids_batches:
        fn(np.asarray(batch, "int32"))
    slots = [v.numpy() for v in opt.variables if v.shape == (30, *row)]
    fusion.set_fusion(None)
    return table.numpy(), slots


@pytest.mark.parametrize("row", [(2, 3), (40,)], ids=["narrow", "wide"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_sparse_adam_matches_numpy_rows(dtype, amsgrad, row):
    # Duplicates within a batch (summed before the step), rows seen once and
    # rows seen at every step; the untouched rows must stay bitwise as they were.
    batches = [[[4, 4, 9], [0, 4, 29]], [[9, 9, 9], [1, 2, 3]], [[4, 0, 0], [0, 0, 7]]]
    make = lambda: O.Adam(0.05, amsgrad=amsgrad)  # noqa: E731
    got, got_slots = _sparse_train(make, dtype, True, batches, row)
    want, want_slots = _sparse_train(make, dtype, False, batches, row)
    np.testing.assert_allclose(got, want, **TOL[dtype])
    assert len(got_slots) == len(want_slots) == (3 if amsgrad else 2)
    for g, w in zip(got_slots, want_slots):
        np.testing.assert_allclose(g, w, **TOL[dtype])
    initial = np.random.RandomState(1).randn(30, *row).astype(dtype)
    untouched = sorted(set(range(30)) - {0, 1, 2, 3, 4, 7, 9, 29})
    np.testing.assert_array_equal(got[untouched], initial[untouched])
    assert not np.array_equal(got[[4, 9]], initial[[4, 9]])


def test_fused_sparse_adam_keeps_the_numpy_error_for_bad_ids():
    with pytest.raises(Exception, match="30|range|bounds"):
        _sparse_train(lambda: O.Adam(0.05), "float32", True, [[[3, 30]]])
