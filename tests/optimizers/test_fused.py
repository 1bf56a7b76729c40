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


def _sparse_train(make_opt, dtype, fused, ids_batches, row=(2, 3), rows=30):
    """Lazy row updates of a (rows, *row) table."""
    fusion.set_fusion(fused)
    rng = np.random.RandomState(1)
    table = K.Variable(rng.randn(rows, *row).astype(dtype), name="table",
                       dtype=dtype)
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
    slots = [v.numpy() for v in opt.variables if v.shape == (rows, *row)]
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


def _lazy_adam_rows(w, g, ids, m, v, alpha, c1, c2, eps):
    """Reference: each distinct id's gradient rows summed one after the other
    in the order they come, then Adam on that row (float32 throughout)."""
    seen = {}
    for i, r in enumerate(ids):
        seen[r] = g[i].copy() if r not in seen else seen[r] + g[i]
    for r, gi in seen.items():
        m[r] = m[r] + (gi - m[r]) * c1
        v[r] = v[r] + (gi * gi - v[r]) * c2
        w[r] = w[r] - m[r] / (np.sqrt(v[r]) + eps) * alpha


def test_fused_sparse_adam_kernel_sums_rows_in_order_with_colliding_ids():
    import inspect

    from kerasflow.backend import jit
    from kerasflow.optimizers import fused

    kernel = jit.kernels(inspect.getsource(fused.sparse_adam_update),
                         "sparse_adam_update")[0]
    rng = np.random.RandomState(5)
    # ids sharing their low bits (multiples of 4096, which the hash table's
    # first probe maps alike), one id 10 times, and random ids with repeats.
    batches = [[4096 * k for k in range(24)] * 2,
               [99999] * 10 + [0] * 5 + list(range(1, 34)),
               rng.randint(0, 100000, 1536).tolist()]
    f = np.float32
    alpha, c1, c2, eps = f(0.01), f(0.1), f(0.001), f(1e-7)
    got = [rng.randn(100000, 3).astype("float32"), np.zeros((100000, 3), "float32"),
           np.zeros((100000, 3), "float32")]
    want = [a.copy() for a in got]
    for batch in batches:
        ids = np.asarray(batch, np.int64)
        g = rng.randn(ids.size, 3).astype("float32")
        w, m, v = got
        assert kernel(w, g, ids, m, v, m, alpha, c1, c2, eps, False) == -1
        _lazy_adam_rows(*want[:1], g, ids, *want[1:], alpha, c1, c2, eps)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)  # bit for bit
    bad = np.array([3, 100000, 5], np.int64)
    before = [a.copy() for a in got]
    assert kernel(got[0], np.ones((3, 3), "float32"), bad, got[1], got[2], got[1],
                  alpha, c1, c2, eps, False) == 1  # nothing written
    for a, b in zip(got, before):
        np.testing.assert_array_equal(a, b)


def test_fused_sparse_adam_parallel_equals_serial(monkeypatch):
    from kerasflow.backend import jit
    from kerasflow.optimizers import fused

    rng = np.random.RandomState(6)
    batches = [rng.randint(0, 30, (8, 12)).tolist() for _ in range(3)]
    make = lambda: O.Adam(0.05, amsgrad=True)  # noqa: E731
    serial = _sparse_train(make, "float32", True, batches)
    monkeypatch.setattr(jit, "PARALLEL_MIN", 0)
    monkeypatch.setattr(fused, "PARALLEL_MIN", 0)
    monkeypatch.setitem(jit._STATE, "threads", 2)
    parallel = _sparse_train(make, "float32", True, batches)
    for a, b in zip([serial[0], *serial[1]], [parallel[0], *parallel[1]]):
        np.testing.assert_array_equal(a, b)


def _adam_steps(fused, between, steps=4):
    """_train's problem with Adam, ``between(i, w, b, opt)`` run before step i;
    returns the weights and the optimizer's variables."""
    fusion.set_fusion(fused)
    rng = np.random.RandomState(0)
    w = K.Variable(rng.randn(64, 80).astype("float32"), name="w")
    b = K.Variable(rng.randn(80).astype("float32"), name="b")
    x = K.placeholder("float32", (None, 64))
    target = K.constant(rng.randn(16, 80).astype("float32"))
    loss = K.mean(K.square(K.matmul(x, w) + b - target))
    opt = O.Adam(0.01)
    fn = K.Function([x], [loss], opt.get_updates(loss, [w, b]))
    data = rng.randn(16, 64).astype("float32")
    for i in range(steps):
        between(i, w, b, opt)
        fn(data * (1 + i))
    fusion.set_fusion(None)
    return [w.numpy(), b.numpy()] + [v.numpy() for v in opt.variables]


def test_fused_checks_run_once_per_variable_not_per_step(monkeypatch):
    from kerasflow.optimizers import fused

    calls = []
    real = fused._flat

    def spy(var, grad, slots):
        calls.append(var.shape)
        return real(var, grad, slots)

    monkeypatch.setattr(fused, "_flat", spy)
    got = _adam_steps(True, lambda *a: None)
    assert sorted(calls) == [(64, 80), (80,)]  # the first step's; then reused
    want = _adam_steps(False, lambda *a: None)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL["float32"])


def _slots(opt):
    return [v for v in opt.variables if v.dtype.kind == "f" and v.ndim > 0]


def _assign_slots(i, w, b, opt):
    if i == 2:  # after two fused steps: new arrays for the moments
        for v in _slots(opt):
            v.assign(v.numpy() * 0.5 + 0.25)


def _assign_weights(i, w, b, opt):
    if i == 2:
        w.assign(np.full((64, 80), 0.1, "float32"))
        b.value = np.asfortranarray(np.full((80,), -0.2, "float32"))


def _fortran_weight(i, w, b, opt):
    if i == 2:  # not C-contiguous: the numpy kernel runs this step
        w.value = np.asfortranarray(w.value + 0.5)


@pytest.mark.parametrize("between", [_assign_slots, _assign_weights,
                                     _fortran_weight])
def test_fused_steps_after_assignments_match_numpy(between):
    # The fused kernels reuse per-slot checks and flat views between steps;
    # an assignment replaces the arrays, and the next step must update (and
    # read) the new ones, as the numpy kernels do.
    got = _adam_steps(True, between)
    want = _adam_steps(False, between)
    unchanged = _adam_steps(True, lambda *a: None)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL["float32"])
    assert not np.allclose(got[0], unchanged[0])


def test_fused_step_rechecks_a_slot_replaced_by_a_read_only_array():
    def read_only(i, w, b, opt):
        if i == 2:  # as ray.get hands it back: not writeable, not ours to fix
            m = _slots(opt)[0]
            m.value = np.frombuffer(m.numpy().tobytes(), "float32").reshape(
                m.shape)

    with pytest.raises(ValueError, match="read-only array"):
        _adam_steps(True, read_only)


def test_fused_steps_follow_a_checkpoint_restore(tmp_path):
    import kerasflow as kf
    import kerasflow.compat.v1 as tf

    rng = np.random.RandomState(0)
    x = rng.randn(64, 6).astype("float32")
    y = rng.randn(64, 1).astype("float32")

    def run(fused, detour):
        fusion.set_fusion(fused)
        kf.utils.set_random_seed(0)
        model = kf.Sequential([kf.layers.Dense(8, input_shape=(6,)),
                               kf.layers.Dense(1)])
        model.compile(optimizer=O.Adam(0.05), loss="mse")
        fit = dict(batch_size=16, shuffle=False, verbose=0)
        model.fit(x, y, **fit)  # four steps: the fused kernels' caches are set
        ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
        path = ckpt.save(str(tmp_path / f"{fused}-{detour}" / "ckpt"))
        if detour:
            model.fit(x * 3.0, y, epochs=2, **fit)
            ckpt.restore(path)
        model.fit(x, y, **fit)
        fusion.set_fusion(None)
        return model.get_weights() + [v.numpy() for v in model.optimizer.variables]

    restored, straight = run(True, True), run(True, False)
    for a, b in zip(restored, straight):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(restored, run(False, True)):
        np.testing.assert_allclose(a, b, **TOL["float32"])


def test_output_buffer_that_is_not_c_contiguous_is_not_written_through_a_copy():
    from kerasflow.optimizers import kernels

    def fortran_target(i, w, b, opt):
        if i == 2:  # set_update_target with a buffer that flattens to a copy
            kernels.set_update_target(w, np.empty((64, 80), "float32", order="F"))

    got = _adam_steps(True, fortran_target)
    want = _adam_steps(False, lambda *a: None)
    np.testing.assert_allclose(got[0], want[0], **TOL["float32"])


def test_spare_buffers_go_with_their_variable():
    import gc

    from kerasflow.optimizers import kernels

    fusion.set_fusion(True)
    var = K.Variable(np.zeros((4, 5), "float32"))
    fn = K.Function([], [], O.SGD(0.1).get_updates(K.sum(var * 1.0), [var]))
    fn()
    key = id(var)
    assert key in kernels._SPARES
    del fn, var
    gc.collect()
    assert key not in kernels._SPARES and key not in kernels._WATCHED
