"""The Delayed Block Proximal Gradient example (sparse logistic regression on
one-hot Adult, L1 proximal steps on the PS shards, tau the knob) runs and
lowers its objective; a short default-suite version."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.ray
@pytest.mark.timeout(180)
def test_sparse_logistic_regression_objective_drops(ray_cluster, data_dir):
    example = _load("sparse_logistic_regression_ps")
    out = example.main(taus=(0, 4), epochs=1, limit=4096,
                       path=data_dir / "adult" / "adult.data", batch_size=256)
    for tau, points in out.items():
        objs = [o for _, o in points]
        assert objs[0] == pytest.approx(np.log(2.0))  # w = 0
        assert len(objs) == 3  # 16 steps, a point every 8
        assert objs[-1] < 0.55 and objs[-1] < objs[1] < objs[0], (tau, objs)
