"""Control flow of ``kerasflow.ops`` against Keras 3 (numpy backend) on
arrays, and the same functions on symbolic tensors (unrolled, or both
branches selected) through ``K.Function``, with gradients through loops."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

R = np.random.RandomState(6)
X = R.randn(4, 3).astype("float32")


def _both(name, *args, **kwargs):
    keras = keras_numpy()
    theirs = getattr(keras.ops, name)(*args, **kwargs)
    ours = getattr(kf.ops, name)(*args, **kwargs)
    for o, t in zip(kf.tree.flatten(ours), kf.tree.flatten(theirs)):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)
    return ours


def test_eager_control_flow_equals_keras():
    _both("cond", True, lambda: X * 2, lambda: X - 1)
    _both("cond", np.array(False), lambda: X * 2, lambda: X - 1)
    for i in (-1, 0, 1, 5):
        _both("switch", i, [lambda a: a + 1, lambda a: a * 3], X)
    _both("while_loop", lambda a, b: kf.ops.sum(a) < 50.0,
          lambda a, b: (a * 2.0 + 1.0, b + 1), (np.abs(X), np.array(0)))
    _both("while_loop", lambda a: True, lambda a: a + 1.0, X, maximum_iterations=3)
    _both("fori_loop", 1, 5, lambda i, v: v * i + 1.0, X)
    _both("scan", lambda c, x: (c + x, c * x), np.zeros(3, "float32"), X)
    _both("scan", lambda c, x: (c + x, {"a": c, "b": x * 2}), np.ones(3, "float32"),
          X, reverse=True)
    _both("scan", lambda c, _: (c * 2.0, c), np.float32(1.0), None, length=4)
    _both("associative_scan", lambda a, b: a + b, X)
    _both("associative_scan", lambda a, b: a * b, X, reverse=True, axis=1)
    _both("associative_scan", lambda a, b: (a[0] + b[0], a[1] * b[1]),
          (X, X + 2.0))
    _both("map", lambda r: r * r, X)
    _both("vectorized_map", lambda r: kf.ops.sum(r), X)


def test_symbolic_loops_unroll_and_match_eager():
    ph = K.placeholder("float32", (4, 3))
    carry, ys = kf.ops.scan(lambda c, x: (c + x, c * x), K.zeros_like(ph[0]), ph)
    acc = kf.ops.associative_scan(lambda a, b: a + b, ph, axis=1)
    loop = kf.ops.fori_loop(0, 3, lambda i, v: v * 2.0 + float(i), ph)
    wl = kf.ops.while_loop(lambda v: kf.ops.sum(v) < 40.0, lambda v: v + 1.0,
                           kf.ops.abs(ph), maximum_iterations=10)
    pick = kf.ops.cond(kf.ops.sum(ph) > 0, lambda: ph * 2.0, lambda: -ph)
    sw = kf.ops.switch(K.cast(kf.ops.sum(ph) > 0, "int32"),
                       [lambda a: a + 1.0, lambda a: a * 3.0], ph)
    mapped = kf.ops.map(lambda r: r * r, ph)
    run = K.Function([ph], [carry, ys, acc, loop, wl, pick, sw, mapped])
    for x in (X, -np.abs(X)):
        got = run(x)
        want = [kf.ops.scan(lambda c, v: (c + v, c * v), np.zeros(3, "float32"), x)[0],
                kf.ops.scan(lambda c, v: (c + v, c * v), np.zeros(3, "float32"), x)[1],
                np.cumsum(x, axis=1), kf.ops.fori_loop(0, 3, lambda i, v: v * 2.0 + i, x),
                kf.ops.while_loop(lambda v: np.sum(v) < 40.0, lambda v: v + 1.0,
                                  np.abs(x), maximum_iterations=10),
                x * 2.0 if x.sum() > 0 else -x,
                x * 3.0 if x.sum() > 0 else x + 1.0, x * x]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_symbolic_while_loop_needs_maximum_iterations():
    ph = K.placeholder("float32", (3,))
    with pytest.raises(ValueError, match="maximum_iterations"):
        kf.ops.while_loop(lambda v: kf.ops.sum(v) < 4.0, lambda v: v + 1.0, ph)
    with pytest.raises(ValueError, match="concrete bounds"):
        kf.ops.fori_loop(0, K.placeholder("int32", ()), lambda i, v: v, ph)


def test_custom_gradient_returns_forward_value():
    @kf.ops.custom_gradient
    def f(x):
        return x * 2.0, lambda g: g
    np.testing.assert_allclose(f(X), X * 2.0)


def test_gradients_through_unrolled_loops(float64):
    check_gradients(lambda x: kf.ops.scan(lambda c, v: (c * v + 1.0, c), x[0] * 0,
                                          x)[0], [R.randn(3, 2)])
    check_gradients(lambda x: kf.ops.while_loop(
        lambda v: kf.ops.sum(v) < 30.0, lambda v: v * 1.5, x * x + 0.5,
        maximum_iterations=4), [R.randn(2, 2)])
