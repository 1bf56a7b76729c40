"""GPU replicas (``gpu``-marked: skipped without cupy and a CUDA device)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.gpu]


def test_nccl_allreduce_world_one():
    import cupy

    from kerasflow.distribute.collective.nccl import NcclAllreduce, nccl_unique_id
    comm = NcclAllreduce(0, 1, nccl_unique_id(), timeout=30)
    try:
        buf = cupy.arange(1000, dtype=cupy.float32)
        comm.allreduce(buf, "SUM")
        np.testing.assert_array_equal(cupy.asnumpy(buf), np.arange(1000))
        host = np.ones(10, np.float64)
        comm.allreduce(host, "MEAN")
        np.testing.assert_array_equal(host, np.ones(10))
    finally:
        comm.close()


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_mirrored_one_gpu_replica_equals_single_process(ray_cluster):
    import ray

    import kerasflow as kf
    if ray.cluster_resources().get("GPU", 0) < 1:
        pytest.skip("the test cluster has no GPU resource")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype("float32")
    y = (x[:, 0] > 0).astype(int)

    def run(strategy):
        np.random.seed(0)
        model = kf.Sequential([kf.layers.Dense(4, input_shape=(8,))])
        model.compile("sgd", kf.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return model.get_weights()
    ref = run(None)
    strategy = kf.distribute.MirroredStrategy(num_gpus=1)
    with strategy.scope():
        got = run(strategy)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_mirrored_gpu_replicas_reduce_through_nccl_on_the_device(ray_cluster):
    """GPU replicas use the NCCL transport by default: the replica's flat
    buffer is a cupy array, and fit with metrics equals one GPU process."""
    import ray

    import kerasflow as kf
    from kerasflow import backend as K
    if ray.cluster_resources().get("GPU", 0) < 1:
        pytest.skip("the test cluster has no GPU resource")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((96, 6)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype(int)

    def run():
        np.random.seed(1)
        model = kf.Sequential([kf.layers.Dense(8, activation="relu", input_shape=(6,)),
                               kf.layers.Dense(2)])
        model.compile("adam", kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        hist = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)
        return model.get_weights(), hist.history

    old = K.get_device()
    K.set_device("gpu")
    try:
        ref_w, ref_h = run()
    finally:
        K.set_device(old)
    strategy = kf.distribute.MirroredStrategy(devices=["/gpu:0"])
    assert strategy._transport == "nccl"
    with strategy.scope():
        got_w, got_h = run()
        kinds = strategy.worker_group.execute("collective_kind")
    assert kinds == [("NcclAllreduce", "cupy")], kinds
    for a, b in zip(ref_w, got_w):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_h["loss"], ref_h["loss"], rtol=1e-5)
    np.testing.assert_allclose(got_h["accuracy"], ref_h["accuracy"])

