"""Each compat test starts from a fresh TF1 default graph and seed."""

from __future__ import annotations

import pytest

import kerasflow.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    tf.set_random_seed(0)
    yield
    tf.reset_default_graph()


@pytest.fixture
def mnist_dir(data_dir):
    return data_dir / "mnist"
