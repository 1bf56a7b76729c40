"""MirroredStrategy keeps the weights on its replicas between calls: callbacks
that read the model still see current weights, a repeated ``fit`` on the same
arrays ships nothing, and a killed replica is recovered from the last commit
by replaying the logged calls -- with Dropout, the recovered run equals the
unkilled one (the random streams are committed too)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240),
              pytest.mark.usefixtures("ray_cluster")]


def _model(spe=4, dropout=0.0):
    np.random.seed(0)
    layers = [kf.layers.Dense(16, activation="tanh", input_shape=(8,))]
    if dropout:
        layers.append(kf.layers.Dropout(dropout, seed=3))
    layers.append(kf.layers.Dense(3))
    model = kf.Sequential(layers)
    model.compile(optimizer=kf.optimizers.Adam(0.02),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], steps_per_execution=spe)
    return model


def _data(n=200):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 8))
    return x, (x[:, 0] > 0).astype(int) + (x[:, 1] > 1)


class _Weights(kf.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(self.model.get_weights())


def _fit(strategy, callbacks=(), epochs=3, dropout=0.0, spe=4):
    x, y = _data()
    ctx = strategy.scope() if strategy is not None else _Null()
    with ctx:
        model = _model(spe, dropout)
        np.random.seed(5)
        h = model.fit(x, y, batch_size=20, epochs=epochs, verbose=0,
                      callbacks=list(callbacks))
    return model, h


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def _same(a, b):
    for u, v in zip(a, b):
        np.testing.assert_allclose(v, u, rtol=1e-9, atol=1e-12)


def test_callbacks_see_current_weights(float64):
    ref_cb, got_cb = _Weights(), _Weights()
    ref = _fit(None, [ref_cb])
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    got = _fit(strategy, [got_cb])
    assert len(got_cb.seen) == 3
    # every rank timed each of the 3 x 10 steps outside the allreduce
    work = strategy.step_work
    assert [len(w) for w in work] == [30, 30]
    assert all(0.0 < t < 10.0 for w in work for t in w)
    for a, b in zip(ref_cb.seen, got_cb.seen):
        _same(a, b)
    _same(ref[0].get_weights(), got[0].get_weights())
    np.testing.assert_allclose(got[1].history["loss"], ref[1].history["loss"],
                               rtol=1e-9)


def test_repeated_fit_ships_the_arrays_once(float64):
    x, y = _data()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        model = _model()
        model.fit(x, y, batch_size=20, epochs=1, verbose=0)
        shipped = strategy.data_shipments
        assert shipped[0] >= 2 and shipped[1] >= x.nbytes
        pulls = strategy.pulls
        model.fit(x, y, batch_size=20, epochs=2, verbose=0)
        assert strategy.data_shipments == shipped  # found by content
        # History only: one pull at the second epoch's metric reset, one at the end.
        assert strategy.pulls - pulls == 2
        model.fit(x + 1.0, y, batch_size=20, epochs=1, verbose=0)
        assert strategy.data_shipments[0] == shipped[0] + 1  # only x is new


class _KillOnce(kf.callbacks.Callback):
    reads_model = False  # the weights stay on the replicas meanwhile

    def __init__(self, strategy, epoch, batch, rank=1):
        super().__init__()
        self.strategy, self.at, self.rank, self.epoch = strategy, (epoch, batch), rank, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        self.on_train_batch_end(None)

    def on_train_batch_end(self, batch, logs=None):
        s = self.strategy
        if (self.epoch, batch) == self.at and not s.recoveries and s.worker_group:
            s.worker_group.kill(self.rank)


@pytest.mark.parametrize("epoch,batch,step", [(0, 7, 8), (1, 7, 18), (1, None, 10)])
def test_recovery_with_dropout_equals_unkilled_run(float64, epoch, batch, step):
    # Killed after step 8 of an epoch (K=4): the calls since the last commit
    # (the epoch's start) are replayed with the committed random streams.
    # batch None: killed at an epoch's start, after the driver reset the
    # metrics and before it pushed the reset (pushed after the replay).
    unkilled = _fit(kf.distribute.MirroredStrategy(num_replicas=2), dropout=0.3)
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    got = _fit(strategy, [_KillOnce(strategy, epoch, batch)], dropout=0.3)
    assert len(strategy.recoveries) == 1
    assert strategy.recoveries[0]["step"] == step
    assert got[1].history.pop("recoveries")
    _same(unkilled[0].get_weights(), got[0].get_weights())
    for k in unkilled[1].history:
        np.testing.assert_allclose(got[1].history[k], unkilled[1].history[k],
                                   rtol=1e-9)


def _optimizer_state(model):
    return [v.numpy() for v in model.optimizer.variables]


@pytest.mark.parametrize("replicas", [2, 3])
def test_zero_sharded_optimizer_equals_unsharded(float64, replicas):
    # ZeRO-1: each replica applies Adam to the variables it owns; the weights
    # and every optimizer slot (pulled from its owner) equal the unsharded run.
    runs = []
    for shard in (True, False):
        strategy = kf.distribute.MirroredStrategy(num_replicas=replicas)
        strategy.shard_optimizer = shard
        cb = _Weights()
        model, h = _fit(strategy, [cb], epochs=2)
        runs.append((model, h, cb))
        assert strategy.pulls > 0
    (m1, h1, c1), (m2, h2, c2) = runs
    _same(m2.get_weights(), m1.get_weights())
    _same(_optimizer_state(m2), _optimizer_state(m1))
    for a, b in zip(c1.seen, c2.seen):
        _same(a, b)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-9)


def test_zero_refuses_global_norm_clipping(float64):
    from kerasflow.strategies.zero import plan_zero
    x, y = _data()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        model = _model()
        model.compile(optimizer=kf.optimizers.Adam(0.02, global_clipnorm=0.5),
                      loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                      steps_per_execution=4)
        np.random.seed(5)
        model.fit(x, y, batch_size=20, epochs=2, verbose=0)
        assert not strategy.optimizer_sharded  # clipping reads every gradient
    ref = _model()
    ref.compile(optimizer=kf.optimizers.Adam(0.02, global_clipnorm=0.5),
                loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    np.random.seed(5)
    ref.fit(x, y, batch_size=20, epochs=2, verbose=0)
    _same(ref.get_weights(), model.get_weights())
    assert plan_zero(object(), 2, 10) is None


def test_two_models_alternate_on_one_shared_parameter_array(float64):
    # ZeRO-1 replicas keep one step's weights in the segment's shared
    # parameter array; a second model of the same shapes (same segment) must
    # not overwrite the first one's weights on the replicas.
    x, y = _data()
    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    seq = [0, 1, 0, 1]
    with strategy.scope():
        models = [_model(), _model()]
        models[1].set_weights([w * 0.5 for w in models[1].get_weights()])
        for i in seq:
            np.random.seed(5 + i)
            models[i].fit(x, y, batch_size=20, epochs=1, verbose=0)
        assert strategy.optimizer_sharded
        got = [m.get_weights() for m in models]
    refs = [_model(), _model()]
    refs[1].set_weights([w * 0.5 for w in refs[1].get_weights()])
    for i in seq:
        np.random.seed(5 + i)
        refs[i].fit(x, y, batch_size=20, epochs=1, verbose=0)
    for m, ref in zip(got, refs):
        _same(ref.get_weights(), m)


def test_zero_shard_reads_other_ranks_weights_in_place(float64):
    # One process playing both ranks over two shared halves: rank 0's update
    # lands in the step's half (no copy), rank 1's copy of that variable
    # becomes a view of it after the step and follows rank 0's next update
    # in the other half; detach() gives it back a private array.
    from kerasflow.strategies.replica import buffer_layout
    from kerasflow.strategies.zero import ZeroShard, plan_zero
    x, y = _data(40)
    models = [_model(), _model()]
    steps = [m._get_step("train", [x], [y], False) for m in models]
    size = buffer_layout(steps[0], 2)[0]
    halves = (np.zeros(size), np.zeros(size))
    shards = [ZeroShard(s, plan_zero(s, 2, size), r, halves)
              for r, s in enumerate(steps)]
    j = shards[0].plan.var_owner.index(0)  # a variable rank 0 owns
    lo = steps[0].layout.entries[j][0]
    var0, var1 = steps[0].trainable_variables[j], steps[1].trainable_variables[j]
    result = np.random.default_rng(1).standard_normal(size) * 1e-2
    g = steps[0].layout.size
    for seq in range(3):
        params = halves[seq % 2]
        before = var0.numpy()
        shards[0].apply(result, params)
        assert np.shares_memory(var0.value, params)  # written in place
        assert not np.array_equal(var0.value, before)
        buf = np.zeros(size)
        shards[1].gather(result, params, buf)
        assert np.shares_memory(var1.value, params)
        np.testing.assert_array_equal(var1.value, var0.value)
        np.testing.assert_array_equal(
            params[lo:lo + var0.value.size], var0.value.ravel())
        np.testing.assert_array_equal(buf[g:], result[g:])
    shards[1].detach()
    assert not any(np.shares_memory(var1.value, h) for h in halves)
    kept = var1.numpy()
    shards[0].apply(result, halves[1])
    np.testing.assert_array_equal(var1.value, kept)  # private again
