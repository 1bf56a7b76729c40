"""The examples run and learn what they claim."""

from __future__ import annotations

import importlib.util
from pathlib import Path


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_graph_linear_regression_learns_w_near_2():
    assert 1.9 < _load("graph_linear_regression").main() < 2.1


def test_keras_linear_regression_learns_w_near_2():
    assert 1.8 < _load("linear_regression").main() < 2.2


def test_mnist_mlp_reaches_98_percent(data_dir):
    # The acceptance run itself: 10 epochs on the real MNIST files (~35 s here).
    acc = _load("mnist_mlp").main(epochs=10, data=str(data_dir / "mnist"), verbose=0)
    assert acc >= 0.98


def test_tf1_lecture_runs_unchanged_on_compat_v1(capsys):
    # The lecture's TF1 program with only its import changed: w close to 2.
    import numpy as np
    np.random.seed(0)
    w = _load("tf1_lecture").main()
    assert 1.9 < w < 2.1
    assert capsys.readouterr().out.strip() == str(np.float32(w))
