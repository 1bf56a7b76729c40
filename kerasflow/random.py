"""``kerasflow.random``: Keras 3's ``keras.random`` on the graph backend (L0).

Seeded draws, eager on arrays and symbolic in graphs, built on the backend's
random ops (``kerasflow.backend.ops.random``); no kernel lives here. A ``seed``
is one of:

- an int: the same values on every eager call (stateless, as Keras);
- a ``SeedGenerator``: each call takes the generator's next seed, so successive
  calls differ, and two generators built with the same seed give the same
  sequence;
- None: the next seed of the global sequence fixed by
  ``kerasflow.utils.set_random_seed``.

In a graph (symbolic inputs or a symbolic shape, or while a step is traced) a
draw is a node whose generator is seeded once from that seed: every run of the
compiled graph draws anew, and two compilations of the same graph draw alike.

Example::

    >>> import kerasflow as kf
    >>> gen = kf.random.SeedGenerator(42)
    >>> a = kf.random.normal((2, 3), seed=gen)
    >>> b = kf.random.normal((2, 3), seed=gen)   # differs from a
    >>> c = kf.random.normal((2, 3), seed=7)     # same on every call
"""

from __future__ import annotations

import random as _py_random

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.ops import random as _ops
from kerasflow.utils.keras_surface import missing_attribute

__all__ = ["SeedGenerator", "beta", "binomial", "categorical", "draw_seed",
           "dropout", "gamma", "normal", "randint", "shuffle", "truncated_normal",
           "uniform"]


def _derive(seed: int, counter: int) -> int:
    # Spreads (seed, counter) over 63 bits, so nearby seeds give unrelated streams.
    state = np.random.SeedSequence([int(seed) % 2**63, counter]).generate_state(
        2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


class SeedGenerator:
    """A stateful seed: each ``next()`` returns a new seed for one random draw
    (Keras 3's ``keras.random.SeedGenerator``).

    Args:
        seed: an int; None picks one from Python's ``random`` (itself fixed by
            ``kerasflow.utils.set_random_seed``).
        name: an optional name.

    Raises:
        ValueError: ``seed`` is not an int or None.

    Example::

        >>> gen = SeedGenerator(1337)
        >>> x = kerasflow.random.uniform((4,), seed=gen)
    """

    def __init__(self, seed: int | None = None, name: str | None = None, **kwargs):
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments passed to "
                            f"SeedGenerator: {sorted(kwargs)}")
        if seed is None:
            seed = _py_random.randint(1, 10**9)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"Argument `seed` must be an integer. "
                             f"Received: seed={seed!r}")
        self.name = name or "seed_generator"
        self._initial_seed = int(seed)
        self._counter = 0

    @property
    def state(self) -> np.ndarray:
        """``[seed, draws so far]`` as uint32 (Keras' state variable's value)."""
        return np.asarray([self._initial_seed % 2**32, self._counter % 2**32],
                          np.uint32)

    def next(self, ordered: bool = True) -> int:
        """The seed for the next draw; advances the state by one."""
        seed = _derive(self._initial_seed, self._counter + 1)
        self._counter += 1
        return seed

    def get_config(self) -> dict:
        return {"seed": self._initial_seed}

    @classmethod
    def from_config(cls, config: dict) -> SeedGenerator:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<SeedGenerator name={self.name!r} seed={self._initial_seed}>"


def draw_seed(seed) -> int | None:
    """The op seed for one draw: a SeedGenerator's next seed, a fixed derivation
    of an int, or None (the backend's global sequence).

    Raises:
        ValueError: any other ``seed``.
    """
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if seed is None:
        return None
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return _derive(int(seed), 0)
    raise ValueError(f"Argument `seed` must be either an integer or an instance "
                     f"of `SeedGenerator`. Received: seed={seed!r} (of type "
                     f"{type(seed)})")


def _float_dtype(dtype, fn: str) -> str:
    dtype = np.dtype(dtype or K.floatx())
    if dtype.kind != "f":
        raise ValueError(f"`keras.random.{fn}` requires a floating point `dtype`. "
                         f"Received: dtype={dtype.name} ")
    return dtype.name


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Values from N(mean, stddev**2).

    Args:
        shape: a tuple of ints, or a run-time shape (an int64 vector tensor, or a
            tuple holding scalar tensors such as ``K.shape(x)[0]``).
        mean, stddev: floats.
        dtype: a float dtype (default ``floatx()``).
        seed: an int, a ``SeedGenerator`` or None (see the module docstring).

    Returns:
        An array (static shape, no graph) or a symbolic tensor of ``shape``.

    Raises:
        ValueError: a non-float ``dtype`` or an invalid ``seed``.
    """
    return _ops.random_normal(shape, mean, stddev, _float_dtype(dtype, "normal"),
                              draw_seed(seed))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Values uniform in ``[minval, maxval)``; arguments as ``normal``.

    Raises:
        ValueError: a non-float ``dtype`` (use ``randint``) or an invalid seed.
    """
    return _ops.random_uniform(shape, minval, maxval,
                               _float_dtype(dtype, "uniform"), draw_seed(seed))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """N(mean, stddev**2) values, redrawn beyond two standard deviations;
    arguments as ``normal``."""
    return _ops.truncated_normal(shape, mean, stddev,
                                 _float_dtype(dtype, "truncated_normal"),
                                 draw_seed(seed))


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform in ``[minval, maxval)`` of ``shape`` and int ``dtype``.

    Raises:
        ValueError: a non-integer ``dtype``, ``maxval <= minval``, or an
            invalid seed.
    """
    if np.dtype(dtype).kind not in "iu":
        raise ValueError(f"`keras.random.randint` requires an integer `dtype`. "
                         f"Received: dtype={np.dtype(dtype).name} ")
    return _ops.random_integers(shape, minval, maxval, np.dtype(dtype).name,
                                draw_seed(seed))


def categorical(logits, num_samples, dtype="int32", seed=None):
    """Class indices drawn from ``softmax(logits)`` per row.

    Args:
        logits: ``(batch_size, num_classes)`` floats (unnormalized log
            probabilities).
        num_samples: draws per row.

    Returns:
        ``(batch_size, num_samples)`` indices of ``dtype``.

    Raises:
        ValueError: ``logits`` is not 2-D.
    """
    logits = logits if K.is_symbolic(logits) else np.asarray(logits)
    if not K.is_symbolic(logits) and logits.ndim != 2:
        raise ValueError(f"`logits` should be a 2-D tensor of shape (batch_size, "
                         f"num_classes). Received: logits.shape={logits.shape}")
    return _ops.random_categorical(logits, num_samples, dtype, draw_seed(seed))


def _noise_shape(inputs, noise_shape):
    if noise_shape is None:
        return None
    static = K.int_shape(inputs) if K.is_symbolic(inputs) else np.shape(inputs)
    dims = []
    for i, d in enumerate(noise_shape):
        if d is not None:
            dims.append(int(d))
        elif static[i] is not None:
            dims.append(int(static[i]))
        else:
            dims.append(K.shape_of(inputs)[i])
    return tuple(dims)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zeros each entry with probability ``rate`` and scales the rest by
    ``1 / (1 - rate)`` (inverted dropout, as ``keras.random.dropout``).

    Args:
        inputs: a float tensor or array.
        rate: the drop probability, in ``[0, 1)``.
        noise_shape: a shape broadcastable to ``inputs``' (None entries take
            ``inputs``' size), to drop whole rows or channels.
        seed: as ``normal``.

    Returns:
        A tensor or array of ``inputs``' shape and dtype.

    Raises:
        ValueError: ``rate`` outside ``[0, 1)``.
    """
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"Invalid value received for argument `rate`. Expected a "
                         f"float value between 0 and 1 (excluded). "
                         f"Received: rate={rate}")
    if not K.is_symbolic(inputs) and not isinstance(inputs, K.get_xp().ndarray):
        inputs = np.asarray(inputs)
    if np.dtype(inputs.dtype).kind != "f":
        inputs = K.cast(inputs, K.floatx())
    dtype = np.dtype(inputs.dtype).name
    keep = 1.0 - float(rate)
    shape = _noise_shape(inputs, noise_shape)
    op_seed = draw_seed(seed)
    noise = (_ops.random_uniform_like(inputs, dtype=dtype, seed=op_seed)
             if shape is None else _ops.random_uniform(shape, dtype=dtype,
                                                       seed=op_seed))
    mask = K.cast(K.less(noise, keep), dtype)
    return inputs * mask / np.asarray(keep, dtype)


def shuffle(x, axis=0, seed=None):
    """``x`` with its slices along ``axis`` in a random order.

    Args:
        x: a tensor or array.
        axis: the axis to permute (negative counts from the end).
    """
    ndim = len(K.int_shape(x)) if K.is_symbolic(x) else np.ndim(x)
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"`axis` must be in [-{ndim}, {ndim}). Received: "
                         f"axis={axis}")
    x = x if K.is_symbolic(x) else np.asarray(x)
    return _ops.random_shuffle(x, axis % max(ndim, 1), draw_seed(seed))


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(alpha, scale 1) values; ``alpha`` a positive float, other arguments
    as ``normal``."""
    return _ops.random_gamma(shape, float(alpha), _float_dtype(dtype, "gamma"),
                             draw_seed(seed))


def beta(shape, alpha, beta, dtype=None, seed=None):  # noqa: A002 (Keras' name)
    """Beta(alpha, beta) values in [0, 1]; ``alpha``, ``beta`` positive floats."""
    return _ops.random_beta(shape, float(alpha), float(beta),
                            _float_dtype(dtype, "beta"), draw_seed(seed))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial(counts, probabilities) success counts as floats; ``counts`` a
    whole number, ``probabilities`` in [0, 1]."""
    return _ops.random_binomial(shape, float(counts), float(probabilities),
                                _float_dtype(dtype, "binomial"), draw_seed(seed))


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    raise missing_attribute("random", name)
