"""The weight initializer classes (Keras 3's ``keras.initializers``), computed
on the host.

An initializer is called as ``init(shape, dtype=None)`` and returns a numpy array;
``Variable`` moves it to the device. Random initializers draw from
``np.random.RandomState(seed)`` when given an integer seed (the same values on
every call, as Keras 3's seeded initializers) and from numpy's global generator
when ``seed=None``, so ``np.random.seed(...)`` makes a whole model reproducible.

Fans follow Keras' ``compute_fans``: a dense kernel (in, out) has fan_in = in,
fan_out = out; a conv kernel (kh, kw, cin, cout) has fan_in = kh*kw*cin and
fan_out = kh*kw*cout.

Example:
    >>> w = GlorotUniform(seed=0)((784, 128))     # float32 array, |w| <= 0.08
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow.backend import floatx
from kerasflow.utils.serialization import Configurable

__all__ = [
    "Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Identity",
    "Initializer", "LecunNormal", "LecunUniform", "Ones", "Orthogonal", "RandomNormal",
    "RandomUniform", "TruncatedNormal", "VarianceScaling", "Zeros", "compute_fans",
]

# The standard deviation of a unit normal truncated to [-2, 2].
_TRUNCATED_STD = 0.87962566103423978


def compute_fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shape, as Keras' ``compute_fans``."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def _float_dtype(dtype, name) -> np.dtype:
    dtype = np.dtype(dtype or floatx())
    if dtype.kind != "f":
        raise ValueError(
            f"Initializer {name} only produces floating-point values. Received: "
            f"dtype={dtype.name}."
        )
    return dtype


def _rng(seed):
    return np.random if seed is None else np.random.RandomState(seed)


def _truncated(rng, shape, mean, stddev):
    # Redraw values beyond two standard deviations, as TF's truncated_normal.
    out = rng.standard_normal(size=shape)
    bad = np.abs(out) > 2.0
    while bad.any():
        out[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = np.abs(out) > 2.0
    return out * stddev + mean


class Initializer(Configurable):
    """Base class: ``__call__(shape, dtype=None) -> np.ndarray`` and config."""

    def __call__(self, shape, dtype=None) -> np.ndarray:
        raise NotImplementedError(
            f"{type(self).__name__} must implement __call__(shape, dtype=None)."
        )


class Zeros(Initializer):
    """All zeros, of any dtype."""

    def __call__(self, shape, dtype=None):
        return np.zeros(tuple(shape), dtype=dtype or floatx())


class Ones(Initializer):
    """All ones, of any dtype."""

    def __call__(self, shape, dtype=None):
        return np.ones(tuple(shape), dtype=dtype or floatx())


def _check_finite(owner, minimum=None, **values):
    """Each value a finite real (>= minimum): NaN weights poison training."""
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
            raise TypeError(f"{owner} expects `{name}` as a float. Received: "
                            f"{name}={v!r}.")
        if not np.isfinite(v) or (minimum is not None and v < minimum):
            bound = "" if minimum is None else f" >= {minimum}"
            raise ValueError(f"{owner} expects `{name}` as a finite float{bound}. "
                             f"Received: {name}={v}.")


class Constant(Initializer):
    """Fills with ``value`` (a number, or an array broadcastable to the shape).

    Args:
        value: the fill value.
    """

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        value = np.asarray(self.value, dtype=dtype or floatx())
        return np.broadcast_to(value, tuple(shape)).copy()

    def get_config(self):
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}


class RandomNormal(Initializer):
    """Normal draws with ``mean`` and ``stddev``.

    Args:
        mean: mean of the distribution.
        stddev: standard deviation.
        seed: int for the same values on every call; None for numpy's global RNG.
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        _check_finite(type(self).__name__, mean=mean)
        _check_finite(type(self).__name__, minimum=0.0, stddev=stddev)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None):
        dtype = _float_dtype(dtype, type(self).__name__)
        out = _rng(self.seed).standard_normal(size=tuple(shape))
        return (out * self.stddev + self.mean).astype(dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal draws redrawn beyond two standard deviations of the mean.

    Args: as ``RandomNormal``.
    """

    def __call__(self, shape, dtype=None):
        dtype = _float_dtype(dtype, type(self).__name__)
        out = _truncated(_rng(self.seed), tuple(shape), self.mean, self.stddev)
        return out.astype(dtype)


class RandomUniform(Initializer):
    """Uniform draws in ``[minval, maxval)``.

    Args:
        minval, maxval: the bounds.
        seed: int for the same values on every call; None for numpy's global RNG.
    """

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        _check_finite(type(self).__name__, minval=minval, maxval=maxval)
        if minval > maxval:
            raise ValueError(f"{type(self).__name__} expects minval <= maxval. "
                             f"Received: minval={minval}, maxval={maxval}.")
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None):
        dtype = _float_dtype(dtype, type(self).__name__)
        rng = _rng(self.seed)
        return rng.uniform(self.minval, self.maxval, size=tuple(shape)).astype(dtype)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class VarianceScaling(Initializer):
    """Draws with variance ``scale / n``, n the fan chosen by ``mode``.

    "truncated_normal" draws a normal truncated at two standard deviations with
    stddev sqrt(scale / n) / 0.8796 (so the truncated spread is sqrt(scale / n));
    "untruncated_normal" a plain normal with stddev sqrt(scale / n); "uniform"
    draws in [-limit, limit] with limit = sqrt(3 * scale / n).

    Args:
        scale: positive scaling factor.
        mode: "fan_in", "fan_out" or "fan_avg".
        distribution: "truncated_normal", "untruncated_normal" or "uniform".
        seed: int for the same values on every call; None for numpy's global RNG.

    Raises:
        ValueError: a non-positive scale, or an unknown mode or distribution.
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal",
                 seed=None):
        _check_finite(type(self).__name__, scale=scale)
        if scale <= 0.0:
            raise ValueError(
                f"Argument `scale` must be positive. Received: scale={scale}."
            )
        if mode not in self._MODES:
            raise ValueError(
                f"Argument `mode` must be one of {self._MODES}. Received: "
                f"mode={mode!r}."
            )
        distribution = distribution.lower()
        if distribution == "normal":  # TF 1.x name for the truncated normal.
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(
                f"Argument `distribution` must be one of {self._DISTRIBUTIONS}. "
                f"Received: distribution={distribution!r}."
            )
        self.scale, self.mode = scale, mode
        self.distribution, self.seed = distribution, seed

    def __call__(self, shape, dtype=None):
        dtype = _float_dtype(dtype, type(self).__name__)
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out,
               "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        rng = _rng(self.seed)
        if self.distribution == "truncated_normal":
            out = _truncated(rng, shape, 0.0, math.sqrt(scale) / _TRUNCATED_STD)
        elif self.distribution == "untruncated_normal":
            out = rng.standard_normal(size=shape) * math.sqrt(scale)
        else:
            limit = math.sqrt(3.0 * scale)
            out = rng.uniform(-limit, limit, size=shape)
        return out.astype(dtype)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "seed": self.seed}


class _Preset(VarianceScaling):
    """A ``VarianceScaling`` whose scale, mode and distribution are fixed by the
    class (``preset``); only the seed is an argument.

    Args:
        seed: int for the same values on every call; None for numpy's global RNG.
    """

    preset: tuple = ()

    def __init__(self, seed=None):
        super().__init__(*self.preset, seed=seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """Glorot uniform: U[-l, l] with l = sqrt(6 / (fan_in + fan_out))
    (``VarianceScaling(1.0, "fan_avg", "uniform")``, Glorot & Bengio, AISTATS 2010)."""

    preset = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Glorot normal: truncated normal, spread sqrt(2 / (fan_in + fan_out))
    (``VarianceScaling(1.0, "fan_avg", "truncated_normal")``, Glorot & Bengio,
    AISTATS 2010)."""

    preset = (1.0, "fan_avg", "truncated_normal")


class HeUniform(_Preset):
    """He uniform: U[-l, l] with l = sqrt(6 / fan_in)
    (``VarianceScaling(2.0, "fan_in", "uniform")``, He et al., ICCV 2015)."""

    preset = (2.0, "fan_in", "uniform")


class HeNormal(_Preset):
    """He normal: truncated normal, spread sqrt(2 / fan_in)
    (``VarianceScaling(2.0, "fan_in", "truncated_normal")``, He et al., ICCV 2015)."""

    preset = (2.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """LeCun uniform: U[-l, l] with l = sqrt(3 / fan_in)
    (``VarianceScaling(1.0, "fan_in", "uniform")``, LeCun et al., 1998)."""

    preset = (1.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """LeCun normal: truncated normal, spread sqrt(1 / fan_in)
    (``VarianceScaling(1.0, "fan_in", "truncated_normal")``, LeCun et al., 1998)."""

    preset = (1.0, "fan_in", "truncated_normal")


class Orthogonal(Initializer):
    """An orthogonal matrix (Saxe et al., 2014), scaled by ``gain``.

    The shape is flattened to (prod(shape[:-1]), shape[-1]); rows (or columns,
    whichever are fewer) are orthonormal, from the QR decomposition of a normal
    draw with the signs of R's diagonal folded in.

    Args:
        gain: multiplicative factor.
        seed: int for the same values on every call; None for numpy's global RNG.

    Raises:
        ValueError: a shape of rank below 2.
    """

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None):
        dtype = _float_dtype(dtype, "Orthogonal")
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(
                f"Orthogonal initializer needs a shape of rank >= 2. Received: "
                f"shape={shape}."
            )
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = _rng(self.seed).standard_normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q.reshape(shape)).astype(dtype)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (rectangular shapes padded with zeros).

    Args:
        gain: multiplicative factor.

    Raises:
        ValueError: a shape that is not 2-D.
    """

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) != 2:
            raise ValueError(
                f"Identity initializer needs a 2-D shape. Received: shape={shape}."
            )
        return (self.gain * np.eye(*shape)).astype(_float_dtype(dtype, "Identity"))

    def get_config(self):
        return {"gain": self.gain}
