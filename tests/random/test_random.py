"""kerasflow.random: seeding, statistics of each draw, eager and symbolic use."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import random as R
from tests.keras_oracle import keras_numpy

N = 200_000


def test_keras_random_names_are_all_present():
    keras = keras_numpy()
    names = [n for n in dir(keras.random) if not n.startswith("_")]
    assert names and all(hasattr(R, n) for n in names)


def test_int_seed_repeats_and_seed_generator_advances():
    a, b = R.normal((5,), seed=3), R.normal((5,), seed=3)
    np.testing.assert_array_equal(a, b)
    gen = R.SeedGenerator(3)
    c, d = R.normal((5,), seed=gen), R.normal((5,), seed=gen)
    assert not np.allclose(c, d)
    assert gen.state.tolist() == [3, 2]
    gen2 = R.SeedGenerator(3)  # same seed, same sequence
    np.testing.assert_array_equal(R.normal((5,), seed=gen2), c)
    np.testing.assert_array_equal(R.normal((5,), seed=gen2), d)
    assert not np.allclose(R.normal((5,), seed=4), a)


def test_seed_none_differs_between_calls():
    assert not np.allclose(R.uniform((8,)), R.uniform((8,)))


@pytest.mark.parametrize("draw, mean, var", [
    (lambda s: R.normal((N,), mean=2.0, stddev=3.0, seed=s), 2.0, 9.0),
    (lambda s: R.uniform((N,), minval=-1.0, maxval=3.0, seed=s), 1.0, 16 / 12),
    # N(0, 1) cut at +-2: variance 1 - 4 phi(2) / (2 Phi(2) - 1) = 0.7737.
    (lambda s: R.truncated_normal((N,), seed=s), 0.0, 0.7737),
    (lambda s: R.randint((N,), 2, 8, seed=s), 4.5, (6 ** 2 - 1) / 12),
    (lambda s: R.gamma((N,), alpha=3.0, seed=s), 3.0, 3.0),
    (lambda s: R.beta((N,), alpha=2.0, beta=5.0, seed=s), 2 / 7, 10 / (49 * 8)),
    (lambda s: R.binomial((N,), counts=10, probabilities=0.3, seed=s), 3.0, 2.1),
])
def test_moments(draw, mean, var):
    x = np.asarray(draw(R.SeedGenerator(11)), np.float64)
    assert x.shape == (N,)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / N)
    assert abs(x.var() / var - 1) < 0.03


def test_ranges_and_dtypes():
    t = R.truncated_normal((10_000,), mean=1.0, stddev=0.5, seed=1)
    assert t.min() >= 0.0 and t.max() <= 2.0 and t.dtype == np.float32
    i = R.randint((10_000,), -3, 3, dtype="int64", seed=1)
    assert i.dtype == np.int64 and set(np.unique(i)) == set(range(-3, 3))
    assert R.uniform((3,), dtype="float64", seed=1).dtype == np.float64
    assert R.binomial((4,), 5, 0.5, seed=1).dtype == np.float32


def test_categorical_frequencies():
    logits = np.log([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]])
    s = R.categorical(logits, 50_000, seed=R.SeedGenerator(5))
    assert s.shape == (2, 50_000) and s.dtype == np.int32
    freq = np.stack([np.bincount(row, minlength=3) / 50_000 for row in s])
    np.testing.assert_allclose(freq, np.exp(logits), atol=0.01)


def test_dropout_keeps_fraction_and_scales():
    x = np.ones((400, 500), np.float32)
    y = R.dropout(x, 0.3, seed=R.SeedGenerator(2))
    assert set(np.unique(y)) == {0.0, np.float32(1 / 0.7)}
    assert abs((y == 0).mean() - 0.3) < 0.005
    rows = R.dropout(x, 0.5, noise_shape=(None, 1), seed=4)
    assert all(len(np.unique(r)) == 1 for r in rows)  # whole rows dropped


def test_dropout_matches_keras_values_where_kept():
    keras = keras_numpy()
    x = np.arange(1, 13, dtype="float32").reshape(3, 4)
    ours = R.dropout(x, 0.25, seed=0)
    theirs = np.asarray(keras.random.dropout(x, 0.25, seed=0))
    for out in (ours, theirs):
        kept = out != 0
        np.testing.assert_allclose(out[kept], x[kept] / 0.75, rtol=1e-6)


def test_shuffle_is_a_permutation_along_axis():
    x = np.arange(20).reshape(4, 5)
    y = R.shuffle(x, axis=1, seed=7)
    np.testing.assert_array_equal(np.sort(y, axis=1), x)
    assert (y[:, 0] - y[0, 0] == x[:, 0] - x[0, 0]).all()  # one permutation
    z = R.shuffle(np.arange(1000), seed=R.SeedGenerator(1))
    assert sorted(z) == list(range(1000)) and not (z == np.arange(1000)).all()


def test_symbolic_draws_anew_each_run_and_same_per_compilation():
    x = K.placeholder("float32", shape=(None, 3))
    noise = R.normal(K.shape(x), seed=R.SeedGenerator(9))
    f1, f2 = K.function([x], [x + noise]), K.function([x], [x + noise])
    z = np.zeros((2, 3), "float32")
    a, b = f1(z)[0], f1(z)[0]
    assert a.shape == (2, 3) and not np.allclose(a, b)
    np.testing.assert_array_equal(f2(z)[0], a)
    s = K.function([x], [R.shuffle(x, seed=1)])(np.arange(12.0).reshape(4, 3))[0]
    assert sorted(s[:, 0]) == [0.0, 3.0, 6.0, 9.0]
    d = K.function([x], [R.dropout(x, 0.5, seed=1)])(np.ones((50, 3), "float32"))[0]
    assert set(np.unique(d)) == {0.0, 2.0}


def test_set_random_seed_fixes_seed_none_draws():
    kf.utils.set_random_seed(5)
    a = (R.normal((4,)), R.SeedGenerator().next())
    kf.utils.set_random_seed(5)
    b = (R.normal((4,)), R.SeedGenerator().next())
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]


def test_errors():
    with pytest.raises(ValueError, match="Argument `seed` must be either"):
        R.normal((2,), seed="x")
    with pytest.raises(ValueError, match="Received: seed=1.5"):
        R.SeedGenerator(1.5)
    with pytest.raises(ValueError, match="floating point `dtype`.*int32"):
        R.uniform((2,), dtype="int32")
    with pytest.raises(ValueError, match="integer `dtype`"):
        R.randint((2,), 0, 3, dtype="float32")
    with pytest.raises(ValueError, match="maxval > minval"):
        R.randint((2,), 3, 3)
    with pytest.raises(ValueError, match="Received: rate=1.0"):
        R.dropout(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="2-D.*Received: logits.shape=\\(3,\\)"):
        R.categorical(np.zeros(3), 2)
    assert R.SeedGenerator.from_config(R.SeedGenerator(4).get_config()).state[0] == 4


class _Noise(kf.layers.Layer):
    """Adds seeded N(0, 1) noise shaped at run time (Keras 2's K.shape form)."""

    def __init__(self, seed=1, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = R.SeedGenerator(seed)

    def call(self, inputs):
        return inputs + R.normal(K.shape(inputs), seed=self.seed_generator)


def _noise_model(seed):
    x = kf.Input((4,))
    return kf.Model(x, _Noise(seed)(x))


def test_random_ops_inside_a_model_draw_per_run_and_repeat_per_seed():
    x = np.zeros((3, 4), "float32")
    model = _noise_model(1)
    first, second = model.predict(x, verbose=0), model.predict(x, verbose=0)
    assert first.shape == (3, 4) and not np.allclose(first, second)
    np.testing.assert_array_equal(_noise_model(1).predict(x, verbose=0), first)
    assert not np.allclose(_noise_model(2).predict(x, verbose=0), first)
