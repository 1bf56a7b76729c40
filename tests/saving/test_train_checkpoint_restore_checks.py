"""tf.train.Checkpoint.restore of a checkpoint that matches nothing (TF's
warning) or holds a value that overflows the variable's dtype (refused,
nothing assigned)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.train_checkpoint import Checkpoint
from kerasflow.utils.checkpoint import save_checkpoint


def test_a_restore_that_matches_nothing_warns(tmp_path):
    path = Checkpoint(w=K.Variable(np.ones(3, "float32"))).write(tmp_path / "a")
    other = K.Variable(np.zeros(2, "float32"))
    with pytest.warns(UserWarning, match=r"matched nothing: expected values named "
                      r"'<attribute>/<index>' for the attributes \['other'\]. "
                      r"Received: values \['w/0'\]"):
        status = Checkpoint(other=other).restore(path)
    assert np.array_equal(other.numpy(), np.zeros(2))
    with pytest.raises(AssertionError, match="w/0"):
        status.assert_consumed()


def test_a_restore_that_matches_warns_nothing(tmp_path):
    w = K.Variable(np.arange(3, dtype="float32"))
    path = Checkpoint(w=w).write(tmp_path / "a")
    w.assign(np.zeros(3, "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Checkpoint(w=w).restore(path).assert_consumed()
    assert np.array_equal(w.numpy(), [0.0, 1.0, 2.0])


def test_a_float64_value_overflowing_float32_is_refused_and_nothing_assigned(tmp_path):
    save_checkpoint(tmp_path / "big", {"a/0": np.array([1.0, 2.0]),
                                       "w/0": np.array([1e39, 1.0, 1.0])})
    a = K.Variable(np.zeros(2, "float32"))
    w = K.Variable(np.zeros(3, "float32"))
    with pytest.raises(ValueError, match=r"big'.*expects values that fit dtype "
                       r"float32 \(\|x\| <= 3.403e\+38\). Received: \|x\| up to "
                       r"1e\+39"):
        Checkpoint(a=a, w=w).restore(tmp_path / "big")
    assert np.array_equal(a.numpy(), np.zeros(2))  # nothing assigned
    assert np.array_equal(w.numpy(), np.zeros(3))
