"""Input under strategies (issue 18): ``fit(dataset)`` under Mirrored,
MultiWorkerMirrored and ParameterServer equals one process;
``experimental_distribute_dataset`` splits global batches in rank order;
``distribute_datasets_from_function`` runs ``dataset_fn`` on the replica
actors; a multi-worker dataset is read and auto-sharded on the replicas; Ray
Data is split per replica with ``streaming_split``. All on the session's real
(simulated 3-node) Ray cluster."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import test_mirrored
from test_mirrored import _assert_same, _data, _model

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.distribute.runtime.errors import ReplicaFailedError

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240),
              pytest.mark.usefixtures("ray_cluster")]

cloudpickle = pytest.importorskip("ray.cloudpickle")
# Replica actors cannot import test modules: ship their functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(test_mirrored)

X, Y, SW = _data()  # 200 rows
BATCH = 20          # 10 global batches per epoch


def _dataset(record=None):
    ds = kf.data.Dataset.from_tensor_slices((X, Y, SW))
    if record is not None:  # notes which process reads the pipeline
        ds = ds.map(lambda x, y, s: (_note(record, "pid", os.getpid()), x, y, s)[1:])
    return ds.shuffle(200, seed=7).batch(BATCH)


def _note(folder, what, value):
    with open(Path(folder) / f"{what}-{os.getpid()}", "a") as f:
        f.write(f"{value}\n")
    return value


def _noted(folder, what):
    """{pid: [values in order]} of what the processes noted."""
    return {int(p.name.split("-")[1]): p.read_text().split()
            for p in Path(folder).glob(f"{what}-*")}


def _fit(strategy, x, epochs=2, spe=None):
    with strategy.scope() if strategy else _null():
        model = _model(spe=spe)
        history = model.fit(x, epochs=epochs, verbose=0)
        pids = ([i["pid"] for i in strategy.worker_group.infos]
                if getattr(strategy, "worker_group", None) else [])
    return (model, history), pids


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


@pytest.fixture(scope="module")
def reference():
    prev = K.floatx()
    K.set_floatx("float64")
    try:
        yield _fit(None, _dataset())[0]
    finally:
        K.set_floatx(prev)


# -- fit(dataset): the driver reads, the replicas split each global batch ------------
@pytest.mark.parametrize("make", [
    lambda: kf.distribute.MirroredStrategy(num_replicas=2),
    lambda: kf.distribute.MultiWorkerMirroredStrategy(num_workers=3),
], ids=["mirrored2", "multi_worker3"])
def test_fit_dataset_equals_one_process(float64, reference, make):
    got, _ = _fit(make(), _dataset(), spe=4)
    _assert_same(reference, got)


def test_fit_dataset_parameter_server_sync_equals_one_process(float64, reference):
    strategy = kf.distribute.ParameterServerStrategy(
        num_ps=2, num_workers=2, staleness=0, steps_per_execution=4)
    (model, history), _ = _fit(strategy, _dataset())
    for a, b in zip(reference[0].get_weights(), model.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(history.history["loss"],
                               reference[1].history["loss"], rtol=1e-5)


# -- experimental_distribute_dataset -------------------------------------------------
def test_experimental_distribute_dataset_splits_in_rank_order(float64, reference):
    strategy = kf.distribute.MirroredStrategy(num_replicas=3)
    dist = strategy.experimental_distribute_dataset(_dataset())
    batches = list(_dataset())
    per_replica = list(dist)
    assert len(per_replica) == len(batches) == 10
    for whole, pr in zip(batches, per_replica):
        # tf.distribute's structure: the batch's tuple, a PerReplica per leaf
        assert isinstance(pr, tuple) and all(
            isinstance(p, kf.distribute.PerReplica) for p in pr)
        assert [len(v) for v in pr[0].values] == [6, 7, 7]  # 20 = 6 + 7 + 7
        for part, glued in zip(whole, pr):
            np.testing.assert_array_equal(np.concatenate(glued.values), part)
    with pytest.raises(TypeError, match="expects a kerasflow.data.Dataset"):
        strategy.experimental_distribute_dataset(np.zeros((4, 2)))
    # A fresh one: each pass over a dataset reshuffles (pass k uses (seed, k)).
    got, _ = _fit(strategy, strategy.experimental_distribute_dataset(_dataset()), spe=4)
    _assert_same(reference, got)
    assert strategy.worker_group is None


def test_multi_worker_replicas_read_and_shard_by_data(float64, reference, tmp_path):
    # from_tensor_slices has no file source: AUTO shards by DATA, each replica
    # reads the pipeline and keeps its rows of every global batch.
    strategy = kf.distribute.MultiWorkerMirroredStrategy(num_workers=2)
    dist = strategy.experimental_distribute_dataset(_dataset(record=tmp_path))
    got, pids = _fit(strategy, dist, spe=3)
    _assert_same(reference, got)
    readers = _noted(tmp_path, "pid")
    assert set(readers) == set(pids) and os.getpid() not in readers
    assert all(len(v) == 400 for v in readers.values())  # 2 epochs x 200 rows each


def test_multi_worker_shards_text_files_by_file(tmp_path):
    files = []
    for f in range(4):  # 4 files x 8 lines; line id = 8 f + i
        path = tmp_path / f"part{f}.csv"
        rows = [f"{8 * f + i}," + ",".join(f"{v:.3f}" for v in X[8 * f + i])
                for i in range(8)]
        path.write_text("\n".join(rows) + "\n")
        files.append(str(path))
    log = tmp_path / "log"
    log.mkdir()

    def parse(line):
        values = np.array(line.decode().split(","), dtype=np.float64)
        _note(log, "row", int(values[0]))
        return values[1:], np.int64(values[0]) % 3

    ds = kf.data.TextLineDataset(files).map(parse).batch(8)
    strategy = kf.distribute.MultiWorkerMirroredStrategy(num_workers=2)
    dist = strategy.experimental_distribute_dataset(ds)
    (model, history), pids = _fit(strategy, dist, epochs=1)
    rows = {pid: sorted(map(int, v)) for pid, v in _noted(log, "row").items()}
    assert set(rows) == set(pids)
    # Rank r reads files r and r + 2 only (every 2nd file from r).
    for rank, pid in enumerate(pids):
        assert rows[pid] == [8 * f + i for f in (rank, rank + 2) for i in range(8)]
    assert np.isfinite(history.history["loss"][0])


# -- distribute_datasets_from_function ---------------------------------------------
def _shard_fn(folder):
    def dataset_fn(ctx):
        _note(folder, "pid", os.getpid())
        _note(folder, "ctx", f"{ctx.num_input_pipelines}/{ctx.input_pipeline_id}/"
                             f"{ctx.get_per_replica_batch_size(BATCH)}")
        per = ctx.get_per_replica_batch_size(BATCH)
        lo = ctx.input_pipeline_id * per
        # This replica's contiguous share of every global batch.
        return (kf.data.Dataset.from_tensor_slices((X, Y, SW)).shuffle(200, seed=7)
                .batch(BATCH).map(lambda x, y, s: (x[lo:lo + per], y[lo:lo + per],
                                                   s[lo:lo + per])))
    return dataset_fn


def test_dataset_fn_runs_on_the_replicas_and_equals_one_process(float64, reference,
                                                                 tmp_path):
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    dist = strategy.distribute_datasets_from_function(_shard_fn(tmp_path))
    assert strategy.worker_group is None  # nothing runs before fit
    got, pids = _fit(strategy, dist, spe=4)
    _assert_same(reference, got)
    callers = _noted(tmp_path, "pid")
    assert set(callers) == set(pids) and os.getpid() not in callers
    assert all(len(v) == 1 for v in callers.values())  # once per pipeline
    contexts = {v[0] for v in _noted(tmp_path, "ctx").values()}
    assert contexts == {"2/0/10", "2/1/10"}
    # Outside the replicas (evaluate runs here) it is one pipeline of whole batches.
    model = got[0]
    assert model.evaluate(dist, verbose=0) == model.evaluate(_dataset(), verbose=0)
    assert "1/0/20" in _noted(tmp_path, "ctx")[os.getpid()]


def test_dataset_fn_infinite_with_steps_per_epoch(float64):
    # One pass runs across epochs (tf.keras): 2 epochs x 7 steps of a repeated
    # dataset continue where the last epoch stopped; same as one process.
    def dataset_fn(ctx):
        per = ctx.get_per_replica_batch_size(BATCH)
        lo = ctx.input_pipeline_id * per
        return (kf.data.Dataset.from_tensor_slices((X, Y)).batch(BATCH).repeat()
                .map(lambda x, y: (x[lo:lo + per], y[lo:lo + per])))

    def run(strategy, x):
        with strategy.scope() if strategy else _null():
            model = _model(spe=3)
            model.fit(x, epochs=2, steps_per_epoch=7, verbose=0)
        return model.get_weights()

    ref = run(None, kf.data.Dataset.from_tensor_slices((X, Y)).batch(BATCH).repeat())
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    got = run(strategy, strategy.distribute_datasets_from_function(dataset_fn))
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def test_dataset_fn_bad_input_errors():
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with pytest.raises(TypeError, match="expects a callable dataset_fn"):
        strategy.distribute_datasets_from_function([1, 2])
    with pytest.raises(TypeError, match="InputOptions"):
        strategy.distribute_datasets_from_function(lambda c: None, options="fast")
    dist = strategy.distribute_datasets_from_function(lambda ctx: np.zeros((4, 8)))
    with strategy.scope():
        model = _model()
        with pytest.raises(ReplicaFailedError,
                           match=r"Replica \d.*must return a kerasflow.data.Dataset"):
            model.fit(dist, epochs=1, verbose=0)
    with pytest.raises(TypeError, match="must return a kerasflow.data.Dataset"):
        iter(dist)  # a custom loop builds the pipelines here


def test_dataset_fn_iterated_in_a_custom_loop_gives_per_replica_batches(tmp_path):
    # TF's distributed-input guide: iterate it, pass each element to strategy.run.
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    dist = strategy.distribute_datasets_from_function(_shard_fn(tmp_path))
    first = next(iter(kf.data.Dataset.from_tensor_slices((X, Y, SW))
                      .shuffle(200, seed=7).batch(BATCH)))[0]
    per = BATCH // 2
    it = iter(dist)
    x, y, sw = next(it)
    assert isinstance(x, kf.distribute.PerReplica) and len(x.values) == 2
    np.testing.assert_array_equal(x.values[0], first[:per])
    np.testing.assert_array_equal(x.values[1], first[per:])
    assert sum(1 for _ in it) == 200 // BATCH - 1
    assert _noted(tmp_path, "ctx") == {os.getpid(): ["2/0/10", "2/1/10"]}
    strategy.close()


# -- Ray Data ---------------------------------------------------------------------
def _ray_rows(n=256):
    import ray
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 8))
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 1)
    return ray.data.from_items([{"x": x[i], "y": y[i], "id": i} for i in range(n)])


def test_fit_ray_dataset_each_replica_streams_its_own_split(tmp_path):
    ds = _ray_rows()

    def collate(batch):
        _note(tmp_path, "ids", " ".join(map(str, batch["id"].tolist())))
        return batch

    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    data = kf.data.from_ray(ds, "x", "y", batch_size=32, collate_fn=collate)
    (model, history), pids = _fit(strategy, data, epochs=3)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] * 0.8
    seen = {pid: list(map(int, v)) for pid, v in _noted(tmp_path, "ids").items()}
    assert set(seen) == set(pids) and os.getpid() not in seen
    assert all(len(v) == 3 * 128 for v in seen.values())  # equal splits, 3 epochs
    first = [set(v[:128]) for v in seen.values()]         # epoch 1 of each replica
    assert len(first[0]) == len(first[1]) == 128
    assert not first[0] & first[1] and first[0] | first[1] == set(range(256))


def test_ray_dataset_bad_input_and_one_process(tmp_path):
    ds = _ray_rows(64)
    with pytest.raises(ValueError, match=r"no column\(s\) \['label'\].*Received "
                                         r"columns: \['x', 'y', 'id'\]"):
        kf.data.from_ray(ds, "x", "label")
    model = _model()
    with pytest.raises(TypeError, match="kf.data.from_ray"):
        model.fit(ds, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="divisible by num_replicas_in_sync=3"):
        kf.data.from_ray(ds, "x", "y", batch_size=16).sources(3)
    h = model.fit(kf.data.from_ray(ds, "x", "y", batch_size=16), epochs=3, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]

    def model_fn(features, labels, mode, params):
        from kerasflow.estimators import EstimatorSpec, ModeKeys
        logits = kf.layers.Dense(3)(features["x"])
        loss = K.mean(kf.losses.SparseCategoricalCrossentropy(from_logits=True)(
            labels, logits))
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(mode, loss=loss)
        op = kf.optimizers.Adam(0.05).minimize(
            loss, global_step=kf.train.get_or_create_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=op)

    est = kf.estimators.Estimator(model_fn, model_dir=str(tmp_path / "est"))
    input_fn = lambda: kf.data.from_ray(ds, ["x"], "y", batch_size=16)  # noqa: E731
    est.train(input_fn, steps=1)
    before = est.evaluate(input_fn)["loss"]
    for _ in range(3):
        est.train(input_fn)
    assert est.evaluate(input_fn)["loss"] < before
