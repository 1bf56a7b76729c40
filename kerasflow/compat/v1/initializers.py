"""TF1 initializers (``tf.zeros_initializer()``, ``tf.random_normal_initializer``
...), with TF1's defaults, over ``kerasflow.initializers``.

Each returns a callable ``(shape, dtype) -> array``. With ``seed=None`` the
seed is drawn from the sequence ``tf.set_random_seed`` fixes, so programs that
set a graph seed get the same initial values on every run, as in TF1.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import initializers as kinit

__all__ = [
    "zeros_initializer",
    "ones_initializer",
    "constant_initializer",
    "random_normal_initializer",
    "truncated_normal_initializer",
    "random_uniform_initializer",
    "glorot_uniform_initializer",
    "glorot_normal_initializer",
    "variance_scaling_initializer",
    "orthogonal_initializer",
]


def _seed(seed):
    """``seed``, or one drawn from ``set_random_seed``'s sequence (reproducible)."""
    if seed is not None:
        return int(seed)
    return int(K.random_uniform((), 0, 2**31 - 1, dtype="float64"))


def zeros_initializer(dtype=None):
    return kinit.Zeros()


def ones_initializer(dtype=None):
    return kinit.Ones()


def constant_initializer(value=0, dtype=None, verify_shape=False):
    """Fills with ``value``: a number, or an array of exactly the shape asked."""
    if np.ndim(value) == 0:
        return kinit.Constant(float(value))

    def init(shape, dtype=None, partition_info=None):
        arr = np.asarray(value, dtype=dtype)
        if arr.size != int(np.prod(shape)):
            raise ValueError(f"constant_initializer has {arr.size} values for "
                             f"shape {tuple(shape)}.")
        return arr.reshape(shape)

    return init


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return kinit.RandomNormal(mean, stddev, seed=_seed(seed))


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return kinit.TruncatedNormal(mean, stddev, seed=_seed(seed))


def random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=None):
    return kinit.RandomUniform(minval, 1.0 if maxval is None else maxval,
                               seed=_seed(seed))


def glorot_uniform_initializer(seed=None, dtype=None):
    return kinit.GlorotUniform(seed=_seed(seed))


def glorot_normal_initializer(seed=None, dtype=None):
    return kinit.GlorotNormal(seed=_seed(seed))


def variance_scaling_initializer(scale=1.0, mode="fan_in",
                                 distribution="truncated_normal", seed=None,
                                 dtype=None):
    if distribution == "normal":  # TF1's alias of truncated_normal
        distribution = "truncated_normal"
    return kinit.VarianceScaling(scale, mode, distribution, seed=_seed(seed))


def orthogonal_initializer(gain=1.0, seed=None, dtype=None):
    return kinit.Orthogonal(gain, seed=_seed(seed))
