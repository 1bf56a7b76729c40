"""Initializers: shapes, dtypes, seeding, statistics, orthogonality, configs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kerasflow import initializers as I

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
    fn = lambda shape, dtype=None: np.zeros(shape)
    assert I.get(fn) is fn
