"""A model trained with fusion on ends where the unfused model ends (real MNIST)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.backend import fusion

pytest.importorskip("numba")


def _train(fused, x, y, xt, yt):
    fusion.set_fusion(fused)
    try:
        np.random.seed(0)
        kf.backend.set_random_seed(0)
        model = kf.Sequential([
            kf.layers.Dense(64, activation="relu", input_shape=(784,)),
            kf.layers.Dense(64, activation="sigmoid"),
            kf.layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer=kf.optimizers.Adam(2e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        hist = model.fit(x, y, batch_size=128, epochs=3, verbose=0, shuffle=True)
        acc = model.evaluate(xt, yt, batch_size=1000, verbose=0)[1]
        return hist.history["loss"], model.get_weights(), acc
    finally:
        fusion.set_fusion(None)


def test_mlp_trained_with_fusion_matches_unfused(data_dir):
    (x, y), (xt, yt) = kf.datasets.mnist.load_data(path=data_dir / "mnist")
    x = x[:3000].reshape(-1, 784).astype("float32") / 255.0
    xt = xt[:1000].reshape(-1, 784).astype("float32") / 255.0
    y, yt = y[:3000], yt[:1000]
    loss_on, w_on, acc_on = _train(True, x, y, xt, yt)
    loss_off, w_off, acc_off = _train(False, x, y, xt, yt)
    # float32 rounding differences (exp/tanh by an ulp) compound over 72 steps
    np.testing.assert_allclose(loss_on, loss_off, rtol=1e-4)
    for a, b in zip(w_on, w_off):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    assert abs(acc_on - acc_off) <= 0.005
    assert acc_on > 0.8
