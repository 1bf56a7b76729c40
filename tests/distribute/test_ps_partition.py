"""ParameterServerStrategy with TF's variable partitioners: a large variable
(an embedding table) is cut by rows across the PS shards, and synchronous
training still equals one process on the global batch."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.distribute.parameter_server.partitioners import row_bounds


def test_partitioner_counts():
    fixed = kf.distribute.FixedShardsPartitioner(3)
    assert fixed((10, 4), np.float32) == [3, 1]
    assert fixed((2, 4), np.float32) == [2, 1]  # no more blocks than rows
    size = kf.distribute.MinSizePartitioner(min_shard_bytes=1024, max_shards=4)
    assert size((200, 4), np.float32) == [3, 1]  # 3200 B // 1024 B
    assert size((1000, 4), np.float32) == [4, 1]  # 15 blocks, at most 4
    assert size((8, 4), np.float32) == [1, 1]
    assert kf.distribute.MinSizePartitioner()((1 << 20, 1), np.float32) == [1, 1]
    assert row_bounds(10, 3) == [0, 4, 7, 10]
    with pytest.raises(ValueError, match="num_shards=0"):
        kf.distribute.FixedShardsPartitioner(0)
    with pytest.raises(TypeError, match="max_shards"):
        kf.distribute.MinSizePartitioner(max_shards=1.5)


def _model(opt, kind):
    np.random.seed(0)
    if kind == "embedding":
        layers = [kf.layers.Embedding(300, 8, input_length=4), kf.layers.Flatten(),
                  kf.layers.Dense(3)]
    else:  # a big Dense kernel (300 x 8) first
        layers = [kf.layers.Dense(8, activation="tanh", input_shape=(300,)),
                  kf.layers.Dense(3)]
    model = kf.Sequential(layers)
    model.compile(optimizer=opt,
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data(kind, n=160, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 300, (n, 4))
    if kind != "embedding":  # 4-hot rows
        hot = np.zeros((n, 300))
        np.put_along_axis(hot, x, 1.0, axis=1)
        return hot, (x[:, 0] % 3)
    return x, (x[:, 0] % 3)


def _fit(strategy, make_opt, kind, epochs=2):
    x, y = _data(kind)
    kw = dict(batch_size=16, epochs=epochs, shuffle=True, verbose=0)
    if strategy is None:
        model = _model(make_opt(), kind)
        np.random.seed(7)
        return model, model.fit(x, y, **kw)
    with strategy.scope():
        model = _model(make_opt(), kind)
        np.random.seed(7)
        return model, model.fit(x, y, **kw)


@pytest.mark.ray
@pytest.mark.timeout(180)
@pytest.mark.usefixtures("ray_cluster")
@pytest.mark.parametrize("name, kind, make_opt", [
    # One process updates an Embedding lazily (touched rows only, as TF1's
    # sparse apply); the shards apply dense gradients: equal for plain SGD.
    ("sgd", "embedding", lambda: kf.optimizers.SGD(0.5)),
    ("adam", "dense", lambda: kf.optimizers.Adam(0.02)),
    ("momentum", "dense", lambda: kf.optimizers.SGD(0.1, momentum=0.9)),
    # Clipped gradients take the dense path in one process too.
    ("clipnorm", "embedding", lambda: kf.optimizers.Adam(0.02, clipnorm=0.5)),
    ("global_clipnorm", "dense",
     lambda: kf.optimizers.Adam(0.02, global_clipnorm=0.5)),
])
def test_fixed_shards_partitioner_equals_single_process(float64, name, kind,
                                                        make_opt):
    # 2 epochs x 10 global batches = 20 synchronous steps.
    ref_model, ref_hist = _fit(None, make_opt, kind)
    strategy = kf.distribute.ParameterServerStrategy(
        num_ps=2, num_workers=2, staleness=0, steps_per_execution=8,
        variable_partitioner=kf.distribute.FixedShardsPartitioner(2))
    model, hist = _fit(strategy, make_opt, kind)
    plan = strategy._last_plan
    # The 300x8 table (kernel) is cut at row 150: rows 0-149 on shard 0, 150-299 on 1.
    table = [p for k in range(2) for p in plan["pieces"][k] if p[0] == 0]
    assert [(p[1], p[2]) for p in table] == [(0, 150), (150, 300)]
    assert [0 in [p[0] for p in plan["pieces"][k]] for k in range(2)] == [True, True]
    # A norm over the table's rows is not row-separable: every shard then
    # gets the whole gradient and runs the full apply.
    assert plan["separable"] == (name not in ("clipnorm", "global_clipnorm"))
    for a, b in zip(ref_model.get_weights(), model.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(hist.history["loss"], ref_hist.history["loss"],
                               rtol=1e-5)
    # The optimizer's slots came back from both shards' rows.
    for a, b in zip(ref_model.optimizer.variables, model.optimizer.variables):
        np.testing.assert_allclose(np.asarray(b.numpy()), np.asarray(a.numpy()),
                                   rtol=1e-5, atol=1e-8)


@pytest.mark.ray
@pytest.mark.timeout(180)
@pytest.mark.usefixtures("ray_cluster")
def test_partitioned_embedding_sparse_push_equals_dense_single_process(float64):
    # Workers push only the table rows their batch touched (ids + rows); the
    # shards of the row-partitioned table sum them into a dense update, which
    # for SGD equals one process's update on the same global batches.
    def make_opt():
        return kf.optimizers.SGD(0.5)

    ref_model, ref_hist = _fit(None, make_opt, "embedding")
    strategy = kf.distribute.ParameterServerStrategy(
        num_ps=2, num_workers=2, staleness=0, steps_per_execution=8,
        variable_partitioner=kf.distribute.FixedShardsPartitioner(2))
    x, y = _data("embedding")
    with strategy.scope():
        model = _model(make_opt(), "embedding")
        np.random.seed(7)
        hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=True, verbose=0)
        ps = strategy._ps
        stats = ps.wait([ps.call(s, "stats") for s in range(2)], timeout=60,
                        what="stats", ranks=[0, 1])
    push = strategy._last_plan["push"]
    assert [len(sp) for _, _, sp in push] == [1, 1]  # a table block per shard
    rows = sum(s["sparse_rows"] for s in stats)
    # 20 steps x 2 workers x 8 samples x 4 ids: at most 1280 distinct rows
    # pushed in all, where dense pushes would send 20 x 2 x 300 rows.
    assert 0 < rows <= 1280, rows
    for a, b in zip(ref_model.get_weights(), model.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(hist.history["loss"], ref_hist.history["loss"],
                               rtol=1e-5)
