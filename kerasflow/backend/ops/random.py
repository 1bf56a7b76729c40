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
from kerasflow.backend.registry import apply, register_op

__all__ = ["random_uniform", "random_normal", "truncated_normal", "set_random_seed",
           "random_uniform_like", "random_normal_like"]

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


def _draw(rng, kind, shape, dtype, a, b):
    if kind == "uniform":
        return rng.uniform(a, b, size=shape).astype(dtype, copy=False)
    if kind == "normal":
        return (rng.standard_normal(size=shape) * b + a).astype(dtype, copy=False)
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


def _apply(kind, shape, a, b, dtype, seed):
    dtype = np.dtype(dtype or _array.floatx()).name
    return apply("RandomStandard", shape=tuple(int(d) for d in shape), dtype=dtype,
                 kind=kind, a=float(a), b=float(b), seed=_next_seed(seed))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform values in [minval, maxval) of a static ``shape``.

    With no symbolic input these return an array at once (initial values); inside
    a graph use ``random_uniform_like``, which draws anew on every run.
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
