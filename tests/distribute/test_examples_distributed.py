"""The distributed examples run and learn what they claim."""

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


@pytest.mark.ray
@pytest.mark.timeout(180)
def test_multi_worker_cluster_example(ray_cluster):
    # On the session's 3-node cluster: replicas on 3 nodes, equal to one process.
    acc, diff = _load("multi_worker_cluster").main(workers=3, epochs=2,
                                                   address=ray_cluster.address)
    assert acc > 0.9
    assert diff < 1e-5  # float32, 100 steps


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_mnist_mirrored_reaches_98_percent(ray_cluster, data_dir):
    acc = _load("mnist_mirrored").main(replicas=2, epochs=10,
                                       data=str(data_dir / "mnist"), verbose=0)
    assert acc >= 0.98


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_mnist_parameter_server_async_reaches_97_5_percent(ray_cluster, data_dir):
    acc = _load("mnist_parameter_server").main(modes=["async"], epochs=4,
                                               data=str(data_dir / "mnist"))
    assert acc["async"] >= 0.975


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mnist_fit_dataset_mirrored_reaches_97_percent(ray_cluster, data_dir):
    # dataset_fn runs on the 2 replicas; measured 0.980 after 5 epochs.
    acc = _load("mnist_fit_dataset_mirrored").main(replicas=2, epochs=5,
                                                   data=str(data_dir / "mnist"),
                                                   verbose=0)
    assert acc >= 0.97


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_custom_loop_mirrored_reaches_85_percent(ray_cluster, data_dir, monkeypatch):
    # strategy.run(train_step) on 2 replicas, Fashion-MNIST, 3 epochs.
    monkeypatch.setenv("KERASFLOW_DATA_DIR", str(data_dir))
    assert _load("custom_loop_mirrored").main(["--epochs", "3"]) >= 0.85
