"""Keras 3 on its numpy backend as a test oracle (the ``test`` extra installs it).

``keras_numpy()`` returns the ``keras`` module with ``KERAS_BACKEND=numpy``
(forward passes only), or skips the test when Keras is not installed. Tests
give both frameworks the same weights and compare forward outputs.
"""

from __future__ import annotations

import os
import re

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


def build_alike(kf_layer, keras_layer, x, seed=0, noise=0.3):
    """Builds both layers on ``x`` and gives both the same weights:
    kerasflow's initial ones plus seeded noise (so no weight is trivially
    zero). Returns the weights set."""
    kf_layer(x)
    keras_layer(x)
    rng = np.random.RandomState(seed)
    weights = [(w + rng.randn(*w.shape) * noise).astype(w.dtype)
               for w in kf_layer.get_weights()]
    kf_layer.set_weights(weights)
    keras_layer.set_weights(weights)
    return weights


def weight_specs(weights):
    """(short name, dtype, shape, trainable) per Variable of either framework,
    to compare a layer's variables with Keras' ("kernel" for kerasflow's
    "dense/kernel_1": graph names of a rebuilt weight get a counter)."""
    out = []
    for w in weights:
        name = (getattr(w, "path", None) or w.name).split("/")[-1]
        out.append((re.sub(r"_\d+$", "", name), np.dtype(w.dtype).name,
                    tuple(w.shape), bool(w.trainable)))
    return out
