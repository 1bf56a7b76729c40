"""``kf.distribute`` is the one public name of the distribution API; the
implementation packages stay out of ``import kerasflow`` (no ray)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kerasflow as kf
from kerasflow import distribute_lib


def test_import_kerasflow_loads_neither_ray_nor_the_strategies():
    code = ("import sys, kerasflow as kf; "
            "print(sorted(m for m in ('ray', 'kerasflow.strategies') "
            "if m in sys.modules)); "
            "[getattr(kf.distribute, n) for n in kf.distribute.__all__]; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["[]", "False"]


def test_one_class_per_name():
    from kerasflow.estimators.inputs import InputContext
    from kerasflow.models.train_step import StepResult
    assert kf.distribute.InputContext is InputContext is distribute_lib.InputContext
    assert StepResult is distribute_lib.StepResult
    assert kf.distribute.get_strategy() is distribute_lib.get_strategy()
    ctx = kf.distribute.InputContext(2, 1, 4)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="num_replicas_in_sync=4.*=30"):
        ctx.get_per_replica_batch_size(30)
    with pytest.raises(AttributeError, match="no attribute 'Mirrored'"):
        kf.distribute.Mirrored  # noqa: B018
