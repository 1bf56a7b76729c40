"""The ReLU gradient fused with MaxPoolGrad and with the bias gradient.

A Conv2D -> bias -> ReLU -> MaxPooling2D block's backward pass routes the
pooled gradient ``g`` to each window's first maximum (``MaxPoolGrad``), masks
it by ``relu_out > 0`` (``ReluGrad``) and sums it over batch and space for the
bias (``SumToLike`` to ``(C,)``): three passes over a ``(N, H, W, C)`` array.
The pooled input *is* the ReLU output, so the mask is ``y > 0`` at the routed
position and the bias gradient is the sum of ``g * (y > 0)`` over the pooled
grid: one pass over x and dx (TF's grappler remaps such chains for its own
fused kernels in the same spirit).

``rewrite`` (registered with ``fusion.register_rewrite``) replaces, in a
compiled plan with fusion on, ``MaxPoolGrad(x, y, g)`` [-> ``SumToLike``
identities] -> ``ReluGrad(., x)`` by one ``MaxPoolReluGrad`` node, which also
produces a ``SumToLike(., (C,))`` of the result when the plan has one (taking
its place), and each other 4-D ``ReluGrad`` whose result has such a bias
``SumToLike`` by one ``ReluGradBias`` node (``g * (y > 0)`` and its
per-channel sum in one pass: the first conv layer's backward). The
MaxPoolReluGrad numba kernel runs for 4-D float32/float64 NumPy arrays whose
windows tile the input (strides == pool size, no padding: the Keras default);
other windows run ``conv_fast``'s MaxPoolGrad kernel, then the ReluGradBias
kernel; other arrays the numpy kernels, which compute the same values up to
the float rounding of the bias sum.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import conv_fast as _fast
from kerasflow.backend.ops import pooling as _pooling
from kerasflow.backend.registry import register_op

__all__ = []

# Below this many input elements the numpy kernels run (no compile; as fast).
MIN_SIZE = 4096

_KERNEL = '''
def pool_relu_grad(x, y, g, dx, part, ph, pw, relu):
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = y.shape[1], y.shape[2]
    zero, one = dx.dtype.type(0), dx.dtype.type(1)
    for n in prange(x.shape[0]):
        free = np.empty(c, np.bool_)
        for q in range(c):
            part[n, q] = zero
        for i in range(oh):
            for j in range(ow):
                for q in range(c):
                    free[q] = True
                for a in range(ph):
                    for b in range(pw):
                        hi, wi = i * ph + a, j * pw + b
                        # The window's first maximum (row-major taps) gets g,
                        # times the ReLU mask (as ReluGrad: g * (y > 0)); every
                        # other position 0. Windows tile x: one store each.
                        for q in range(c):
                            yv = y[n, i, j, q]
                            hit = free[q] & (x[n, hi, wi, q] == yv)
                            free[q] = free[q] & (not hit)
                            on = one if (yv > zero or not relu) else zero
                            dx[n, hi, wi, q] = g[n, i, j, q] * on if hit else zero
                for q in range(c):
                    yv = y[n, i, j, q]
                    part[n, q] += g[n, i, j, q] * (one if yv > zero else zero)
        # Rows and columns past the last whole window get no gradient.
        for hi in range(h):
            start = ow * pw if hi < oh * ph else 0
            for wi in range(start, w):
                for q in range(c):
                    dx[n, hi, wi, q] = zero
'''


def _infer(x, y, g, pool_size, strides, padding, bias):
    dx = (x.shape, g.dtype)
    return [dx, ((x.shape[-1],), g.dtype)] if bias else dx


@register_op("MaxPoolReluGrad", _infer, differentiable=False)
def _max_pool_relu_grad(xp, x, y, g, pool_size, strides, padding, bias):
    """ReluGrad(MaxPoolGrad(x, y, g), x) [and its sum to (C,)], op by op."""
    dx = _pooling._max_pool_grad_kernel(xp, x, y, g, pool_size, strides, padding)
    dx = dx * (x > 0)
    return (dx, dx.sum(axis=(0, 1, 2))) if bias else dx


def max_pool_relu_grad(x, y, g, pool_size, relu=True):
    """The fused kernel on NumPy arrays.

    Args:
        x: (N, H, W, C) float32/float64, the pooled input (a ReLU output when
            ``relu``); y: (N, H // ph, W // pw, C) its max pool; g: dL/dy.
        pool_size: (ph, pw), equal to the strides, VALID padding.
        relu: mask by ``y > 0`` (the ReLU gradient); False: plain MaxPoolGrad.

    Returns:
        (dx of x's shape, its (C,) sum over batch and space where ``relu``,
        else the sum of g over the pooled grid).

    Raises:
        ValueError: y or g not of the VALID pooled shape of x.
    """
    n, h, w, c = x.shape
    pooled = (n, h // int(pool_size[0]), w // int(pool_size[1]), c)
    if tuple(y.shape) != pooled or tuple(g.shape) != pooled:
        raise ValueError(f"max_pool_relu_grad expects y and g of shape {pooled} "
                         f"(x {tuple(x.shape)} pooled by {tuple(pool_size)}, "
                         f"VALID). Received: y.shape={tuple(y.shape)}, "
                         f"g.shape={tuple(g.shape)}.")
    pair = jit.kernels(_KERNEL, "pool_relu_grad")
    x, y, g = (a if a.flags.c_contiguous else np.ascontiguousarray(a)
               for a in (x, y, g))
    dx = np.empty(x.shape, g.dtype)
    part = np.empty((x.shape[0], x.shape[-1]), g.dtype)
    jit.launch(pair, x.size, x, y, g, dx, part, int(pool_size[0]),
               int(pool_size[1]), bool(relu))
    return dx, part.sum(axis=0)


def _usable(x, y, g):
    return (x.size >= MIN_SIZE and x.dtype in (np.float32, np.float64)
            and all(type(a) is np.ndarray and a.ndim == 4 and a.dtype == x.dtype
                    for a in (x, y, g)))


def _factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None

    pool = {k: attrs[k] for k in ("pool_size", "strides", "padding")}

    def kernel(x, y, g):
        if not _usable(x, y, g):
            return _max_pool_relu_grad(np, x, y, g, **attrs)
        if _fast.tiles(x.shape, **pool):
            dx, db = max_pool_relu_grad(x, y, g, attrs["pool_size"])
        else:  # overlapping or padded windows: the general kernel, then ReLU
            dx, db = relu_grad_bias(_fast.max_pool2d_grad(x, y, g, **pool), x)
        return (dx, db) if attrs["bias"] else dx

    return kernel


fusion.register_fused_kernel("MaxPoolReluGrad", _factory)


_RELU_BIAS = '''
def relu_grad_bias(g, y, dx, part):
    rows, c = g.shape
    per = (rows + part.shape[0] - 1) // part.shape[0]
    zero, one = dx.dtype.type(0), dx.dtype.type(1)
    for blk in prange(part.shape[0]):
        for q in range(c):
            part[blk, q] = zero
        for r in range(blk * per, min(rows, (blk + 1) * per)):
            for q in range(c):
                v = g[r, q] * (one if y[r, q] > zero else zero)
                dx[r, q] = v
                part[blk, q] += v
'''
# Row blocks of the bias sum: a fixed count, so the sum's rounding does not
# depend on the thread count.
BLOCKS = 64


@register_op("ReluGradBias", lambda g, y: [(g.shape, g.dtype),
                                           ((g.shape[-1],), g.dtype)],
             differentiable=False)
def _relu_grad_bias(xp, g, y):
    """(ReluGrad(g, y), its sum over all axes but the last), op by op."""
    dx = g * (y > 0)
    return dx, dx.sum(axis=tuple(range(dx.ndim - 1)))


def relu_grad_bias(g, y):
    """``g * (y > 0)`` and its per-channel sum in one numba pass.

    Args:
        g, y: float32/float64 NumPy arrays of one shape (..., C).

    Returns:
        (dx of g's shape, (C,) sum of dx over all other axes), g's dtype.
    """
    pair = jit.kernels(_RELU_BIAS, "relu_grad_bias")
    g2 = np.ascontiguousarray(g).reshape(-1, g.shape[-1])
    y2 = np.ascontiguousarray(y).reshape(g2.shape)
    dx = np.empty(g2.shape, g.dtype)
    part = np.empty((min(BLOCKS, max(1, g2.shape[0])), g2.shape[1]), g.dtype)
    jit.launch(pair, g.size, g2, y2, dx, part)
    return dx.reshape(g.shape), part.sum(axis=0)


def _relu_bias_factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None

    def kernel(g, y):
        if (type(g) is not np.ndarray or type(y) is not np.ndarray
                or g.shape != y.shape or g.dtype != y.dtype or g.size < MIN_SIZE
                or g.dtype not in (np.float32, np.float64)):
            return _relu_grad_bias(np, g, y)
        return relu_grad_bias(g, y)

    return kernel


fusion.register_fused_kernel("ReluGradBias", _relu_bias_factory)


# -- the plan rewrite ----------------------------------------------------------------
def _identity(node):
    """A SumToLike whose input and output have one fully equal static shape."""
    return (node.op == "SumToLike" and node.inputs[0].shape is not None
            and node.inputs[0].shape == node.outputs[0].shape)


def _bias_sum(t, users, channels):
    """The SumToLike to ``(channels,)`` of ``t``'s values (through identity
    SumToLikes), or None."""
    frontier = [t]
    while frontier:
        t = frontier.pop()
        for u in users.get(t, ()):
            if u.op != "SumToLike" or u.inputs[0] is not t:
                continue
            if _identity(u):
                frontier.append(u.outputs[0])
            elif u.outputs[0].shape == (channels,):
                return u
    return None


def rewrite(order, keep, xp):
    """``order`` with each MaxPoolGrad -> ReluGrad pair as one MaxPoolReluGrad
    (with the bias gradient), and each other 4-D ReluGrad with a bias gradient
    as one ReluGradBias."""
    users = fusion.readers(order)
    replace, drop = {}, set()
    for node in order:
        if node.op != "MaxPoolGrad" or len(node.inputs[0].shape or ()) != 4:
            continue
        x = node.inputs[0]
        t, relu_grad, path = node.outputs[0], None, []
        while t not in keep and len(users.get(t, ())) == 1:
            (u,) = users[t]
            if u.op == "ReluGrad" and u.inputs[0] is t and u.inputs[1] is x:
                relu_grad = u
                break
            if not _identity(u) or u.inputs[0] is not t:
                break
            path.append(u)
            t = u.outputs[0]
        if relu_grad is None:
            continue
        bias = _bias_sum(relu_grad.outputs[0], users, x.shape[-1])
        outputs = relu_grad.outputs + (bias.outputs if bias is not None else ())
        attrs = dict(node.attrs, bias=bias is not None)
        replace[id(relu_grad)] = fusion.MergedNode(
            "MaxPoolReluGrad", node.inputs, outputs, attrs, relu_grad)
        drop.update(id(u) for u in [node, *path])
        if bias is not None:
            drop.add(id(bias))
    for node in order:
        shape = node.outputs[0].shape if node.op == "ReluGrad" else None
        if id(node) in replace or shape is None or len(shape) != 4:
            continue
        bias = _bias_sum(node.outputs[0], users, shape[-1])
        if bias is not None and id(bias) not in drop:
            replace[id(node)] = fusion.MergedNode(
                "ReluGradBias", node.inputs, node.outputs + bias.outputs, {}, node)
            drop.add(id(bias))
    if not replace:
        return order
    return [replace.get(id(n), n) for n in order if id(n) not in drop]


fusion.register_rewrite(rewrite)
