"""Keras 3's initializer aliases, ``get`` names and the STFT kernel, against
Keras itself; deterministic initializers value-equal, random ones by their
statistics (Keras' seeded streams are its own)."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import initializers as I
from tests.keras_oracle import keras_numpy

ALIASES = {"constant": "Constant", "zeros": "Zeros", "ones": "Ones",
           "identity": "Identity", "orthogonal": "Orthogonal", "stft": "STFT",
           "random_normal": "RandomNormal", "random_uniform": "RandomUniform",
           "truncated_normal": "TruncatedNormal", "variance_scaling":
           "VarianceScaling", "glorot_normal": "GlorotNormal", "glorot_uniform":
           "GlorotUniform", "he_normal": "HeNormal", "he_uniform": "HeUniform",
           "lecun_normal": "LecunNormal", "lecun_uniform": "LecunUniform",
           "IdentityInitializer": "Identity", "OrthogonalInitializer": "Orthogonal",
           "STFTInitializer": "STFT"}


@pytest.mark.parametrize("alias, cls", sorted(ALIASES.items()))
def test_aliases_are_the_classes_as_in_keras(alias, cls):
    keras = keras_numpy()
    assert getattr(I, alias) is getattr(I, cls)
    assert getattr(keras.initializers, alias) is getattr(keras.initializers, cls)


@pytest.mark.parametrize("name, cls", [("uniform", I.RandomUniform),
                                       ("normal", I.RandomNormal),
                                       ("one", I.Ones), ("zero", I.Zeros),
                                       ("IdentityInitializer", I.Identity),
                                       ("stft", I.STFT)])
def test_get_knows_keras_short_names(name, cls):
    keras = keras_numpy()
    ours = I.get(name)
    assert type(ours) is cls
    assert type(keras.initializers.get(name)).__name__ == cls.__name__


def test_uniform_default_range_matches_keras():
    keras = keras_numpy()
    assert I.get("uniform").get_config() == keras.initializers.get(
        "uniform").get_config()
    values = I.get("uniform")((200, 50))
    assert values.dtype == np.float32 and np.abs(values).max() <= 0.05


@pytest.mark.parametrize("kwargs", [{}, {"side": "imag"}, {"window": None},
                                    {"window": "hamming", "periodic": True,
                                     "scaling": "spectrum"},
                                    {"window": "blackman", "scaling": None},
                                    {"window": "tukey"}])
def test_stft_kernel_equals_keras(kwargs):
    keras = keras_numpy()
    ours = I.STFT(**kwargs)((16, 1, 9))
    np.testing.assert_allclose(ours, keras.initializers.STFT(**kwargs)((16, 1, 9)),
                               atol=1e-6)
    assert ours.dtype == np.float32
    assert I.STFT(**kwargs).get_config() == keras.initializers.STFT(
        **kwargs).get_config()


def test_stft_window_array_and_bad_input():
    win = np.hanning(8)
    np.testing.assert_allclose(I.STFT(window=win)((8, 1, 5)),
                               I.STFT(window="hann")((8, 1, 5)), atol=1e-6)
    with pytest.raises(ValueError, match=r"window.*Received: window shape=\(8,\)"):
        I.STFT(window=win)((4, 1, 3))
    with pytest.raises(ValueError, match="side should be 'real' or 'imag'"):
        I.STFT(side="both")
    with pytest.raises(ValueError, match="Received scaling=l2"):
        I.STFT(scaling="l2")


def test_deterministic_initializers_equal_keras():
    keras = keras_numpy()
    np.testing.assert_array_equal(I.Constant(0.3)((2, 3)),
                                  keras.initializers.Constant(0.3)((2, 3)))
    np.testing.assert_array_equal(I.Identity(2.0)((3, 4)),
                                  keras.initializers.Identity(2.0)((3, 4)))
    w = I.orthogonal(gain=1.5, seed=1)((6, 4))
    np.testing.assert_allclose(w.T @ w, 2.25 * np.eye(4), atol=1e-5)


@pytest.mark.parametrize("name", ["glorot_normal", "he_uniform", "lecun_normal",
                                  "variance_scaling", "truncated_normal"])
def test_random_initializers_match_keras_statistics(name):
    keras = keras_numpy()
    ours = getattr(I, name)(seed=3)((400, 300))
    theirs = np.asarray(getattr(keras.initializers, name)(seed=3)((400, 300)))
    assert ours.std() == pytest.approx(theirs.std(), rel=0.02)
    assert abs(ours.mean()) < 0.01 * max(theirs.std(), 1e-3) * 10
    np.testing.assert_array_equal(ours, getattr(I, name)(seed=3)((400, 300)))
