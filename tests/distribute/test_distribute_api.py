"""``kf.distribute`` is the one public name of the distribution API; the
implementation packages stay out of ``import kerasflow`` (no ray)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kerasflow as kf
from kerasflow.distribute import distribute_lib


def test_import_kerasflow_loads_neither_ray_nor_the_strategies():
    code = ("import sys, kerasflow as kf; "
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith(("
            "'kerasflow.distribute.runtime', 'kerasflow.distribute.mirrored', "
            "'kerasflow.distribute.parameter_server', 'kerasflow.distribute.tf1')))); "
            "[getattr(kf.distribute, n) for n in kf.distribute.__all__]; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["[]", "False"]


def test_one_class_per_name():
    from kerasflow.distribute import input_lib
    from kerasflow.estimators.inputs import InputContext
    from kerasflow.steps import step
    from kerasflow.steps.batch import StepResult
    assert kf.distribute.InputContext is InputContext is input_lib.InputContext
    assert StepResult is step.StepResult
    assert kf.distribute.get_strategy() is distribute_lib.get_strategy()
    ctx = kf.distribute.InputContext(2, 1, 4)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="num_replicas_in_sync=4.*=30"):
        ctx.get_per_replica_batch_size(30)
    with pytest.raises(AttributeError, match="no attribute 'Mirrored'"):
        kf.distribute.Mirrored  # noqa: B018
