"""Conv2D + bias + ReLU as one kernel: the bias and ReLU applied as the
convolution stores its output (oneDNN's post-ops; TF's grappler remaps
Conv2D + BiasAdd + Relu to ``_FusedConv2D`` the same way).

``rewrite`` (registered with ``fusion.register_rewrite``) replaces, in a
compiled plan with fusion on, ``Relu(Add(Conv2D(x, k), b))`` with ``b`` a
``(C,)`` vector by one ``Conv2DBiasRelu`` node, when nothing else reads the
values of the convolution or of the sum (the gradient's ``SumToLike`` reads
only their shapes: they get the result as an alias of the same shape). The
Winograd path (``conv_winograd``) adds the bias and applies the ReLU in its
output transform, so the activation costs no pass of its own; the other conv
paths apply them in place in one parallel numba pass. Each element goes
through the same float operations as the unfused ops (the convolution's sum,
then ``+ b``, then the ReLU with its NaN rule), so the values are identical.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import conv as _conv
from kerasflow.backend.ops import conv_fast as _fast
from kerasflow.backend.ops import conv_winograd as _wino
from kerasflow.backend.registry import get_op, register_op

__all__ = []

_BIAS_RELU = '''
def bias_relu(y, b):
    for r in prange(y.shape[0]):
        for q in range(y.shape[1]):
            v = y[r, q] + b[q]
            y[r, q] = v if (v >= 0 or v != v) else 0
'''


def _infer(x, kernel, bias, strides, padding, dilation_rate, aliases):
    spec = get_op("Conv2D").infer(x, kernel, strides=strides, padding=padding,
                                  dilation_rate=dilation_rate)
    return [spec] * (1 + aliases) if aliases else spec


@register_op("Conv2DBiasRelu", _infer, differentiable=False)
def _conv_bias_relu(xp, x, kernel, bias, strides, padding, dilation_rate,
                    aliases):
    """relu(conv2d(x, kernel) + bias), op by op (with its shape aliases)."""
    y = _conv._conv(xp, x, kernel, strides, padding, dilation_rate) + bias
    y = xp.maximum(y, 0)
    return (y,) * (1 + aliases) if aliases else y


def conv2d_bias_relu(x, kernel, bias, strides, padding, dilation_rate):
    """The fused kernel on NumPy arrays (``conv_fast``'s paths).

    Args:
        x: (N, H, W, Cin) float32/float64; kernel: (kh, kw, Cin, Cout);
        bias: (Cout,), all of x's dtype; strides, dilation_rate: (rows, cols);
        padding: ``"VALID"``/``"SAME"``.

    Returns:
        relu(conv2d(x, kernel) + bias), (N, oh, ow, Cout), x's dtype.
    """
    if _wino.applies(kernel.shape, strides, dilation_rate, x.shape[-1]):
        x = _fast._c(x)
        out, pads = _fast._geometry(x.shape, kernel.shape, strides, padding,
                                    dilation_rate)
        return _wino.winograd_conv(x, kernel, out, pads, bias=_fast._c(bias))
    y = _fast.conv2d_forward(x, kernel, strides, padding, dilation_rate)
    y2 = y.reshape(-1, y.shape[-1])
    jit.launch(jit.kernels(_BIAS_RELU, "bias_relu"), y.size, y2, _fast._c(bias))
    return y


def _factory(xp, attrs):
    if xp is not np or jit.numba_module() is None:
        return None
    n_alias = attrs["aliases"]
    conv = {k: attrs[k] for k in ("strides", "padding", "dilation_rate")}

    def kernel(x, k, b):
        if (not _fast._usable([x, k]) or x.size < _fast.MIN_SIZE
                or type(b) is not np.ndarray or b.dtype != x.dtype
                or b.shape != (k.shape[-1],)):
            return _conv_bias_relu(np, x, k, b, aliases=n_alias, **conv)
        y = conv2d_bias_relu(x, k, b, **conv)
        return (y,) * (1 + n_alias) if n_alias else y

    return kernel


fusion.register_fused_kernel("Conv2DBiasRelu", _factory)


def rewrite(order, keep, xp):
    """``order`` with each Conv2D -> Add(bias) -> Relu as one Conv2DBiasRelu."""
    users: dict = {}
    for n in order:
        for j, t in enumerate(n.inputs):
            users.setdefault(t, []).append((n, j))
    pos = {id(n): i for i, n in enumerate(order)}
    replace, drop = {}, set()
    for node in order:
        if node.op != "Conv2D" or len(node.outputs[0].shape or ()) != 4:
            continue
        conv = node.outputs[0]
        add = _only_value_reader(conv, users, keep)
        if add is None or add.op != "Add" or add.inputs[0] is not conv:
            continue
        bias = add.inputs[1]
        if (bias.shape is None or len(bias.shape) != 1
                or bias.shape[0] != conv.shape[-1] or bias.dtype != conv.dtype):
            continue
        relu = _only_value_reader(add.outputs[0], users, keep)
        if relu is None or relu.op != "Relu":
            continue
        aliases = (conv, add.outputs[0])
        if any(pos[id(u)] <= pos[id(relu)] for a in aliases
               for u, j in users.get(a, ()) if (u.op, j) in fusion.SHAPE_ONLY):
            continue
        attrs = dict(node.attrs, aliases=2)
        replace[id(relu)] = fusion.MergedNode(
            "Conv2DBiasRelu", (*node.inputs, bias), relu.outputs + aliases, attrs,
            relu)
        drop.update((id(node), id(add)))
    if not replace:
        return order
    return [replace.get(id(n), n) for n in order if id(n) not in drop]


def _only_value_reader(t, users, keep):
    """The one node reading ``t``'s values (others read its shape), or None."""
    if t in keep:
        return None
    readers = [u for u, j in users.get(t, ())
               if (u.op, j) not in fusion.SHAPE_ONLY]
    return readers[0] if len(readers) == 1 else None


fusion.register_rewrite(rewrite)
