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
    from kerasflow.distribute.mirrored.zero import plan_zero
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


def test_zero_pieces_equal_the_whole_update_and_are_read_in_place(float64):
    # One process playing both ranks over two shared halves. The first
    # layer's kernel crosses the cut: each rank updates its piece of it (and
    # the variables it owns) straight into the step's half; after the step
    # both ranks' variables are views of that half, equal bitwise to one
    # process applying the whole update, three steps in a row (Adam's
    # moments and step count carried); detach() gives private arrays back.
    from kerasflow.distribute.mirrored.replica import buffer_layout
    from kerasflow.distribute.mirrored.zero import ZeroShard, plan_zero
    x, y = _data(40)
    models = [_model(), _model(), _model()]
    steps = [m._get_step("train", [x], [y], False) for m in models]
    size = buffer_layout(steps[0], 2)[0]
    halves = (np.zeros(size), np.zeros(size))
    plan = plan_zero(steps[0], 2, size, call_cost=0)  # equal element counts
    assert plan.var_owner[0] == -1 and plan.parts[0] == [(0, 0, 96)]
    shards = [ZeroShard(s, plan_zero(s, 2, size, call_cost=0), r, halves)
              for r, s in enumerate(steps[:2])]
    ref, g = steps[2], steps[0].layout.size
    rng = np.random.default_rng(1)
    for seq in range(3):
        params, result = halves[seq % 2], rng.standard_normal(size) * 1e-2
        for shard in shards:
            shard.apply(result, params)
            # the update itself wrote into the shared half (no copy after it)
            assert np.shares_memory(shard.pieces[0].stand_in.value, params)
        bufs = [np.zeros(size), np.zeros(size)]
        for shard, buf in zip(shards, bufs):
            shard.gather(result, params, buf)
        ref.apply_gradients(result[:g].copy())
        for s in steps[:2]:
            for v, w in zip(s.trainable_variables, ref.trainable_variables):
                assert np.shares_memory(v.value, params)
                np.testing.assert_array_equal(v.value, w.value)
        np.testing.assert_array_equal(bufs[1][g:], result[g:])
    def moments(step):  # Adam's slots shaped like the split kernel
        weights = {id(v) for v in step.trainable_variables}
        return [v for v in step.variables if id(v) not in weights and v.shape == (8, 16)]
    slots, ref_slots = moments(steps[0]), moments(ref)
    assert len(slots) == 2  # rank 0 holds their first 96 elements (rows 0-5)
    for v, w in zip(slots, ref_slots):
        np.testing.assert_array_equal(v.value.reshape(-1)[:96], w.value.reshape(-1)[:96])
    shards[1].detach()
    var1 = steps[1].trainable_variables[0]
    assert not any(np.shares_memory(var1.value, h) for h in halves)
    kept = var1.numpy()
    shards[0].apply(result, halves[1])
    np.testing.assert_array_equal(var1.value, kept)  # private again


@pytest.mark.parametrize("replicas", [2, 3])
def test_zero_pieces_of_a_wide_kernel_equal_unsharded(float64, replicas):
    # A first kernel of 512 x 128 (65,536 elements) crosses the ZeRO cut(s):
    # the replicas apply Adam to pieces of it; weights, every slot (pulled
    # from the pieces' owners) and the losses equal the unsharded run.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((120, 512))
    y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 1)
    runs = []
    for shard in (True, False):
        strategy = kf.distribute.MirroredStrategy(num_replicas=replicas)
        strategy.shard_optimizer = shard
        with strategy.scope():
            np.random.seed(0)
            model = kf.Sequential([kf.layers.Dense(128, activation="tanh",
                                                   input_shape=(512,)),
                                   kf.layers.Dense(3)])
            model.compile(optimizer=kf.optimizers.Adam(0.01),
                          loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                          steps_per_execution=3)
            h = model.fit(x, y, batch_size=20, epochs=2, verbose=0, shuffle=False)
            plans = [e.plan for e in strategy._steps.values() if e.plan]
            if shard:
                assert strategy.optimizer_sharded
                assert any(-1 in p.var_owner for p in plans)  # applied in pieces
            runs.append((model.get_weights(), _optimizer_state(model),
                         h.history["loss"]))
    (w1, s1, l1), (w2, s2, l2) = runs
    _same(w2, w1)
    _same(s2, s1)
    np.testing.assert_allclose(l1, l2, rtol=1e-9)
