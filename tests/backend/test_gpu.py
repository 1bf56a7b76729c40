"""The same ops and gradients on the GPU (cupy) as on the CPU (numpy).

Skipped without cupy and a CUDA device (tests/conftest.py). Every test restores
the device it found, so a failure here leaves the CPU tests on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from tests.backend.gradcheck import away_from_zero, check_gradients, grad_fn

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("float64")]

DEVICE = "gpu"


@pytest.fixture
def on_device():
    old = K.get_device()
    K.set_device(DEVICE)
    try:
        yield
    finally:
        K.set_device(old)


def _x(*shape, seed=0):
    return away_from_zero(np.random.RandomState(seed), shape)


def _pos(*shape, seed=0):
    return np.random.RandomState(seed).uniform(0.5, 2.0, size=shape)


def _forward_and_grads(device, fn, inputs):
    """Runs fn and d sum(fn * w) / d inputs on ``device``; numpy results."""
    old = K.get_device()
    K.set_device(device)
    try:
        phs = [K.placeholder(v.dtype.name, v.shape) for v in inputs]
        out = fn(*phs)
        w = np.random.RandomState(9).uniform(-1.0, 1.0, size=out.shape)
        grads = [g for g in K.gradients(K.sum(out * w), phs) if g is not None]
        f = K.Function(phs, [out] + grads)
        values = f(*inputs)
        assert type(values[0]).__module__.split(".")[0] == (
            "cupy" if device == "gpu" else "numpy")
        return [np.asarray(K.to_numpy(v)) for v in values]
    finally:
        K.set_device(old)


CASES = {
    "add_broadcast": (K.add, [_x(3, 1), _x(1, 4, seed=1)]),
    "multiply_rank": (K.multiply, [_x(2, 3, 4), _x(4, seed=1)]),
    "divide": (K.divide, [_x(3, 4), _x(3, 4, seed=1)]),
    "power": (K.power, [_pos(3, 4), _x(3, 4, seed=1)]),
    "exp_log_sqrt": (lambda a: K.exp(a) + K.log(K.abs(a)) + K.sqrt(K.square(a)),
                     [_x(3, 4)]),
    "maximum_where_clip": (lambda a, b: K.where(K.greater(a, 0.0),
                                                K.maximum(a, b), K.clip(b, -0.5, 0.5)),
                           [_x(3, 4), _x(3, 4, seed=1)]),
    "matmul_batched_t": (lambda a, b: K.matmul(a, b, transpose_a=True,
                                               transpose_b=True),
                         [_x(2, 4, 3), _x(5, 4, seed=1)]),
    "reductions": (lambda a: K.sum(a, axis=1) + K.max(a, axis=1)
                   + K.mean(a, axis=(1,)) + K.logsumexp(a, axis=-2), [_x(2, 3, 4)]),
    "prod_keepdims": (lambda a: K.prod(a, axis=0, keepdims=True), [_x(3, 4)]),
    "softmax": (lambda a: K.softmax(a) * K.log_softmax(a, axis=0), [_x(3, 4)]),
    "shape_ops": (lambda a: K.concatenate(
        [K.reshape(K.transpose(a, (1, 0, 2)), (3, 8)), K.tile(a[0], (1, 2))],
        axis=0), [_x(2, 3, 4)]),
    "split_pad": (lambda a: K.pad(K.split(a, [1, 3], axis=1)[1], ((1, 0), (0, 2))),
                  [_x(3, 4)]),
    "getitem": (lambda a: a[::-1, None, 1:, ::2], [_x(3, 4, 4)]),
    "gather_repeated": (lambda a: K.gather(a, np.array([[2, 0], [2, -1]]), axis=1),
                        [_x(3, 4)]),
    "activations": (lambda a: K.relu(a) + K.sigmoid(a) + K.tanh(a) + K.gelu(a)
                    + K.elu(a) + K.softplus(a), [_x(3, 4)]),
    "softmax_xent": (K.softmax_cross_entropy_with_logits, [_pos(3, 4), _x(3, 4)]),
    "sparse_xent": (lambda z: K.sparse_softmax_cross_entropy_with_logits(
        np.array([[0, 3], [1, 1]]), z), [_x(2, 2, 4)]),
    "sigmoid_xent": (K.sigmoid_cross_entropy_with_logits,
                     [_pos(3, 4) / 2.0, _x(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu(name):
    fn, inputs = CASES[name]
    expected = _forward_and_grads("cpu", fn, inputs)
    got = _forward_and_grads(DEVICE, fn, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["matmul_batched_t", "sparse_xent", "softmax_xent",
                                  "gather_repeated", "reductions", "exp_log_sqrt"])
def test_gradcheck_on_device(name, on_device):
    fn, inputs = CASES[name]
    check_gradients(fn, inputs)
    check_gradients(grad_fn(fn), inputs)


def test_session_and_updates_on_device(on_device):
    x = K.placeholder("float64", (None,))
    w = K.Variable(0.0)
    assert type(w.value).__module__.split(".")[0] == "cupy"
    loss = K.mean(K.square(x * w - 2.0 * x))
    (g,) = K.gradients(loss, w)
    train = w.assign_sub(0.2 * g)
    sess = K.Session()
    xs = np.linspace(-1.0, 1.0, 16)
    first, _ = sess.run([loss, train], {x: xs})
    assert type(first).__module__ == "numpy"  # Session hands back numpy
    assert float(first) == pytest.approx(4.0 * np.mean(xs ** 2))
    for _ in range(100):
        sess.run(train, {x: xs})
    assert float(w.numpy()) == pytest.approx(2.0, abs=1e-3)


def test_eager_ops_on_device(on_device):
    xp = K.get_xp()
    a = K.matmul(np.ones((2, 3)), np.ones((3, 4)))
    assert isinstance(a, xp.ndarray)
    np.testing.assert_array_equal(K.to_numpy(a), np.full((2, 4), 3.0))
    np.testing.assert_array_equal(K.to_numpy(K.gather(a, [1, 1])), np.full((2, 4), 3.0))


def test_dropout_on_device(on_device):
    rate = 0.5
    t = K.placeholder("float64", (16, 16))
    y = K.dropout(t, rate, seed=4)
    (g,) = K.gradients(K.sum(y), t)
    y1, g1 = (K.to_numpy(v) for v in K.Function([t], [y, g])(np.ones((16, 16))))
    keep = y1 != 0
    assert 0.3 < keep.mean() < 0.7
    np.testing.assert_allclose(g1, np.where(keep, 1.0 / (1 - rate), 0.0))


def test_runtime_error_on_device_names_the_op(on_device):
    x = K.placeholder("float64", (3,), name="gpu_table")
    idx = K.placeholder("int64", (1,))
    f = K.Function([x, idx], K.gather(x, idx))
    with pytest.raises(ValueError, match=r"Gather.*gpu_table.*must lie in \[-3, 3\)"):
        f(np.zeros(3), np.array([3]))


def test_device_is_restored():
    assert K.get_device() == "cpu"


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-12), ("float32", 2e-6)])
def test_adam_update_one_kernel_matches_cpu(dtype, rtol):
    """Adam on cupy (one fused kernel per variable) against the unfused numpy
    ops over 5 steps: values and both moments; the value fetched before a step
    keeps its pre-update content (double buffering)."""
    import kerasflow as kf

    rng = np.random.RandomState(0)
    w0 = rng.randn(7, 5).astype(dtype)
    grads = [rng.randn(7, 5).astype(dtype) for _ in range(5)]

    def run(device):
        old = K.get_device()
        K.set_device(device)
        try:
            w = kf.Variable(w0, dtype=dtype)
            opt = kf.optimizers.Adam(0.01)
            seen = []
            for g in grads:
                before = w.value
                snap = K.to_numpy(before).copy()
                opt.apply_gradients([(K.get_xp().asarray(g), w)])
                np.testing.assert_array_equal(K.to_numpy(before), snap)
                seen.append(K.to_numpy(w.value).copy())
            return seen, [K.to_numpy(s.value) for s in opt.variables
                          if tuple(s.shape) == (7, 5)]
        finally:
            K.set_device(old)

    (gpu, gpu_slots), (cpu, cpu_slots) = run("gpu"), run("cpu")
    assert len(gpu_slots) == len(cpu_slots) == 2
    for a, b in zip(gpu + gpu_slots, cpu + cpu_slots):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_mask_cuda_kernel_equals_numpy(dtype):
    """The one-launch CUDA hash draws the numpy kernel's mask, bit for bit."""
    import cupy

    from kerasflow.backend.ops import dropout_mask as D

    x = np.zeros((37, 129), dtype)
    want = D._dropout_mask(np, x, rate=0.3, seed=5, rng=np.random.default_rng(5))
    got = D._dropout_mask(cupy, cupy.asarray(x), rate=0.3, seed=5,
                          rng=np.random.default_rng(5))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


def test_function_into_writes_gradients_into_a_device_buffer(on_device):
    """``Function(..., into=)`` on cupy: gradient MatMuls land in views of one
    flat device buffer (the replica's allreduce slot) and equal the copies."""
    import cupy

    x = K.placeholder("float64", (None, 5), name="x")
    w1 = K.Variable(_x(5, 7, seed=1), name="w1")
    w2 = K.Variable(_x(7, 3, seed=2), name="w2")
    loss = K.sum(K.square(K.matmul(K.tanh(K.matmul(x, w1)), w2)))
    fn = K.Function([x], K.gradients(loss, [w1, w2]))
    xv = _x(9, 5, seed=3)
    want = [cupy.asnumpy(g) for g in fn(xv)]
    flat = cupy.full(35 + 21, -1.0, "float64")
    views = [flat[:35].reshape(5, 7), flat[35:].reshape(7, 3)]
    got = fn(xv, into=views)
    assert got[0] is views[0] and got[1] is views[1]
    np.testing.assert_allclose(cupy.asnumpy(flat[:35]), want[0].ravel(), rtol=1e-12)
    np.testing.assert_allclose(cupy.asnumpy(flat[35:]), want[1].ravel(), rtol=1e-12)
    with pytest.raises(ValueError, match="cupy array of shape"):
        fn(xv, into=[np.zeros((5, 7)), None])
