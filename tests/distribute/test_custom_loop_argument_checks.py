"""strategy.run with kwargs that are not a dict, and strategy.reduce of
replicas' values of different shapes or kinds: errors naming the replicas
(numpy would broadcast (1,) against (3,) silently)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.distribute.values import PerReplica


@pytest.fixture
def strategy():
    return kf.distribute.get_strategy()


def test_run_refuses_kwargs_that_are_not_a_dict(strategy):
    with pytest.raises(TypeError, match=r"strategy.run expects kwargs as a dict of "
                                        r"keyword arguments. Received: list \[1\]"):
        strategy.run(lambda: 1.0, kwargs=[1])
    assert strategy.run(lambda a: a + 1, kwargs={"a": 1}) == 2


@pytest.mark.parametrize("values, shapes", [
    ([np.ones(2), np.ones(3)], r"replica 0 shape \(2,\), replica 1 shape \(3,\)"),
    ([np.ones(3), np.ones(1)], r"replica 0 shape \(3,\), replica 1 shape \(1,\)"),
    ([(1.0, 2.0), 1.0, (1.0, 2.0)], r"replica 0 shape \(2,\), replica 1 shape \(\)"),
])
def test_reduce_refuses_replicas_of_different_shapes(strategy, values, shapes):
    with pytest.raises(ValueError, match="strategy.reduce expects every replica's "
                                         "value to have one shape. Received: "
                                         + shapes):
        strategy.reduce("SUM", PerReplica(values), axis=None)


def test_reduce_along_an_axis_allows_that_axis_only(strategy):
    ok = strategy.reduce("MEAN", PerReplica([np.ones((2, 3)), 3 * np.ones((1, 3))]),
                         axis=0)
    np.testing.assert_allclose(ok, [5 / 3] * 3)
    with pytest.raises(ValueError, match=r"one shape apart from axis 0. Received: "
                                         r"replica 0 shape \(2, 3\), replica 1 "
                                         r"shape \(1, 4\)"):
        strategy.reduce("MEAN", PerReplica([np.ones((2, 3)), np.ones((1, 4))]),
                        axis=0)


def test_reduce_refuses_structures_per_replica(strategy):
    with pytest.raises(TypeError, match=r"expects each replica's value to be a "
                                        r"number or a numeric array. Received for "
                                        r"replica 0: dict \{'a': 1.0\}"):
        strategy.reduce("SUM", PerReplica([{"a": 1.0}, {"b": 1.0}]), axis=None)
    assert strategy.reduce("SUM", PerReplica([1.0, 2.0, 4.0]), axis=None) == 7.0
