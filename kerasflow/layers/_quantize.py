"""int8 quantization shared by Dense and EinsumDense (Keras 3's "int8" mode).

A kernel is quantized once, per output channel: ``scale = 127 / (max|w| +
1e-7)`` over the axes the product sums over, ``w_q = clip(round(w * scale),
-127, 127)`` as int8 (Keras 3's ``abs_max_quantize``). Inputs are quantized
the same way on the fly, per row (over the axes the product sums over), and
the integer product is divided by both scales. Gradients reach the inputs
as through the de-quantized kernel ``w_q / scale`` (the straight-through
estimator of Keras 3's custom gradient); the int8 kernel gets none.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import dtype_policies

__all__ = ["abs_max_quantize", "arrange_scale", "quantize_inputs",
           "set_quantized_policy", "unarrange_scale"]

# Keras 3's ``backend.epsilon()`` default, which its quantizers bake in.
EPSILON = 1e-7


def abs_max_quantize(x, axis, value_range=(-127, 127), dtype="int8",
                     epsilon=EPSILON):
    """(quantized, scale) of array ``x`` by the absolute maximum over ``axis``
    (Keras 3's ``keras.quantizers.abs_max_quantize(..., to_numpy=True)``).

    Args:
        x: float numpy array, e.g. a (input_dim, units) kernel.
        axis: int or tuple of ints reduced for each scale.
        value_range: the integer range; values are rounded half to even and
            clipped into it.
        dtype: the quantized dtype.

    Returns:
        ``dtype`` array of ``x``'s shape, and the scale, ``x``'s dtype, with
        the reduced axes kept as size 1.
    """
    x = np.asarray(x)
    scale = np.divide(value_range[1],
                      np.add(np.max(np.abs(x), axis=axis, keepdims=True),
                             epsilon))
    q = np.clip(np.round(np.multiply(x, scale)), value_range[0],
                value_range[1]).astype(dtype)
    return q, scale.astype(x.dtype)


def quantize_inputs(x, axis, value_range=(-127, 127), epsilon=EPSILON):
    """Quantizes a float tensor per slice over ``axis`` in the graph.

    Args:
        x: float tensor (float32 or float64).
        axis: int or tuple of ints the scale is taken over.

    Returns:
        ``(q, scale)``: ``q`` holds the integers of Keras' int8 inputs in
        ``x``'s dtype (exact: |q| <= 127), with the gradient of ``x * scale``
        (straight through the rounding); ``scale`` (no gradient) has ``x``'s
        shape with the ``axis`` entries 1.
    """
    scale = K.stop_gradient(
        value_range[1] / (K.max(K.abs(x), axis=axis, keepdims=True) + epsilon))
    scaled = x * scale
    q = K.clip(K.round(scaled), value_range[0], value_range[1])
    # scaled - stop_gradient(scaled) is exactly 0: q keeps its integer value
    # and takes the gradient of scaled.
    return q + (scaled - K.stop_gradient(scaled)), scale


def arrange_scale(scale, spec, out_spec, reduced):
    """A keepdims ``scale`` of a tensor with subscripts ``spec`` laid out to
    broadcast against the einsum output ``out_spec``: the ``reduced``
    subscripts dropped, the rest in output order, 1 for output subscripts
    ``spec`` lacks (where Keras 3's EinsumDense puts its scales)."""
    kept = [c for c in spec if c not in reduced]
    axes = sorted((spec.index(c) for c in reduced), reverse=True)
    for a in axes:
        scale = K.squeeze(scale, axis=a)
    perm = sorted(range(len(kept)), key=lambda i: out_spec.index(kept[i]))
    if perm != list(range(len(kept))):
        scale = K.transpose(scale, perm)
    for i, c in enumerate(out_spec):
        if c not in kept:
            scale = K.expand_dims(scale, axis=i)
    return scale


def unarrange_scale(scale, spec, out_spec, reduced):
    """The inverse of ``arrange_scale`` on numpy arrays: a scale laid out
    against the output ``out_spec`` back in the layout of ``spec`` with the
    ``reduced`` subscripts as size-1 axes, to divide the int8 tensor by."""
    kept = [c for c in spec if c not in reduced]
    in_out = [c for c in out_spec if c in kept]
    scale = np.reshape(scale, [scale.shape[out_spec.index(c)] for c in in_out])
    scale = np.transpose(scale, [in_out.index(c) for c in kept])
    return np.reshape(scale, [1 if c in reduced else scale.shape[kept.index(c)]
                              for c in spec])


def set_quantized_policy(layer, mode):
    """Gives ``layer`` the policy "<mode>_from_<its policy>" (Keras 3) and
    drops its cached eager traces, which read the float kernel."""
    layer._dtype_policy = dtype_policies.QuantizedDTypePolicy(
        mode, layer.dtype_policy.name)
    layer._clear_eager_traces()
