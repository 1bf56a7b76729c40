"""Initializers: shapes, dtypes, seeding, statistics, orthogonality, configs;
Keras 3's aliases, ``get`` names and the STFT kernel against Keras itself
(deterministic initializers value-equal, random ones by their statistics:
Keras' seeded streams are its own)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kerasflow import initializers as I
from tests.keras_oracle import keras_numpy

RANDOM = [
    I.RandomNormal(seed=1), I.RandomUniform(seed=1), I.TruncatedNormal(seed=1),
    I.GlorotUniform(seed=1), I.GlorotNormal(seed=1), I.HeUniform(seed=1),
    I.HeNormal(seed=1), I.LecunUniform(seed=1), I.LecunNormal(seed=1),
    I.VarianceScaling(2.0, "fan_out", "untruncated_normal", seed=1),
    I.Orthogonal(gain=2.0, seed=1),
]
ALL = RANDOM + [I.Zeros(), I.Ones(), I.Constant(3.0), I.Identity(gain=0.5)]


@pytest.mark.parametrize("init", ALL, ids=lambda i: type(i).__name__)
def test_shape_dtype_and_config_round_trip(init):
    w = init((4, 6))
    assert isinstance(w, np.ndarray) and w.shape == (4, 6) and w.dtype == np.float32
    assert init((4, 6), dtype="float64").dtype == np.float64
    config = init.get_config()
    assert type(init)(**config).get_config() == config
    again = I.get(I.serialize(init))
    assert type(again) is type(init) and again.get_config() == config


@pytest.mark.parametrize("init", RANDOM, ids=lambda i: type(i).__name__)
def test_seeded_draws_repeat_and_unseeded_follow_np_random(init):
    np.testing.assert_array_equal(init((3, 5)), init((3, 5)))
    other = type(init)(**{**init.get_config(), "seed": 2})
    assert not np.array_equal(init((3, 5)), other((3, 5)))
    unseeded = type(init)(**{**init.get_config(), "seed": None})
    np.random.seed(7)
    a = unseeded((3, 5))
    np.random.seed(7)
    np.testing.assert_array_equal(a, unseeded((3, 5)))
    assert not np.array_equal(a, unseeded((3, 5)))


@pytest.mark.parametrize("shape,fans", [
    ((), (1, 1)), ((7,), (7, 7)), ((3, 5), (3, 5)), ((3, 3, 4, 8), (36, 72))])
def test_compute_fans(shape, fans):
    assert I.compute_fans(shape) == fans


def test_glorot_uniform_limit_and_spread():
    w = I.GlorotUniform(seed=0)((300, 500))
    limit = math.sqrt(6 / 800)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    assert w.std() == pytest.approx(limit / math.sqrt(3), rel=0.02)


def test_he_normal_std_on_conv_kernel():
    w = I.HeNormal(seed=0)((3, 3, 64, 64))  # fan_in = 576
    assert w.std() == pytest.approx(math.sqrt(2 / 576), rel=0.02)
    assert np.abs(w).max() <= 2 * math.sqrt(2 / 576) / 0.87962566103423978 + 1e-6
    assert abs(w.mean()) < 0.002


def test_normal_uniform_and_truncated_statistics():
    n = I.RandomNormal(mean=1.0, stddev=0.5, seed=0)((200, 200))
    assert n.mean() == pytest.approx(1.0, abs=0.01)
    assert n.std() == pytest.approx(0.5, rel=0.02)
    u = I.RandomUniform(-2.0, 3.0, seed=0)((200, 200))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert u.mean() == pytest.approx(0.5, abs=0.03)
    t = I.TruncatedNormal(stddev=1.0, seed=0)((200, 200))
    assert np.abs(t).max() <= 2.0 and t.std() == pytest.approx(0.8796, rel=0.02)
    v = I.VarianceScaling(3.0, "fan_avg", "uniform", seed=0)((100, 300))
    assert np.abs(v).max() <= math.sqrt(9 / 200)


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (2, 3, 6)])
def test_orthogonal_is_orthogonal(shape):
    w = I.Orthogonal(gain=1.5, seed=3)(shape, dtype="float64")
    flat = w.reshape(-1, shape[-1])
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, 1.5 ** 2 * np.eye(len(gram)), atol=1e-10)


def test_constant_identity_zeros_ones():
    np.testing.assert_array_equal(I.Constant([1.0, 2.0])((2, 2)), [[1, 2], [1, 2]])
    np.testing.assert_array_equal(I.Identity(2.0)((2, 3)), [[2, 0, 0], [0, 2, 0]])
    assert I.Zeros()((2,), dtype="int64").dtype == np.int64
    assert I.Ones()((2, 2)).sum() == 4.0


def test_errors():
    with pytest.raises(ValueError, match="rank >= 2"):
        I.Orthogonal()((4,))
    with pytest.raises(ValueError, match="2-D"):
        I.Identity()((2, 2, 2))
    with pytest.raises(ValueError, match="floating-point.*int32"):
        I.GlorotUniform()((2, 2), dtype="int32")
    with pytest.raises(ValueError, match="mode"):
        I.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="scale"):
        I.VarianceScaling(scale=0.0)
    with pytest.raises(ValueError, match="Unknown initializer identifier: 'glorot'"):
        I.get("glorot")


def test_get_by_name():
    names = {"zeros": I.Zeros, "ones": I.Ones, "glorot_uniform": I.GlorotUniform,
             "glorot_normal": I.GlorotNormal, "he_uniform": I.HeUniform,
             "he_normal": I.HeNormal, "lecun_uniform": I.LecunUniform,
             "lecun_normal": I.LecunNormal, "random_normal": I.RandomNormal,
             "random_uniform": I.RandomUniform, "truncated_normal": I.TruncatedNormal,
             "orthogonal": I.Orthogonal, "identity": I.Identity,
             "constant": I.Constant, "HeNormal": I.HeNormal}
    for name, cls in names.items():
        assert type(I.get(name)) is cls
    assert I.get(None) is None
    def fn(shape, dtype=None):
        return np.zeros(shape)

    assert I.get(fn) is fn


# -- Keras 3 names and the STFT kernel, against Keras -------------------------------

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
