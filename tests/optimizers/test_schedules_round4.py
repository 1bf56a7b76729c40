"""``CosineDecayRestarts`` (SGDR) against Keras 3, eagerly and in a graph."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.optimizers import schedules
from tests.keras_oracle import keras_numpy


@pytest.mark.parametrize("kwargs", [{}, {"t_mul": 2.0, "m_mul": 0.9, "alpha": 0.1},
                                    {"t_mul": 1.0, "m_mul": 0.5},
                                    {"t_mul": 1.5, "alpha": 0.3}])
def test_equals_keras(kwargs):
    keras = keras_numpy()
    ours = schedules.CosineDecayRestarts(0.5, 7, **kwargs)
    theirs = keras.optimizers.schedules.CosineDecayRestarts(0.5, 7, **kwargs)
    steps = np.arange(0, 90, 3)
    np.testing.assert_allclose([float(ours(s)) for s in steps],
                               [float(theirs(s)) for s in steps], atol=1e-6)
    assert ours.get_config() == theirs.get_config()
    clone = schedules.deserialize(schedules.serialize(ours))
    assert clone.get_config() == ours.get_config()


def test_restarts_by_hand_and_symbolic_step():
    s = schedules.CosineDecayRestarts(1.0, first_decay_steps=10)
    assert float(s(0)) == pytest.approx(1.0)
    assert float(s(5)) == pytest.approx(0.5)
    assert float(s(10)) == pytest.approx(1.0)  # first restart
    assert float(s(20)) == pytest.approx(0.5)  # halfway through a 20-step period
    step = K.placeholder("int64", ())
    lr = s(step)
    assert K.is_symbolic(lr)
    assert float(K.Function([step], [lr])(np.int64(20))[0]) == pytest.approx(0.5)


def test_bad_first_decay_steps():
    with pytest.raises(ValueError, match="first_decay_steps=0"):
        schedules.CosineDecayRestarts(0.1, 0)
