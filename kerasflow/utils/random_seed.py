"""``set_random_seed``: one call that makes a program's randomness reproducible
(Keras 3's ``keras.utils.set_random_seed``)."""

from __future__ import annotations

import random

import numpy as np

from kerasflow import backend as K

__all__ = ["set_random_seed"]


def set_random_seed(seed: int) -> None:
    """Seeds Python's ``random``, numpy's global generator (initializers with
    ``seed=None`` and ``shuffle`` draw from it) and the backend's op seeds
    (dropout, noise and random ops created afterwards with ``seed=None``).

    Raises:
        ValueError: ``seed`` is not a non-negative int.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"Expected `seed` argument to be a non-negative integer. "
                         f"Received: seed={seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    K.set_random_seed(int(seed))
