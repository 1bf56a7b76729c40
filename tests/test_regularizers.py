"""Regularizers: penalties eager and in a graph, gradients, names, configs."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import regularizers as R

W = np.array([[1.0, -2.0], [0.5, 0.0]], np.float32)


@pytest.mark.parametrize("reg,expected", [
    (R.L1(0.1), 0.1 * 3.5), (R.L2(0.01), 0.01 * 5.25),
    (R.L1L2(l1=0.1, l2=0.01), 0.35 + 0.0525), (R.L1L2(), 0.0)])
def test_penalty_eager_and_graph(reg, expected):
    assert float(reg(W)) == pytest.approx(expected, rel=1e-6)
    w = K.Variable(W)
    assert float(K.Function([], reg(w))()) == pytest.approx(expected, rel=1e-6)


def test_l2_gradient_is_2_l2_w():
    w = K.Variable(W)
    grad = K.Function([], K.gradients(R.L2(0.5)(w), [w])[0])()
    np.testing.assert_allclose(grad, 2 * 0.5 * W)


@pytest.mark.parametrize("reg", [R.L1(0.3), R.L2(0.2), R.L1L2(0.1, 0.2)],
                         ids=lambda r: type(r).__name__)
def test_config_round_trip(reg):
    config = reg.get_config()
    assert type(reg)(**config).get_config() == config
    again = R.get(R.serialize(reg))
    assert type(again) is type(reg) and again.get_config() == config


def test_get_names_aliases_and_errors():
    assert type(R.get("l1")) is R.L1 and R.get("l1").l1 == 0.01
    assert type(R.get("l2")) is R.L2 and R.get("l2").l2 == 0.01
    assert type(R.get("l1_l2")) is R.L1L2
    assert R.l1 is R.L1 and R.l2(0.5).l2 == 0.5 and R.l1_l2 is R.L1L2
    assert R.get(None) is None
    reg = R.L2(0.1)
    assert R.get(reg) is reg
    with pytest.raises(ValueError, match="Unknown regularizer identifier: 'l3'"):
        R.get("l3")
    with pytest.raises(ValueError, match="non-negative.*l2=-1.0"):
        R.L2(-1.0)
