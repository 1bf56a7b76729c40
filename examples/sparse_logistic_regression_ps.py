"""Sparse logistic regression under bounded delay on a parameter server: the
Delayed Block Proximal Gradient of Li et al., "Scaling Distributed Machine
Learning with the Parameter Server" (OSDI 2014, §5.1), on UCI Adult.

Every example is a set of active binary features (one-hot fields, bucketized
numbers, hashed crosses education x occupation and age x sex, a bias
feature): ``logit = mean of the weights of its active features``. The weight
vector is an ``Embedding(d, 1)`` table cut into row blocks, one per PS shard
(``FixedShardsPartitioner``: the paper's feature blocks); workers push only
the rows their batch touched (sparse push); each shard takes a gradient step
on its block followed by the L1 proximal operator
(``ProximalGradientDescent(l1_regularization_strength=...)``, as the paper's
servers do). ``staleness=tau`` is the paper's knob: a worker may start
iteration t once iterations up to t - tau - 1 are applied.

    python examples/sparse_logistic_regression_ps.py [--taus 0 1 4 8]

prints, per tau, the objective ``mean logloss + l1 * ||w||_1`` on the whole
training set against wall time (from the start of fit, actor start-up
included; one worker is made a straggler on purpose
with the test hook ``slow_workers``, as the paper's heterogeneous cluster).
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import zlib
from pathlib import Path

import numpy as np

import kerasflow as kf
from kerasflow.distribute.parameter_server.stragglers import slow_workers

__all__ = ["load_adult", "main", "objective", "run_tau"]

_CATEGORICAL = (1, 3, 4, 5, 6, 7, 8, 9, 13)  # education-num (4) as a category
_HASH_BUCKETS = 1 << 12


def _bucket(v, edges):
    return int(np.searchsorted(edges, v, side="right"))


def load_adult(path=None, limit=None):
    """``(ids, labels, num_features)``: int64 ids (n, 16) of the active
    features of each row of ``adult.data``, labels 1 for ">50K"."""
    if path is None:
        root = os.environ.get("KERASFLOW_DATA_DIR", "../shared/data")
        path = Path(root) / "adult" / "adult.data"
    vocab = {"bias": 0}
    rows, labels = [], []

    def fid(key):
        if key not in vocab:
            vocab[key] = len(vocab)
        return vocab[key]

    with open(path, newline="") as f:
        for rec in csv.reader(f, skipinitialspace=True):
            if len(rec) != 15:
                continue
            if limit is not None and len(rows) >= limit:
                break
            age, gain, loss, hours = (float(rec[i]) for i in (0, 10, 11, 12))
            ab = _bucket(age, [25, 30, 35, 40, 45, 50, 55, 60, 65])
            feats = [0] + [fid(f"c{i}={rec[i]}") for i in _CATEGORICAL]
            feats += [fid(f"age={ab}"),
                      fid(f"gain={_bucket(gain, [1, 5000, 10000])}"),
                      fid(f"loss={_bucket(loss, [1, 2000])}"),
                      fid(f"hours={_bucket(hours, [20, 35, 41, 50, 60])}")]
            rows.append(feats + [f"{rec[3]}x{rec[6]}", f"{ab}x{rec[9]}"])
            labels.append(1.0 if rec[14].startswith(">50K") else 0.0)
    base = len(vocab)
    ids = np.array([r[:-2] + [base + zlib.crc32(s.encode()) % _HASH_BUCKETS
                              for s in r[-2:]] for r in rows], np.int64)
    return ids, np.array(labels, np.float32), base + _HASH_BUCKETS


def objective(weights, ids, y, l1):
    """``mean logloss + l1 * ||w||_1`` of weight vector ``weights`` (d,)."""
    z = weights[ids].mean(axis=1)
    return float(np.mean(np.logaddexp(0.0, z) - y * z) + l1 * np.abs(weights).sum())


class _Trace(kf.callbacks.Callback):
    def __init__(self, ids, y, l1, t0):
        super().__init__()
        self.ids, self.y, self.l1, self.t0 = ids, y, l1, t0
        self.points = []

    def record(self):
        w = np.asarray(self.model.get_weights()[0])[:, 0]
        self.points.append((time.perf_counter() - self.t0,
                            objective(w, self.ids, self.y, self.l1)))

    def on_train_batch_end(self, batch, logs=None):
        if (batch + 1) % self.every == 0:
            self.record()


def run_tau(tau, ids, y, d, epochs=3, batch_size=1024, lr=20.0, l1=1e-5,
            workers=2, ps=2, delay=(0.0, 0.02), every=8):
    """Trains with ``staleness=tau``; returns ``[(seconds, objective), ...]``
    (the first point is before training) and the fraction of zero weights."""
    strategy = kf.distribute.ParameterServerStrategy(
        num_ps=ps, num_workers=workers, staleness=tau, steps_per_execution=every,
        variable_partitioner=kf.distribute.FixedShardsPartitioner(ps))
    if delay:
        slow_workers(strategy, {workers - 1: delay})
    with strategy.scope():
        model = kf.Sequential([
            kf.layers.Embedding(d, 1, input_length=ids.shape[1],
                                embeddings_initializer="zeros"),
            kf.layers.GlobalAveragePooling1D()])
        model.compile(optimizer=kf.optimizers.ProximalGradientDescent(
            lr, l1_regularization_strength=l1),
            loss=kf.losses.BinaryCrossentropy(from_logits=True))
        trace = _Trace(ids, y, l1, time.perf_counter())
        trace.every = every
        trace.points.append((0.0, objective(np.zeros(d), ids, y, l1)))  # w = 0
        model.fit(ids, y[:, None], batch_size=batch_size, epochs=epochs,
                  shuffle=True, verbose=0, callbacks=[trace])
        w = np.asarray(model.get_weights()[0])[:, 0]
    return trace.points, float(np.mean(w == 0))


def main(taus=(0, 1, 4, 8), epochs=3, limit=None, path=None, **kwargs):
    """Runs every tau and prints objective vs wall time; returns
    ``{tau: points}``."""
    ids, y, d = load_adult(path, limit)
    print(f"Adult: {len(y)} rows, {d} binary features ({ids.shape[1]} active "
          f"per row), positives {y.mean():.3f}")
    out = {}
    for tau in taus:
        np.random.seed(0)
        points, sparsity = run_tau(tau, ids, y, d, epochs=epochs, **kwargs)
        out[tau] = points
        trail = "  ".join(f"{t:5.1f}s {o:.4f}" for t, o in points)
        print(f"tau={tau}: {trail}  (zero weights {sparsity:.0%})")
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--taus", type=int, nargs="+", default=[0, 1, 4, 8])
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    main(a.taus, a.epochs)
