"""The fused attention ops (backend.ops.attention): forward against the
einsum/softmax graph, gradients against central differences (float64),
chunking and thread count leave the values unchanged, MultiHeadAttention with
and without the fused op, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.backend import jit
from kerasflow.backend.ops import attention
from tests.backend.gradcheck import check_gradients

SHAPES = [((3, 5, 2, 4), (3, 7, 2, 4), (3, 7, 2, 6)),     # S != T, Dv != D
          ((2, 6, 1, 3), (2, 6, 1, 3), (2, 6, 1, 3)),
          ((9, 4, 3, 2), (9, 3, 3, 2), (9, 3, 3, 5))]


def _reference(q, k, v, scale):
    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", w, v), w


def _inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.fixture
def tiny_chunks(monkeypatch):
    # One batch element per chunk: several chunks on every thread.
    monkeypatch.setattr(attention, "CHUNK_BYTES", 1)


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 2e-6)])
@pytest.mark.parametrize("shapes", SHAPES)
def test_forward_equals_einsum_softmax(shapes, dtype, tol, tiny_chunks):
    q, k, v = _inputs(shapes, dtype)
    out, weights = K.Function([], list(K.apply("FusedAttention", K.constant(q),
                                                K.constant(k), K.constant(v),
                                                scale=0.7)))()
    want, want_w = _reference(q.astype(np.float64), k.astype(np.float64),
                              v.astype(np.float64), 0.7)
    assert out.dtype == np.dtype(dtype) and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(weights, want_w, rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes", SHAPES)
def test_gradients_match_central_differences(shapes, float64, tiny_chunks):
    check_gradients(lambda q, k, v: K.fused_attention(q, k, v, 0.6),
                    _inputs(shapes, np.float64, seed=1))


def test_gradients_equal_the_einsum_graphs():
    q, k, v, g = _inputs(SHAPES[0] + ((3, 5, 2, 6),), np.float64, seed=2)
    tensors = [K.constant(a) for a in (q, k, v)]
    fused = K.fused_attention(*tensors, 0.5)
    logits = K.einsum("btnh,bsnh->bnts", tensors[0], tensors[1]) * 0.5
    plain = K.einsum("bnts,bsnh->btnh", K.softmax(logits, axis=-1), tensors[2])
    outs = []
    for y in (fused, plain):
        outs.append(K.Function([], K.gradients(K.sum(y * K.constant(g)), tensors))())
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_values_do_not_depend_on_chunks_or_threads(monkeypatch):
    q, k, v, g = _inputs(((16, 20, 2, 8),) * 4, np.float32, seed=3)
    got = []
    monkeypatch.setattr(jit, "SPREAD_MIN", 0)   # threads even at this size
    for chunk, threads in ((1 << 30, 1), (1, 1), (1, 2), (3000, 2), (1, 3)):
        monkeypatch.setattr(attention, "CHUNK_BYTES", chunk)
        monkeypatch.setattr(jit, "worker_threads", lambda n=threads: n)
        out, w = attention._fused_attention(np, q, k, v, scale=0.3)
        got.append((out, w, *attention._fused_attention_grad_kernel(
            np, q, k, v, w, g, 0.3)))
    for other in got[1:]:
        for a, b in zip(got[0], other):
            np.testing.assert_array_equal(a, b)


def _mha_model(seed=0):
    x = kf.Input((12, 8))
    y = kf.layers.MultiHeadAttention(num_heads=2, key_dim=4, seed=seed)(x, x)
    out = kf.layers.Dense(3)(kf.layers.GlobalAveragePooling1D()(y))
    model = kf.Model(x, out)
    model.compile(optimizer=kf.optimizers.Adam(1e-2),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_multi_head_attention_trains_alike_fused_and_unfused(monkeypatch):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 12, 8)).astype("float32")
    y = rng.integers(0, 3, 32)
    weights = None
    results = {}
    for fused in ("1", "0"):
        monkeypatch.setenv("KERASFLOW_FUSED_ATTENTION", fused)
        model = _mha_model()
        if weights is None:
            weights = model.get_weights()
        model.set_weights(weights)
        hist = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        results[fused] = (hist.history["loss"], model.get_weights(),
                          model.predict(x, verbose=0))
    np.testing.assert_allclose(results["1"][0], results["0"][0], rtol=1e-5)
    for a, b in zip(results["1"][1], results["0"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(results["1"][2], results["0"][2], rtol=1e-4, atol=1e-5)


def test_multi_head_attention_uses_the_fused_op_only_where_it_applies(monkeypatch):
    monkeypatch.setenv("KERASFLOW_FUSED_ATTENTION", "1")
    q = K.placeholder("float32", (None, 6, 8))

    def ops_of(layer, **kw):
        out = layer(q, q, **kw)
        out = out[0] if isinstance(out, tuple) else out
        seen, stack = set(), [out]
        while stack:
            t = stack.pop()
            if t.node.op in seen:
                continue
            seen.add(t.node.op)
            stack.extend(t.node.inputs)
        return seen

    assert "FusedAttention" in ops_of(kf.layers.MultiHeadAttention(2, 4))
    assert "FusedAttention" not in ops_of(kf.layers.MultiHeadAttention(2, 4),
                                          return_attention_scores=True)
    assert "FusedAttention" in ops_of(kf.layers.MultiHeadAttention(2, 4),
                                      use_causal_mask=True)
    assert "FusedAttention" not in ops_of(kf.layers.MultiHeadAttention(2, 4, dropout=0.2),
                                          training=True)
    assert "FusedAttention" in ops_of(kf.layers.MultiHeadAttention(2, 4, dropout=0.2),
                                      training=False)
    monkeypatch.setenv("KERASFLOW_FUSED_ATTENTION", "0")
    assert "FusedAttention" not in ops_of(kf.layers.MultiHeadAttention(2, 4))


def test_errors_name_what_was_received():
    q = K.placeholder("float32", (2, 3, 4))
    with pytest.raises(ValueError, match=r"4-D .* query of shape \(2, 3, 4\)"):
        K.fused_attention(q, q, q, 1.0)
    a = K.placeholder("float32", (2, 3, 1, 4))
    b = K.placeholder("float64", (2, 3, 1, 4))
    with pytest.raises(TypeError, match="float32, float64"):
        K.fused_attention(a, b, b, 1.0)
    with pytest.raises(TypeError, match="bool mask. Received: dtype=float32"):
        K.fused_attention(a, a, a, 1.0, mask=K.placeholder("float32", (2, 1, 3, 3)))
    y = K.fused_attention(a, a, a, 1.0)
    (g,) = K.gradients(K.sum(y), [a])
    with pytest.raises(NotImplementedError, match="KERASFLOW_FUSED_ATTENTION=0"):
        K.gradients(K.sum(g), [a])


@pytest.mark.parametrize("mask_shape", [(3, 1, 5, 7), (1, 1, 5, 7), (3, 2, 5, 7),
                                        (3, 1, 5, 1)])
def test_mask_adds_minus_1e9_where_false(mask_shape):
    q, k, v = _inputs(SHAPES[0], np.float64, seed=5)
    rng = np.random.default_rng(6)
    keep = rng.random(mask_shape) > 0.4
    keep[0, 0, 0] = False                       # one fully masked row: uniform
    got = K.Function([], [K.fused_attention(K.constant(q), K.constant(k), K.constant(v),
                                            0.7, mask=K.constant(keep))])()[0]
    logits = np.einsum("btnh,bsnh->bnts", q, k) * 0.7 + (1.0 - keep) * -1e9
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    want = np.einsum("bnts,bsnh->btnh", e / e.sum(axis=-1, keepdims=True), v)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_masked_gradients_match_central_differences(float64, tiny_chunks):
    keep = np.random.default_rng(7).random((3, 1, 5, 7)) > 0.3
    check_gradients(lambda q, k, v: K.fused_attention(q, k, v, 0.6,
                                                      mask=K.constant(keep)),
                    _inputs(SHAPES[0], np.float64, seed=8))


def test_masked_multi_head_attention_equals_the_einsum_graph(monkeypatch):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6, 8)).astype("float32")
    user_mask = rng.random((4, 6, 6)) > 0.3
    got = {}
    for fused in ("1", "0"):
        monkeypatch.setenv("KERASFLOW_FUSED_ATTENTION", fused)
        layer = kf.layers.MultiHeadAttention(2, 4, seed=1)
        layer(x, x)
        if fused == "1":
            weights = layer.get_weights()
        layer.set_weights(weights)
        q = K.constant(x)
        outs = [layer(q, q, use_causal_mask=True), layer(q, q, attention_mask=user_mask)]
        got[fused] = K.Function([], outs)()
    for a, b in zip(got["1"], got["0"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
