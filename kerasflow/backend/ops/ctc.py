"""Connectionist temporal classification loss (Graves et al., ICML 2006) as one
op: the forward (alpha) and backward (beta) recursions in log space over the
label sequence extended with blanks, vectorized over the batch.

``CTCLoss`` returns the per-sequence negative log-likelihood and, as a second
output, its gradient with respect to the logits (softmax minus the posterior
of each class at each step), which the registered gradient scales.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.array import as_numpy
from kerasflow.backend.ops.shape import reshape
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["ctc_loss"]

_NEG = -1e30  # log(0), finite so that sums stay NaN-free


def _logsumexp(a, axis):
    m = a.max(axis=axis, keepdims=True)
    m = np.where(m <= _NEG / 2, 0.0, m)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _lae(a, b):
    """log(exp(a) + exp(b)) elementwise."""
    m = np.maximum(a, b)
    return m + np.log1p(np.exp(-np.abs(a - b)))


def _ctc_infer(labels, logits, label_length, logit_length, blank):
    if logits.shape is not None and len(logits.shape) != 3:
        raise ValueError(f"ctc_loss expects logits (batch, steps, classes). "
                         f"Received: logits.shape={logits.shape}.")
    if labels.shape is not None and len(labels.shape) != 2:
        raise ValueError(f"ctc_loss expects labels (batch, max_label_length). "
                         f"Received: labels.shape={labels.shape}.")
    n = None if logits.shape is None else logits.shape[0]
    return [((n,), logits.dtype), (logits.shape, logits.dtype)]


@register_op("CTCLoss", _ctc_infer, num_outputs=2)
def _ctc(xp, labels, logits, label_length, logit_length, blank):
    z = as_numpy(logits).astype(np.float64)
    lab = as_numpy(labels).astype(np.int64)
    llen = as_numpy(label_length).astype(np.int64).reshape(-1)
    tlen = as_numpy(logit_length).astype(np.int64).reshape(-1)
    b, t_max, k = z.shape
    lp = z - _logsumexp(z, 2)[..., None]                    # log softmax
    s_max = 2 * lab.shape[1] + 1
    ext = np.full((b, s_max), blank, np.int64)             # blank, l1, blank, ...
    ext[:, 1::2] = lab
    s_len = 2 * llen + 1
    pos = np.arange(s_max)
    valid = pos[None] < s_len[:, None]
    # The skip from s-2 to s: a label different from the one two back.
    skip = np.zeros((b, s_max), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    emit = np.take_along_axis(lp, np.broadcast_to(ext[:, None, :], (b, t_max, s_max)),
                              axis=2)                       # (b, t, s)
    alpha = np.full((b, t_max, s_max), _NEG)
    alpha[:, 0, 0] = emit[:, 0, 0]
    alpha[:, 0, 1] = np.where(s_len > 1, emit[:, 0, 1], _NEG)
    for t in range(1, t_max):
        prev = alpha[:, t - 1]
        a = prev.copy()
        a[:, 1:] = _lae(a[:, 1:], prev[:, :-1])
        a[:, 2:] = np.where(skip[:, 2:], _lae(a[:, 2:], prev[:, :-2]), a[:, 2:])
        a = np.where(valid, a + emit[:, t], _NEG)
        live = (t < tlen)[:, None]
        alpha[:, t] = np.where(live, a, prev)
    last = np.clip(tlen - 1, 0, t_max - 1)
    a_end = alpha[np.arange(b), last]                       # (b, s)
    end1 = np.take_along_axis(a_end, (s_len - 1)[:, None], 1)[:, 0]
    end2 = np.where(s_len > 1, np.take_along_axis(
        a_end, np.maximum(s_len - 2, 0)[:, None], 1)[:, 0], _NEG)
    log_p = _lae(end1, end2)
    beta = np.full((b, t_max, s_max), _NEG)
    rows = np.arange(b)
    beta[rows, last, s_len - 1] = emit[rows, last, s_len - 1]
    has2 = s_len > 1
    beta[rows[has2], last[has2], (s_len - 2)[has2]] = \
        emit[rows[has2], last[has2], (s_len - 2)[has2]]
    for t in range(t_max - 2, -1, -1):
        nxt = beta[:, t + 1]
        bb = nxt.copy()
        bb[:, :-1] = _lae(bb[:, :-1], nxt[:, 1:])
        bb[:, :-2] = np.where(skip[:, 2:], _lae(bb[:, :-2], nxt[:, 2:]), bb[:, :-2])
        bb = np.where(valid, bb + emit[:, t], _NEG)
        inside = (t < last)[:, None]
        beta[:, t] = np.where(inside, bb, beta[:, t])
    # Posterior of extended position s at step t: alpha * beta / (emit * p).
    post = alpha + beta - emit - log_p[:, None, None]
    occ = np.full((b, t_max, k), _NEG)
    for s in range(s_max):
        cls = ext[:, s]
        cur = occ[rows, :, cls]
        occ[rows, :, cls] = _lae(cur, np.where(valid[:, s:s + 1], post[:, :, s],
                                               _NEG))
    grad = np.exp(lp) - np.exp(occ)
    grad *= (np.arange(t_max)[None, :] < tlen[:, None])[..., None]
    dt = np.dtype(logits.dtype)
    return xp.asarray(-log_p, dtype=dt), xp.asarray(grad, dtype=dt)


@register_gradient("CTCLoss")
def _ctc_grad(node, g_loss, _g_grad):
    grad = node.outputs[1]
    return None, grad * reshape(g_loss, (-1, 1, 1)), None, None


def ctc_loss(labels, logits, label_length, logit_length, blank_index=0):
    """Per-sequence CTC negative log-likelihood (Graves et al., 2006).

    Args:
        labels: int (batch, max_label_length); entries past ``label_length``
            are ignored.
        logits: float (batch, steps, classes), unnormalized (a softmax is
            applied inside, as ``tf.nn.ctc_loss`` and Keras' ``ops.ctc_loss``).
        label_length: int (batch,), each <= max_label_length.
        logit_length: int (batch,), each <= steps.
        blank_index: the class used as blank (Keras: 0, its ``mask_index``).

    Returns:
        float (batch,), ``-log p(labels | logits)``; differentiable in logits.

    Raises:
        ValueError: logits not of rank 3 or labels not of rank 2.
    """
    return apply("CTCLoss", labels, logits, label_length, logit_length,
                 blank=int(blank_index))[0]
