"""Seeded random ops: uniform, normal, truncated normal, and their ``_like`` forms.

Every random node carries a seed. A compiled ``Function`` binds one generator per
node, created from that seed, so successive runs draw successive values and two
functions built from the same graph and seeds draw the same ones. Eagerly, a call
with a seed draws the same values every time (stateless, like
``tf.random.stateless_uniform``). A seed of None takes the next seed from the
global sequence fixed by ``set_random_seed`` (TF's graph-level + op-level seeds).
"""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.graph import SymbolicTensor
from kerasflow.backend.ops.shape import shape_vector
from kerasflow.backend.registry import apply, register_op

__all__ = ["random_uniform", "random_normal", "truncated_normal", "set_random_seed",
           "random_uniform_like", "random_normal_like", "random_integers",
           "random_gamma", "random_beta", "random_binomial", "random_categorical",
           "random_shuffle"]

_seeds = itertools.count()
_GLOBAL_SEED = [0]


def set_random_seed(seed: int) -> None:
    """Fixes the sequence of op seeds given to random ops created with seed=None."""
    global _seeds
    _GLOBAL_SEED[0] = int(seed)
    _seeds = itertools.count()


def _next_seed(seed):
    if seed is not None:
        return int(seed)
    return _GLOBAL_SEED[0] * 1_000_003 + next(_seeds)


def make_rng(xp, seed):
    """A generator of ``xp`` seeded with ``seed`` (one per compiled node)."""
    if hasattr(xp.random, "default_rng"):
        return xp.random.default_rng(seed)
    return xp.random.RandomState(seed)


def eager_rng(seed):
    return make_rng(_array.get_xp(), seed)


def draw_key(rng) -> int:
    """One uniform 64-bit integer (a Python int) from a ``make_rng`` generator,
    as two 32-bit draws (the keys of counter-based random kernels)."""
    draw = rng.integers if hasattr(rng, "integers") else rng.randint
    lo, hi = (int(v) for v in _array.as_numpy(draw(0, 2**32, size=2)))
    return lo | (hi << 32)


def _draw(rng, kind, shape, dtype, a, b):
    if kind == "uniform":
        return rng.uniform(a, b, size=shape).astype(dtype, copy=False)
    if kind == "normal":
        return (rng.standard_normal(size=shape) * b + a).astype(dtype, copy=False)
    if kind == "randint":
        draw = rng.integers if hasattr(rng, "integers") else rng.randint
        return draw(int(a), int(b), size=shape).astype(dtype, copy=False)
    if kind == "gamma":
        return rng.gamma(a, 1.0, size=shape).astype(dtype, copy=False)
    if kind == "beta":
        return rng.beta(a, b, size=shape).astype(dtype, copy=False)
    if kind == "binomial":
        return rng.binomial(int(a), b, size=shape).astype(dtype, copy=False)
    # Truncated normal: values beyond two standard deviations are redrawn, as in
    # TF's truncated_normal.
    out = rng.standard_normal(size=shape)
    bad = abs(out) > 2.0
    while bool(bad.any()):
        out[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = abs(out) > 2.0
    return (out * b + a).astype(dtype, copy=False)


def _random_infer(shape, dtype, kind, a, b, seed):
    return tuple(shape), np.dtype(dtype)


@register_op("RandomStandard", lambda *_, **k: _random_infer(**k), random=True,
             differentiable=False)
def _random(xp, shape, dtype, kind, a, b, seed, rng):
    return _draw(rng, kind, shape, dtype, a, b)


def _like_infer(x, dtype, kind, a, b, seed):
    return x.shape, np.dtype(dtype)


@register_op("RandomLike", _like_infer, random=True, differentiable=False)
def _random_like(xp, x, dtype, kind, a, b, seed, rng):
    return _draw(rng, kind, x.shape, dtype, a, b)


def _shaped_infer(shape, dtype, kind, a, b, seed, static):
    return tuple(static), np.dtype(dtype)


@register_op("RandomShaped", _shaped_infer, random=True, differentiable=False)
def _random_shaped(xp, shape, dtype, kind, a, b, seed, static, rng):
    return _draw(rng, kind, tuple(int(d) for d in _array.as_numpy(shape)), dtype,
                 a, b)


def _apply(kind, shape, a, b, dtype, seed):
    dtype = np.dtype(dtype or _array.floatx()).name
    if isinstance(shape, SymbolicTensor) or any(
            isinstance(d, SymbolicTensor) for d in shape):
        vector, static = shape_vector(shape, "a random op")
        return apply("RandomShaped", vector, dtype=dtype, kind=kind, a=float(a),
                     b=float(b), seed=_next_seed(seed), static=static)
    if any(d is None for d in shape):
        raise ValueError(f"A random op needs a shape known when it runs: ints, or "
                         f"tensors such as K.shape(x)[0] for a batch size. "
                         f"Received: shape={tuple(shape)}.")
    return apply("RandomStandard", shape=tuple(int(d) for d in shape), dtype=dtype,
                 kind=kind, a=float(a), b=float(b), seed=_next_seed(seed))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform values in [minval, maxval) of ``shape``.

    ``shape``: a tuple of ints (with no symbolic input the values come at once,
    as initial values), or a shape known only when the graph runs: an int64
    vector tensor or a tuple holding scalar tensors, as Keras 2 programs write
    ``K.random_normal(shape=(K.shape(z)[0], dim))``; those draw anew on every
    run.

    Raises:
        ValueError: a None dimension (use ``K.shape(x)[i]``).
    """
    return _apply("uniform", shape, minval, maxval, dtype, seed)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal values N(mean, stddev**2) of a static ``shape``."""
    return _apply("normal", shape, mean, stddev, dtype, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal values redrawn beyond 2 standard deviations (TF's truncated_normal)."""
    return _apply("truncated", shape, mean, stddev, dtype, seed)


def random_uniform_like(x, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform values with the runtime shape of ``x`` (dropout masks)."""
    dtype = np.dtype(dtype or _array.floatx()).name
    return apply("RandomLike", x, dtype=dtype, kind="uniform", a=float(minval),
                 b=float(maxval), seed=_next_seed(seed))


def random_normal_like(x, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal values with the runtime shape of ``x`` (Gaussian noise layers)."""
    dtype = np.dtype(dtype or _array.floatx()).name
    return apply("RandomLike", x, dtype=dtype, kind="normal", a=float(mean),
                 b=float(stddev), seed=_next_seed(seed))


def random_integers(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform in [minval, maxval) of ``shape`` (``shape`` as in
    ``random_uniform``).

    Raises:
        ValueError: ``maxval <= minval``.
    """
    if int(maxval) <= int(minval):
        raise ValueError(f"random_integers expects maxval > minval. Received: "
                         f"minval={minval}, maxval={maxval}.")
    return _apply("randint", shape, int(minval), int(maxval), dtype, seed)


def random_gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(alpha, scale 1) values of ``shape``; ``alpha`` a positive float."""
    return _apply("gamma", shape, alpha, 1.0, dtype, seed)


def random_beta(shape, alpha, beta, dtype=None, seed=None):
    """Beta(alpha, beta) values of ``shape``; both positive floats."""
    return _apply("beta", shape, alpha, beta, dtype, seed)


def random_binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial(counts, probabilities) values of ``shape`` (whole ``counts``)."""
    return _apply("binomial", shape, counts, probabilities, dtype, seed)


def _categorical_infer(logits, num_samples, dtype, seed):
    if logits.shape is not None and len(logits.shape) != 2:
        raise ValueError(f"`logits` should be a 2-D tensor of shape (batch_size, "
                         f"num_classes). Received: logits.shape={logits.shape}")
    batch = None if logits.shape is None else logits.shape[0]
    return (batch, int(num_samples)), np.dtype(dtype)


@register_op("RandomCategorical", _categorical_infer, random=True,
             differentiable=False)
def _categorical(xp, logits, num_samples, dtype, seed, rng):
    # Inverse-CDF sampling of softmax(logits), row by row, in float64.
    z = logits.astype("float64")
    p = xp.exp(z - z.max(axis=-1, keepdims=True))
    cdf = xp.cumsum(p / p.sum(axis=-1, keepdims=True), axis=-1)
    u = rng.uniform(0.0, 1.0, size=(logits.shape[0], int(num_samples)))
    idx = (u[:, :, None] > cdf[:, None, :]).sum(axis=-1)
    return xp.minimum(idx, logits.shape[1] - 1).astype(dtype)


def random_categorical(logits, num_samples, dtype="int32", seed=None):
    """Class indices drawn from ``softmax(logits)``.

    Args:
        logits: ``(batch_size, num_classes)`` float tensor or array.
        num_samples: draws per row.

    Returns:
        ``(batch_size, num_samples)`` of ``dtype``.
    """
    return apply("RandomCategorical", logits, num_samples=int(num_samples),
                 dtype=np.dtype(dtype).name, seed=_next_seed(seed))


def _shuffle_infer(x, axis, seed):
    return x.shape, x.dtype


@register_op("RandomShuffle", _shuffle_infer, random=True, differentiable=False)
def _shuffle(xp, x, axis, seed, rng):
    return xp.take(x, xp.asarray(rng.permutation(x.shape[axis])), axis=axis)


def random_shuffle(x, axis=0, seed=None):
    """``x`` with its slices along ``axis`` in a random order."""
    return apply("RandomShuffle", x, axis=int(axis), seed=_next_seed(seed))
