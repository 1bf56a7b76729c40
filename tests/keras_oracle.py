"""Keras 3 on its numpy backend as a test oracle (the ``test`` extra installs it).

``keras_numpy()`` returns the ``keras`` module with ``KERAS_BACKEND=numpy``
(forward passes only), or skips the test when Keras is not installed. Tests
give both frameworks the same weights and compare forward outputs.
"""

from __future__ import annotations

import os

import numpy as np
import pytest


def keras_numpy():
    """The Keras 3 module on the numpy backend (skips when absent).

    Raises:
        RuntimeError: Keras was already imported with another backend.
    """
    os.environ["KERAS_BACKEND"] = "numpy"
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "numpy":
        raise RuntimeError(f"Keras was imported with the "
                           f"{keras.backend.backend()!r} backend before the oracle.")
    return keras


def assert_same_forward(kf_layer, keras_layer, x, rtol=1e-5, atol=1e-6, **call):
    """Builds both layers on ``x``, copies kerasflow's weights into Keras', and
    checks the outputs agree; returns kerasflow's output."""
    ours = np.asarray(kf_layer(x, **call))
    keras_layer(x, **call)  # builds
    keras_layer.set_weights(kf_layer.get_weights())
    theirs = np.asarray(keras_layer(x, **call))
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    return ours
