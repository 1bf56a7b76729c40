"""MirroredStrategy and MultiWorkerMirroredStrategy on a real (simulated
3-node) Ray cluster: N replicas give the same weights and History as one
process on the global batch; a killed replica is recovered from the last
commit; bad input fails before training with a clear message."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180),
              pytest.mark.usefixtures("ray_cluster")]


def _model(seed=0, multi_output=False, spe=None):
    np.random.seed(seed)
    if multi_output:
        x = kf.Input((8,))
        h = kf.layers.Dense(12, activation="tanh",
                            kernel_regularizer=kf.regularizers.L2(1e-2))(x)
        model = kf.Model(x, [kf.layers.Dense(3)(h), kf.layers.Dense(1)(h)])
        model.compile(optimizer=kf.optimizers.Adam(0.02),
                      loss=[kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                            "mse"], loss_weights=[1.0, 0.5], metrics=[["accuracy"], []])
        return model
    model = kf.Sequential([
        kf.layers.Dense(16, activation="tanh", input_shape=(8,),
                        kernel_regularizer=kf.regularizers.L2(1e-2)),
        kf.layers.Dense(3)])
    model.compile(optimizer=kf.optimizers.Adam(0.02),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], steps_per_execution=spe)
    return model


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8))
    return x, (x[:, 0] > 0).astype(int) + (x[:, 1] > 1), rng.uniform(0.5, 2.0, n)


def _fit(strategy, epochs=2, batch_size=20, callbacks=None, spe=None):
    x, y, sw = _data()
    kw = dict(sample_weight=sw, batch_size=batch_size, epochs=epochs, shuffle=True,
              verbose=0, callbacks=callbacks)
    if strategy is None:
        model = _model()
        np.random.seed(123)  # the per-epoch shuffle
        return model, model.fit(x, y, **kw)
    with strategy.scope():
        model = _model(spe=spe)
        np.random.seed(123)
        history = model.fit(x, y, **kw)
    return model, history


@pytest.fixture(scope="module")
def reference():
    prev = K.floatx()
    K.set_floatx("float64")
    try:
        yield _fit(None)
    finally:
        K.set_floatx(prev)


def _assert_same(ref, got, rtol=1e-9, atol=1e-12):
    (m1, h1), (m2, h2) = ref, got
    for a, b in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)
    # Same metrics in the same order (layer-derived names may differ in number).
    assert len(h1.history) == len(h2.history) and "loss" in h2.history
    for k1, k2 in zip(h1.history, h2.history):
        assert re.sub(r"\d+", "", k1) == re.sub(r"\d+", "", k2)
        np.testing.assert_allclose(h2.history[k2], h1.history[k1], rtol=rtol)


@pytest.mark.parametrize("replicas", [2, 3])
def test_mirrored_equals_single_process_float64(float64, reference, replicas):
    # 200 samples / batch 20 = 10 steps per epoch, 2 epochs = 20 steps, with
    # sample weights, an L2 regularizer and shuffling; steps_per_execution
    # 16 leaves a short chunk at the end of each epoch.
    strategy = kf.distribute.MirroredStrategy(num_replicas=replicas)
    assert strategy.num_replicas_in_sync == replicas
    _assert_same(reference, _fit(strategy))
    assert strategy.worker_group is None  # leaving scope() shut the actors down


def test_mirrored_uneven_batches_and_multi_output_history(float64):
    # 3 replicas, batch 7 (7 = 2 + 2 + 3) and a last batch of 4; two outputs.
    x, y, sw = _data(60, seed=3)
    yb = x[:, 2:3]

    def run(strategy):
        ctx = strategy.scope() if strategy else _null()
        with ctx:
            model = _model(multi_output=True)
            h = model.fit(x, [y, yb], sample_weight=sw, batch_size=7, epochs=2,
                          shuffle=False, verbose=0)
        return model, h
    _assert_same(run(None), run(kf.distribute.MirroredStrategy(num_replicas=3)))


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def test_multi_worker_on_distinct_nodes(float64, reference):
    strategy = kf.distribute.MultiWorkerMirroredStrategy(num_workers=3)
    nodes = strategy.node_ids()
    assert len(set(nodes)) == 3  # STRICT_SPREAD: one replica per node
    _assert_same(reference, _fit(strategy))


def test_killed_replica_recovers_from_last_commit(float64, reference, caplog):
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)

    class Kill(kf.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 7 and not strategy.recoveries and strategy.worker_group:
                strategy.worker_group.kill(1)

    with caplog.at_level(logging.WARNING, logger="kerasflow.distribute"):
        got = _fit(strategy, callbacks=[Kill()], spe=4)
    assert len(strategy.recoveries) == 1
    # Killed after step 8 (a commit point at K=4): the chunk of steps 9-12 is
    # redone on a rebuilt group, so the run equals the unkilled one.
    assert strategy.recoveries[0]["step"] == 8
    assert "rebuilding the replica group" in caplog.text
    assert "died" in caplog.text
    # The recovery is in History too, with the step lost.
    assert got[1].history.pop("recoveries")[0]["step"] == 8
    _assert_same(reference, got)


def test_max_failures_ends_the_run(float64):
    strategy = kf.distribute.MirroredStrategy(num_replicas=2, max_failures=0)
    from kerasflow.distribute.runtime.errors import ReplicaDiedError

    class Kill(kf.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2 and strategy.worker_group:
                strategy.worker_group.kill(0)

    with pytest.raises(ReplicaDiedError, match=r"max_failures=0.*[Rr]eplica 0 died"):
        _fit(strategy, callbacks=[Kill()], spe=2)
    assert strategy.worker_group is None


def test_gpu_devices_without_gpus_soft_place_on_cpu(caplog):
    # TF's simple_estimator_example passes GPU devices; without GPUs TF's soft
    # placement (the Estimator's default session config) runs on the CPU.
    if K.gpu_available():
        pytest.skip("this machine has GPUs")
    with caplog.at_level("WARNING", "kerasflow.distribute.mirrored.mirrored"):
        strategy = kf.distribute.MirroredStrategy(["/device:GPU:0", "/device:GPU:1"])
    assert strategy.num_replicas_in_sync == 2
    assert "soft placement" in caplog.text and "no GPU" in caplog.text
    assert strategy.worker_group is None


def test_bad_input_errors():
    from kerasflow.distribute.runtime.errors import PlacementError
    with pytest.raises(PlacementError, match=r"Cannot place 64 replicas.*CPU=4"):
        kf.distribute.MirroredStrategy(num_replicas=64)
    with pytest.raises(ValueError, match=r"needs 2 GPUs on one node.*0 GPUs"):
        kf.distribute.MirroredStrategy(num_gpus=2)
    with pytest.raises(PlacementError, match=r"Cannot place 4 replicas.*3 node"):
        kf.distribute.MultiWorkerMirroredStrategy(num_workers=4)
    with pytest.raises(ValueError, match="TF_CONFIG must be valid JSON"):
        kf.distribute.MultiWorkerMirroredStrategy(cluster_resolver='{"cluster": [')
    with pytest.raises(TypeError, match="num_replicas to be an int"):
        kf.distribute.MirroredStrategy(num_replicas=2.0)
    with pytest.raises(ValueError, match="devices like"):
        kf.distribute.MirroredStrategy(devices=["/tpu:0"])
    strategy = kf.distribute.MirroredStrategy(num_replicas=3)
    x, y, _ = _data(30)
    with strategy.scope():
        model = _model()
        with pytest.raises(ValueError, match=r"over 3 replicas.*a batch of 2"):
            model.fit(x, y, batch_size=2, verbose=0)


def test_tf_config_environment(monkeypatch):
    from kerasflow.distribute.cluster_resolver import parse_tf_config
    cfg = '{"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]}, ' \
          '"task": {"type": "worker", "index": 0}}'
    assert parse_tf_config(cfg) == 3
    monkeypatch.setenv("TF_CONFIG", "not json")
    with pytest.raises(ValueError, match="TF_CONFIG must be valid JSON"):
        kf.distribute.MultiWorkerMirroredStrategy()
    with pytest.raises(ValueError, match="lists no 'worker'"):
        parse_tf_config({"cluster": {}})


def test_mirrored_generator_input_equals_single_process(float64):
    # Batches from a generator have no row indices: each chunk's arrays travel
    # through the object store instead of the cached training arrays.
    x, y, sw = _data(60, seed=5)

    def gen():
        while True:
            for i in range(0, 60, 12):
                yield x[i:i + 12], y[i:i + 12], sw[i:i + 12]

    def run(strategy):
        with strategy.scope() if strategy else _null():
            model = _model(spe=3)
            model.fit(gen(), steps_per_epoch=5, epochs=2, verbose=0)
        return model.get_weights()
    ref, got = run(None), run(kf.distribute.MirroredStrategy(num_replicas=2))
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def test_run_of_a_step_without_gradients_or_tensors_is_refused():
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with pytest.raises(ValueError, match=r"return scalar tensors.*Received: return "
                                         r"value 0 of shape None \(float\)"):
        strategy.run(lambda: 1.0)
    dist = strategy.distribute_datasets_from_function(lambda c: c)
    assert dist.num_replicas == 2  # dataset_fn runs on the replicas, in fit
    assert strategy.worker_group is None  # nothing started


def test_nccl_is_refused_for_cpu_replicas(ray_cluster):
    with pytest.raises(ValueError, match="needs GPU replicas"):
        kf.distribute.MirroredStrategy(num_replicas=1, cross_device_ops="NcclAllReduce")
