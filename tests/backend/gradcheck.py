"""Numerical gradient checks: symbolic ``gradients`` against central differences.

The checked quantity is ``L = sum_k sum(out_k * w_k)`` with fixed random weights
``w_k``, so every element of every output contributes with a distinct factor and a
wrong sign or a transposed gradient cannot cancel out. Run in float64 (the
``float64`` fixture), where a central difference with eps = 1e-6 is accurate to
about 1e-9 for smooth functions.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["check_gradients", "grad_fn", "numerical_gradient", "away_from_zero"]


def away_from_zero(rng, shape, lo=0.3, hi=1.5):
    """Random float64 values with |v| in [lo, hi): clear of kinks at 0."""
    mag = rng.uniform(lo, hi, size=shape)
    return mag * rng.choice([-1.0, 1.0], size=shape)


def _r(seed):
    return np.random.RandomState(seed)


def x(*shape, seed=0):
    """Values with |v| in [0.3, 1.5), random signs."""
    return away_from_zero(_r(seed), shape)


def pos(*shape, seed=0):
    """Positive values in [0.5, 2)."""
    return _r(seed).uniform(0.5, 2.0, size=shape)


def _is_float(v):
    return np.asarray(v).dtype.kind == "f"


def _build(fn, inputs, weights_seed):
    """Placeholders for the float inputs, the weighted loss and its gradients."""
    phs, args = [], []
    for v in inputs:
        v = np.asarray(v)
        if _is_float(v):
            ph = K.placeholder(v.dtype.name, v.shape, name="x")
            phs.append(ph)
            args.append(ph)
        else:
            args.append(v)  # integer inputs (indices, labels) stay constants
    outs = fn(*args)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    rng = np.random.RandomState(weights_seed)
    terms = []
    for o in outs:
        if o.shape is None or None in o.shape:
            raise ValueError(f"check_gradients needs static output shapes: {o!r}")
        w = rng.uniform(0.5, 1.5, size=o.shape) * rng.choice([-1.0, 1.0], o.shape)
        terms.append(K.sum(o * w.astype(o.dtype)))
    loss = K.add_n(terms)
    return phs, loss


def numerical_gradient(f, values, eps=1e-6):
    """Central differences of scalar ``f(*values)`` w.r.t. each of ``values``."""
    values = [np.array(v, dtype=np.float64, copy=True) for v in values]
    grads = []
    for v in values:
        g = np.zeros_like(v)
        flat, gflat = v.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            up = float(f(*values))
            flat[i] = old - eps
            down = float(f(*values))
            flat[i] = old
            gflat[i] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def check_gradients(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-5, seed=0,
                    expect_none=()):
    """Asserts symbolic gradients of ``fn`` match central differences.

    Args:
        fn: ``fn(*tensors) -> tensor or list of tensors``; integer entries of
            ``inputs`` are passed through as arrays (constants), float ones as
            float64 placeholders.
        inputs: list of numpy arrays (the point at which to check).
        expect_none: positions (among the float inputs) whose symbolic gradient
            must be None (unconnected or stopped).

    Returns:
        The symbolic gradients as numpy arrays (None where None), for further
        checks by the caller.
    """
    inputs = [np.asarray(v) for v in inputs]
    floats = [v for v in inputs if _is_float(v)]
    phs, loss = _build(fn, inputs, seed)
    grads = K.gradients(loss, phs)
    fetch = [g for g in grads if g is not None]
    run_all = K.Function(phs, [loss] + fetch, name="gradcheck")
    run_loss = K.Function(phs, loss, name="gradcheck_loss")
    got = [K.to_numpy(v) for v in run_all(*floats)[1:]]
    it = iter(got)
    analytic = [None if g is None else next(it) for g in grads]
    numeric = numerical_gradient(lambda *vs: K.to_numpy(run_loss(*vs)), floats, eps)
    for i, (a, n, x) in enumerate(zip(analytic, numeric, floats)):
        if i in expect_none:
            assert a is None, f"input {i}: expected a None gradient, got {a}"
            continue
        if a is None:
            np.testing.assert_allclose(
                n, 0.0, atol=atol, err_msg=f"input {i}: gradient None, numeric not 0"
            )
            continue
        assert a.shape == x.shape, f"input {i}: grad shape {a.shape} != {x.shape}"
        assert a.dtype == x.dtype, f"input {i}: grad dtype {a.dtype} != {x.dtype}"
        np.testing.assert_allclose(a, n, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")
    return analytic


def grad_fn(fn, seed=1):
    """``fn``'s weighted first-order gradients, as a function of the same inputs.

    Checking ``grad_fn(fn)`` with ``check_gradients`` checks second-order
    gradients (the gradient graph differentiated again) numerically.
    """

    def first(*args):
        xs = [a for a in args if K.is_symbolic(a)]
        outs = fn(*args)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        rng = np.random.RandomState(seed)
        loss = K.add_n([
            K.sum(o * rng.uniform(0.5, 1.5, size=o.shape).astype(o.dtype))
            for o in outs
        ])
        return [g for g in K.gradients(loss, xs) if g is not None]

    return first
