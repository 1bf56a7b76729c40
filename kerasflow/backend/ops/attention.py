"""Scaled dot-product attention as one op and its gradient as one op.

``fused_attention(q, k, v, scale)`` computes ``softmax(scale * q k^T) v`` per
batch element and head (Vaswani et al. 2017, eq. 1) in Keras' layout: q
(B, T, H, D), k (B, S, H, D), v (B, S, H, Dv), output (B, T, H, Dv). Built
from einsums and a softmax, each step walks the whole (B, H, T, S) score
tensor through memory once more (41 MB for the keras.io transformer's batch
of 128, 200 tokens and 2 heads): the forward writes the scores, softmax
reads them and writes the weights, the combine reads those; the backward
writes and reads three more such tensors. Here the batch is cut into chunks
whose scores fit in a core's cache (``CHUNK_BYTES``) and each chunk runs all
its steps while its scores are still cached: scores by one batched GEMM
on strided views of q and k (no transposed copies), softmax in place,
weights times v written into the output's strided view. The chunks are
shared between threads (``jit.spread``: each chunk's BLAS on one thread),
which also spreads the softmax's elementwise passes, single-threaded in
numpy, over the cores. The weights are kept (one (B, H, T, S) array, as
the unfused graph keeps its softmax output) for the gradient.

Gradient (``FusedAttentionGrad``, per chunk, P the weights, dO the
output's gradient): dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P))
(the softmax's Jacobian), dQ = scale dS K, dK = scale dS^T Q; only the
weights are read back from memory. Second-order gradients through it are
not implemented (``NotImplementedError``); ``MultiHeadAttention`` uses the
op only where the unfused graph would compute the same thing (one attention
axis, no dropout on the weights, scores not returned); its masks (padding,
causal, ``attention_mask``) enter as a bool input whose False entries add
-1e9 to the logits, as Keras adds them.

Each chunk's arithmetic is the same whatever the thread count, so results
do not depend on it; values equal the einsum/softmax graph's up to float
rounding. Other array modules (cupy) run the whole batch as one chunk.
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.backend import jit
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["fused_attention", "fused_attention_enabled"]

# Scores of one chunk (batch elements x heads x T x S) stay below this: about
# half of a core's L2 here (1 MiB per core on the 2-core EPYC).
CHUNK_BYTES = 512 * 1024

def _chunks(batch, row_bytes):
    """[(start, stop)] slices of the batch whose scores fit ``CHUNK_BYTES``."""
    step = max(1, CHUNK_BYTES // max(row_bytes, 1))
    return [(i, min(i + step, batch)) for i in range(0, batch, step)]


def _parallel(xp, batch, row_bytes, work):
    """Runs ``work(start, stop)`` over the batch's chunks (``row_bytes``: one
    batch element's scores): on numpy arrays shared out by ``jit.spread``
    (threads at once, BLAS on one thread each)."""
    if xp is not np:
        work(0, batch)
        return
    spans = _chunks(batch, row_bytes)

    def run(share):
        for span in share:
            work(*span)

    jit.spread(spans, run, batch * row_bytes // 4)   # about the elements touched


def _softmax_rows(xp, s):
    """In-place softmax over the last axis (as the ``Softmax`` op rounds)."""
    s -= s.max(axis=-1, keepdims=True)
    xp.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)


def _infer(q, k, v, *mask, scale):
    if mask and mask[0].dtype != np.bool_:
        raise TypeError(f"fused_attention expects a bool mask. Received: "
                        f"dtype={mask[0].dtype}.")
    if mask and mask[0].shape is not None and len(mask[0].shape) != 4:
        raise ValueError(f"fused_attention expects a 4-D mask (batch or 1, heads or "
                         f"1, T, S). Received: shape {mask[0].shape}.")
    for name, spec in (("query", q), ("key", k), ("value", v)):
        if spec.shape is not None and len(spec.shape) != 4:
            raise ValueError(f"fused_attention expects 4-D (batch, length, heads, "
                             f"dim) tensors. Received: {name} of shape {spec.shape}.")
    if q.dtype.kind != "f" or not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"fused_attention expects float query, key and value of one "
                        f"dtype. Received: {q.dtype}, {k.dtype}, {v.dtype}.")
    out = None if q.shape is None or v.shape is None else (
        *q.shape[:3], v.shape[3])
    weights = None if q.shape is None or k.shape is None else (
        q.shape[0], q.shape[2], q.shape[1], k.shape[1])
    return [(out, q.dtype), (weights, q.dtype)]


@register_op("FusedAttention", _infer, num_outputs=2)
def _fused_attention(xp, q, k, v, *mask, scale):
    b, t, h, _ = q.shape
    s = k.shape[1]
    out = xp.empty((b, t, h, v.shape[3]), q.dtype)
    weights = xp.empty((b, h, t, s), q.dtype)
    qv, kt = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 3, 1)
    vv, ov = v.transpose(0, 2, 1, 3), out.transpose(0, 2, 1, 3)
    # Masked logits get -1e9 added, as Keras' MultiHeadAttention adds
    # (1 - mask) * -1e9 (a fully masked row comes out uniform).
    bias = None if not mask else (1.0 - mask[0].astype(q.dtype)) * q.dtype.type(-1e9)
    if bias is not None and bias.shape[0] == 1:
        bias = xp.broadcast_to(bias, (b, *bias.shape[1:]))

    def work(i, j):
        p = weights[i:j]
        xp.matmul(qv[i:j], kt[i:j], out=p)
        p *= scale
        if bias is not None:
            p += bias[i:j]
        _softmax_rows(xp, p)
        xp.matmul(p, vv[i:j], out=ov[i:j])

    _parallel(xp, b, h * t * s * q.itemsize, work)
    return out, weights


@register_gradient("FusedAttention")
def _fused_attention_grad(node, g_out, g_weights):
    if g_weights.node.op != "ZerosLike":
        raise NotImplementedError(
            "fused_attention: gradients through its attention-weights output are "
            "not implemented (it feeds the gradient only).")
    q, k, v = node.inputs[:3]
    grads = tuple(apply("FusedAttentionGrad", q, k, v, node.outputs[1], g_out,
                        **node.attrs))
    return grads + (None,) * (len(node.inputs) - 3)   # the mask: bool, none


def _grad_infer(q, k, v, weights, g, scale):
    return [(q.shape, q.dtype), (k.shape, k.dtype), (v.shape, v.dtype)]


@register_op("FusedAttentionGrad", _grad_infer, num_outputs=3)
def _fused_attention_grad_kernel(xp, q, k, v, weights, g, scale):
    b, t, h, _ = q.shape
    s = k.shape[1]
    dq, dk, dv = xp.empty_like(q), xp.empty_like(k), xp.empty_like(v)
    qv, kv = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3)
    vt, gv = v.transpose(0, 2, 3, 1), g.transpose(0, 2, 1, 3)
    dqv, dkv, dvv = (a.transpose(0, 2, 1, 3) for a in (dq, dk, dv))

    def work(i, j):
        p = weights[i:j]
        xp.matmul(p.transpose(0, 1, 3, 2), gv[i:j], out=dvv[i:j])
        dp = xp.matmul(gv[i:j], vt[i:j])
        # dS = P (dP - rowsum(dP P)), scaled: the scores were scale * q k^T.
        dp -= (dp * p).sum(axis=-1, keepdims=True)
        dp *= p
        dp *= scale
        xp.matmul(dp, kv[i:j], out=dqv[i:j])
        xp.matmul(dp.transpose(0, 1, 3, 2), qv[i:j], out=dkv[i:j])

    _parallel(xp, b, h * t * s * q.itemsize, work)
    return dq, dk, dv


@register_gradient("FusedAttentionGrad")
def _no_second_order(node, *grads):
    raise NotImplementedError(
        "Second-order gradients through fused_attention (FusedAttentionGrad) are "
        "not implemented. MultiHeadAttention and dot_product_attention build the "
        "einsum/softmax graph instead when KERASFLOW_FUSED_ATTENTION=0.")


def fused_attention(q, k, v, scale, mask=None):
    """``softmax(scale * q k^T) v`` per batch element and head, in one op
    (Vaswani et al. 2017, eq. 1; see the module docstring for how it runs).

    Args:
        q: (batch, T, heads, D) float tensor; k: (batch, S, heads, D); v:
            (batch, S, heads, Dv), all of one float dtype.
        scale: float multiplying the logits (``1 / sqrt(D)`` in Keras).
        mask: optional bool (batch or 1, heads or 1, T, S); where False the
            logit gets -1e9 added (Keras' ``MultiHeadAttention`` rule), so a
            fully masked row comes out uniform. It gets no gradient.

    Returns:
        (batch, T, heads, Dv) tensor of q's dtype.

    Raises:
        ValueError: inputs or mask not 4-D. TypeError: non-float or mixed
            dtypes, a non-bool mask.
        NotImplementedError: (on differentiating twice) second-order gradients.
    """
    extra = () if mask is None else (mask,)
    return apply("FusedAttention", q, k, v, *extra, scale=float(scale))[0]


def fused_attention_enabled() -> bool:
    """False when ``KERASFLOW_FUSED_ATTENTION=0`` (layers then build the
    einsum/softmax graph, which is differentiable to any order)."""
    return os.environ.get("KERASFLOW_FUSED_ATTENTION", "1").strip() != "0"
