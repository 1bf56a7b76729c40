"""The layer examples learn: short runs by default, the acceptance runs slow."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mnist_cnn_short_run_learns(data_dir):
    acc, history, _ = _load("mnist_cnn").main(
        epochs=2, data=str(data_dir / "mnist"), verbose=0, train_limit=1536,
        test_limit=1000)
    losses = history.history["loss"]
    assert losses[-1] < 0.7 * losses[0]
    assert acc >= 0.80


def test_fashion_mnist_cnn_short_run_learns(data_dir):
    acc, history, _ = _load("fashion_mnist_cnn").main(
        epochs=2, data=str(data_dir / "fashion-mnist"), verbose=0,
        train_limit=1536, test_limit=1000, momentum=0.8)
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0]
    assert acc >= 0.65


def test_mnist_lstm_short_run_learns(data_dir):
    acc, history, _ = _load("mnist_lstm").main(
        epochs=3, data=str(data_dir / "mnist"), verbose=0, train_limit=4096,
        test_limit=1000, units=64)
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0]
    assert acc >= 0.5


@pytest.mark.slow
def test_mnist_lstm_reaches_97_percent(data_dir):
    acc, _, _ = _load("mnist_lstm").main(data=str(data_dir / "mnist"), verbose=0)
    assert acc >= 0.97


@pytest.mark.slow
def test_mnist_cnn_reaches_99_percent(data_dir):
    acc, _, _ = _load("mnist_cnn").main(data=str(data_dir / "mnist"), verbose=0)
    assert acc >= 0.99


@pytest.mark.slow
def test_fashion_mnist_cnn_reaches_90_percent(data_dir):
    acc, _, _ = _load("fashion_mnist_cnn").main(data=str(data_dir / "fashion-mnist"),
                                                verbose=0)
    assert acc >= 0.90
