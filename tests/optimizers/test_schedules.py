"""Learning-rate schedules: hand-computed values, eagerly and in the graph;
``CosineDecayRestarts`` (SGDR) against Keras 3, eagerly and in a graph."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.optimizers import SGD, schedules
from tests.keras_oracle import keras_numpy

CASES = [
    # (schedule, [(step, expected learning rate)])
    (schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5),
     [(0, 0.1), (5, 0.1 * math.sqrt(0.5)), (10, 0.05), (20, 0.025)]),
    (schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True),
     [(0, 0.1), (9, 0.1), (10, 0.05), (15, 0.05), (20, 0.025)]),
    (schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]),
     [(0, 1.0), (10, 1.0), (11, 0.5), (20, 0.5), (21, 0.1), (1000, 0.1)]),
    (schedules.PiecewiseConstantDecay([5], [0.3, 0.2]),
     [(5, 0.3), (6, 0.2)]),
    (schedules.CosineDecay(1.0, decay_steps=100, alpha=0.1),
     [(0, 1.0), (50, 0.55), (100, 0.1), (200, 0.1)]),
    (schedules.CosineDecay(0.0, 100, warmup_target=1.0, warmup_steps=10),
     [(0, 0.0), (5, 0.5), (10, 1.0), (60, 0.5), (110, 0.0), (500, 0.0)]),
    (schedules.InverseTimeDecay(1.0, decay_steps=10, decay_rate=1.0),
     [(0, 1.0), (5, 1 / 1.5), (10, 0.5), (30, 0.25)]),
    (schedules.InverseTimeDecay(1.0, 10, 1.0, staircase=True),
     [(9, 1.0), (15, 0.5)]),
]
IDS = [f"{type(s).__name__}-{i}" for i, (s, _) in enumerate(CASES)]


@pytest.mark.parametrize("schedule,expected", CASES, ids=IDS)
def test_eager_values(schedule, expected):
    for step, lr in expected:
        assert float(schedule(step)) == pytest.approx(lr, rel=1e-6, abs=1e-7)
        assert float(schedule(np.float32(step))) == pytest.approx(lr, rel=1e-6,
                                                                  abs=1e-7)


@pytest.mark.parametrize("schedule,expected", CASES, ids=IDS)
def test_graph_values_from_a_step_tensor(schedule, expected):
    step = K.placeholder("int64", ())
    f = K.Function([step], schedule(step))
    for s, lr in expected:
        assert float(f(np.int64(s))) == pytest.approx(lr, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("schedule,expected", CASES, ids=IDS)
def test_config_round_trip(schedule, expected):
    config = schedules.serialize(schedule)
    again = schedules.deserialize(config)
    assert type(again) is type(schedule)
    assert again.get_config() == schedule.get_config()
    step, lr = expected[-1]
    assert float(again(step)) == pytest.approx(lr, rel=1e-6, abs=1e-7)


def test_optimizer_steps_follow_the_schedule_of_its_iterations():
    # d(sum(w))/dw = 1, so each SGD step lowers w by exactly that step's rate.
    schedule = schedules.PiecewiseConstantDecay([1, 3], [1.0, 0.5, 0.125])
    opt = SGD(learning_rate=schedule)
    w = K.Variable(np.zeros(2, "float32"))
    step = K.Function([], [], opt.get_updates(K.sum(w), [w]))
    drops, rates = [], []
    for _ in range(5):
        rates.append(opt.learning_rate)
        before = w.numpy()[0]
        step()
        drops.append(before - w.numpy()[0])
    assert drops == [1.0, 1.0, 0.5, 0.5, 0.125]
    assert rates == drops
    assert int(opt.iterations.numpy()) == 5


def test_errors():
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="1 shorter than values"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0, 0.5])
    with pytest.raises(ValueError, match="Unknown learning rate schedule"):
        schedules.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(TypeError, match="LearningRateSchedule"):
        schedules.serialize(0.1)


# -- CosineDecayRestarts (SGDR), against Keras 3 ------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"t_mul": 2.0, "m_mul": 0.9, "alpha": 0.1},
                                    {"t_mul": 1.0, "m_mul": 0.5},
                                    {"t_mul": 1.5, "alpha": 0.3}])
def test_cosine_decay_restarts_equals_keras(kwargs):
    keras = keras_numpy()
    ours = schedules.CosineDecayRestarts(0.5, 7, **kwargs)
    theirs = keras.optimizers.schedules.CosineDecayRestarts(0.5, 7, **kwargs)
    steps = np.arange(0, 90, 3)
    np.testing.assert_allclose([float(ours(s)) for s in steps],
                               [float(theirs(s)) for s in steps], atol=1e-6)
    assert ours.get_config() == theirs.get_config()
    clone = schedules.deserialize(schedules.serialize(ours))
    assert clone.get_config() == ours.get_config()


def test_cosine_decay_restarts_by_hand_and_symbolic_step():
    s = schedules.CosineDecayRestarts(1.0, first_decay_steps=10)
    assert float(s(0)) == pytest.approx(1.0)
    assert float(s(5)) == pytest.approx(0.5)
    assert float(s(10)) == pytest.approx(1.0)  # first restart
    assert float(s(20)) == pytest.approx(0.5)  # halfway through a 20-step period
    step = K.placeholder("int64", ())
    lr = s(step)
    assert K.is_symbolic(lr)
    assert float(K.Function([step], [lr])(np.int64(20))[0]) == pytest.approx(0.5)


def test_cosine_decay_restarts_bad_first_decay_steps():
    with pytest.raises(ValueError, match="first_decay_steps=0"):
        schedules.CosineDecayRestarts(0.1, 0)
