"""The one-process-per-worker mode under a launcher like Ray Train: a
function run by N plain Ray actors, each given its TF_CONFIG by the
launcher, trains as one job (every actor ends with one process's weights)."""

from __future__ import annotations

import json
import os
import socket

import numpy as np
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]


def _train(tf_config):
    """What each actor runs: the user's training function."""
    os.environ["TF_CONFIG"] = json.dumps(tf_config)
    import kerasflow as kf

    kf.backend.set_floatx("float64")
    rng = np.random.RandomState(0)
    x = rng.standard_normal((96, 4))
    y = (x[:, 0] > x[:, 1]).astype("int64")
    strategy = kf.distribute.MultiWorkerMirroredStrategy()
    # Each actor seeds differently: the chief's initial weights are broadcast.
    kf.utils.set_random_seed(5 + strategy.task_rank)
    with strategy.scope():
        model = kf.Sequential([kf.layers.Dense(3, activation="tanh", input_shape=(4,)),
                               kf.layers.Dense(2)])
        model.compile(kf.optimizers.SGD(0.2),
                      kf.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=24, epochs=2, shuffle=False, verbose=0)
    strategy.close()
    return type(strategy).__name__, strategy.task_rank, model.get_weights()


def test_ray_actors_with_tf_config_train_as_one_job(ray_cluster):
    import sys

    import ray

    # The actors import nothing of this test module: ship its code by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}

    @ray.remote(num_cpus=0.5)
    class Worker:  # the launcher's actor: runs the training function
        def run(self, conf):
            return _train(conf)

    actors = [Worker.remote() for _ in range(2)]
    try:
        got = ray.get([a.run.remote({"cluster": cluster,
                                     "task": {"type": "worker", "index": i}})
                       for i, a in enumerate(actors)], timeout=200)
    finally:
        for a in actors:
            ray.kill(a)
    assert [(g[0], g[1]) for g in got] == [("SpmdStrategy", 0), ("SpmdStrategy", 1)]
    for a, b in zip(got[0][2], got[1][2]):
        np.testing.assert_array_equal(a, b)
    # ... and one process on the same global batches (no TF_CONFIG).
    import kerasflow as kf

    old = kf.backend.floatx()
    try:
        kf.backend.set_floatx("float64")
        rng = np.random.RandomState(0)
        x = rng.standard_normal((96, 4))
        y = (x[:, 0] > x[:, 1]).astype("int64")
        kf.utils.set_random_seed(5)
        model = kf.Sequential([kf.layers.Dense(3, activation="tanh", input_shape=(4,)),
                               kf.layers.Dense(2)])
        model.compile(kf.optimizers.SGD(0.2),
                      kf.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=24, epochs=2, shuffle=False, verbose=0)
        for a, b in zip(model.get_weights(), got[0][2]):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    finally:
        kf.backend.set_floatx(old)
