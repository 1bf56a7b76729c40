"""CTC loss (Graves et al., 2006): values against enumerating every alignment
by hand, against Keras 3 (numpy backend), gradients checked numerically, and a
small model that learns to transcribe."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy


def brute_force(labels, logits, blank=0):
    """-log of the summed probability of every path that collapses to labels."""
    steps, classes = logits.shape
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        out, prev = [], None
        for c in path:
            if c != prev and c != blank:
                out.append(c)
            prev = c
        if out == list(labels):
            total += np.prod([p[t, c] for t, c in enumerate(path)])
    return -np.log(total)


def test_ctc_equals_the_sum_over_alignments():
    rng = np.random.RandomState(0)
    logits = rng.randn(4, 5, 4)
    labels = np.array([[1, 2, 0], [1, 1, 0], [3, 2, 1], [2, 0, 0]])
    label_length = np.array([2, 2, 3, 1])
    logit_length = np.array([5, 4, 5, 3])
    got = K.ctc_loss(labels, logits, label_length, logit_length)
    want = [brute_force(labels[i, :label_length[i]], logits[i, :logit_length[i]])
            for i in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ctc_with_another_blank_index():
    rng = np.random.RandomState(1)
    logits = rng.randn(1, 4, 3)
    got = K.ctc_loss(np.array([[0, 1]]), logits, np.array([2]), np.array([4]),
                     blank_index=2)
    np.testing.assert_allclose(got, [brute_force([0, 1], logits[0], blank=2)],
                               rtol=1e-10)


def test_ctc_loss_class_equals_keras():
    keras = keras_numpy()
    rng = np.random.RandomState(2)
    y_true = np.array([[1, 2, 0, 0], [3, 3, 1, 0], [2, 0, 0, 0]])
    y_pred = rng.randn(3, 7, 4).astype("float32")
    ours = kf.losses.CTC()(y_true, y_pred)
    theirs = keras.losses.CTC()(y_true, y_pred)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-4)
    np.testing.assert_allclose(kf.losses.ctc(y_true, y_pred),
                               np.asarray(keras.losses.ctc(y_true, y_pred)),
                               rtol=1e-4)


def test_ctc_gradient_checks(float64):
    rng = np.random.RandomState(3)
    labels = np.array([[1, 2, 2], [3, 1, 0]])
    lengths = (np.array([3, 2]), np.array([6, 5]))
    check_gradients(lambda z: K.ctc_loss(labels, z, *lengths), [rng.randn(2, 6, 4)])


def test_ctc_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"y_true.shape=\(2,\)"):
        kf.losses.ctc(np.array([1, 2]), np.zeros((2, 3, 4)))


def test_a_recurrent_model_learns_to_transcribe_with_ctc():
    """Each sequence shows its two symbols as runs of 3 steps: after training,
    greedy decoding of the CTC model gives the two symbols."""
    kf.utils.set_random_seed(0)
    rng = np.random.RandomState(0)
    n, steps = 256, 6
    symbols = rng.randint(1, 4, (n, 2))
    x = np.zeros((n, steps, 4), "float32")
    for i, (a, b) in enumerate(symbols):
        x[i, :3, a] = 1.0
        x[i, 3:, b] = 1.0
    model = kf.Sequential([kf.Input((steps, 4)),
                           kf.layers.GRU(16, return_sequences=True),
                           kf.layers.Dense(4)])
    model.compile(optimizer=kf.optimizers.Adam(0.02), loss=kf.losses.CTC())
    history = model.fit(x, symbols, batch_size=32, epochs=25, verbose=0).history
    assert history["loss"][-1] < 0.2 * history["loss"][0]
    best = model.predict(x[:32], verbose=0).argmax(-1)
    decoded = []
    for row in best:
        out, prev = [], None
        for c in row:
            if c != prev and c != 0:
                out.append(int(c))
            prev = c
        decoded.append(out)
    correct = sum(d == list(s) for d, s in zip(decoded, symbols[:32]))
    assert correct >= 28
