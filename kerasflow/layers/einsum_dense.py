"""``EinsumDense``: a dense layer whose product is any einsum of the input and
one kernel (Keras 3's ``keras.layers.EinsumDense``)."""

from __future__ import annotations

import re
import string

import numpy as np

from kerasflow import activations, initializers
from kerasflow import backend as K
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers.base import InputSpec, Layer

__all__ = ["EinsumDense"]

_FORMS = (("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", False),
          ("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)", True),
          ("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0", False))


def _split(equation):
    """(input, weight, output subscripts, left_elided) of ``equation``."""
    replaced = re.sub(r"\.\.\.", "0", equation.replace(" ", ""))
    for pattern, left in _FORMS:
        m = re.fullmatch(pattern, replaced)
        if m:
            return m.group(1), m.group(2), m.group(3), left
    raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in "
                     f"the form [X],[Y]->[Z], ...[X],[Y]->...[Z], or "
                     f"[X]...,[Y]->[Z]....")


def analyze(equation, bias_axes, input_shape, output_shape):
    """(kernel shape, bias shape or None, full output shape, explicit equation)
    for ``equation`` on inputs of ``input_shape`` (Keras 3's rules)."""
    ins, ws, outs, left = _split(equation)
    input_shape = list(input_shape)
    elided = len(input_shape) - len(ins)
    out_shape = [output_shape] if isinstance(output_shape, int) else list(
        output_shape)
    out_shape.insert(0, input_shape[0])
    if elided > 0 and left:
        out_shape[1:1] = input_shape[1:elided]  # in order (Keras reverses them)
    elif elided > 0:
        out_shape.extend(input_shape[len(input_shape) - elided:])
    if left:
        in_map = {d: i + elided - len(input_shape) for i, d in enumerate(ins)}
        out_map = {d: i + elided for i, d in enumerate(outs)}
    else:
        in_map = {d: i for i, d in enumerate(ins)}
        out_map = {d: i for i, d in enumerate(outs)}
    for d in ins:
        if d in out_map and out_shape[out_map[d]] is not None and \
                out_shape[out_map[d]] != input_shape[in_map[d]]:
            raise ValueError(
                f"Input shape and output shape do not match at shared dimension "
                f"'{d}'. Input shape is {input_shape[in_map[d]]}, and output "
                f"shape is {out_shape[out_map[d]]}.")
        if d in out_map and out_shape[out_map[d]] is None:
            out_shape[out_map[d]] = input_shape[in_map[d]]  # "None: as the input"
    for d in outs:
        if d not in ins and d not in ws:
            raise ValueError(f"Dimension '{d}' was specified in the output '{outs}' "
                             f"but has no corresponding dim in the input spec "
                             f"'{ins}' or weight spec '{ws}'.")
    kernel = []
    for d in ws:
        if d in out_map:
            kernel.append(out_shape[out_map[d]])
        elif d in in_map:
            kernel.append(input_shape[in_map[d]])
        else:
            raise ValueError(f"Weight dimension '{d}' did not have a match in "
                             f"either the input spec '{ins}' or the output spec "
                             f"'{outs}'. For this layer, the weight must be fully "
                             f"specified.")
    bias = None
    if bias_axes is not None:
        skip = elided if left else 0
        sizes = {c: out_shape[i + skip] for i, c in enumerate(outs)}
        for c in bias_axes:
            if c not in outs:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not "
                                 f"part of the output spec '{outs}'.")
        first = min(outs.find(c) for c in bias_axes)
        bias = [sizes[c] if c in bias_axes else 1 for c in outs[first:]]
        if not left:
            bias += [1] * elided
    # Spell the ellipsis out with unused letters: the backend einsum is explicit.
    spare = "".join(c for c in string.ascii_letters if c not in ins + ws + outs)
    dots = spare[:max(elided, 0)]
    if left:
        explicit = f"{dots}{ins},{ws}->{dots}{outs}"
    elif "..." in equation:
        explicit = f"{ins}{dots},{ws}->{outs}{dots}"
    else:
        explicit = f"{ins},{ws}->{outs}"
    return kernel, bias, out_shape, explicit


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)`` (Keras 3's
    ``EinsumDense``).

    Args:
        equation: ``"ab,bc->ac"``-style subscripts of the input, the kernel
            and the output; ``...`` may stand for leading (``"...b,bc->...c"``)
            or trailing (``"ab...,bc->ac..."``) input axes kept in the output.
        output_shape: int or tuple: the output's shape without the batch axis
            (and without the elided axes); ``None`` entries are taken from the
            input.
        activation: name or callable; None for linear.
        bias_axes: letters of the output that get a bias (None: no bias).
        kernel_/bias_ initializer, regularizer, constraint: as Dense's; a
            variance-scaling initializer (glorot, he, lecun) takes as fans the
            products of the kernel's input and output axes, as Keras.

    Input: float tensor of the rank the equation names. Output: float tensor
    of shape (batch, *output_shape) (with the elided axes), the input's dtype.

    Raises:
        ValueError: an equation not of those forms; output and input sizes that
            differ on a shared letter; a kernel or output letter found nowhere
            else; a bias letter not in the output.

    Example:
        >>> layer = EinsumDense("abc,cd->abd", output_shape=(None, 64),
        ...                     bias_axes="d")
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 **kwargs):
        self._w = WeightArgs(kwargs, "kernel", "bias")
        for unsupported in ("lora_rank", "lora_alpha", "quantization_config",
                            "gptq_unpacked_column_size"):
            if kwargs.pop(unsupported, None) is not None:
                raise NotImplementedError(f"EinsumDense supports no `{unsupported}`"
                                          f" here (no LoRA or quantization).")
        super().__init__(**kwargs)
        _split(equation)
        self.equation = equation
        self.partial_output_shape = (output_shape,) if isinstance(
            output_shape, int) else tuple(output_shape)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)

    def build(self, input_shape):
        kernel, bias, _, self._explicit = analyze(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        self._kernel_shape = tuple(kernel)
        if None in kernel:
            raise ValueError(f"Layer '{self.name}' needs known sizes for every "
                             f"kernel axis. Received: input_shape="
                             f"{tuple(input_shape)}, kernel shape {kernel}.")
        self.input_spec = InputSpec(ndim=len(input_shape))
        self.kernel = self.add_weight(
            "kernel", tuple(kernel), self._kernel_initial(input_shape),
            self._w.reg["kernel"], constraint=self._w.con["kernel"])
        self.bias = self._w.add(self, "bias", tuple(bias)) if bias is not None \
            else None
        self.built = True

    def _kernel_initial(self, input_shape):
        """The kernel initializer, with Keras' fans for variance scaling: the
        product of the kernel's input axes and of its output axes."""
        init = self._w.init["kernel"]
        if not isinstance(init, initializers.VarianceScaling):
            return init
        ins, ws, _, _ = _split(self.equation)
        fan_in = int(np.prod([n for c, n in zip(ws, self._kernel_shape)
                              if c in ins] or [1]))
        fan_out = int(np.prod([n for c, n in zip(ws, self._kernel_shape)
                               if c not in ins] or [1]))

        def initial(shape, dtype=None):
            # Elements are i.i.d. given the fans: draw them as a 2-D matrix.
            return np.reshape(init((fan_in, fan_out), dtype=dtype), shape)

        return initial

    def call(self, inputs):
        x = K.einsum(self._explicit, inputs, self.kernel)
        if self.bias is not None:
            x = x + self.bias
        return self.activation(x)

    def compute_output_shape(self, input_shape):
        return tuple(analyze(self.equation, self.bias_axes, input_shape,
                             self.partial_output_shape)[2])

    def get_config(self):
        return {**super().get_config(), "output_shape": self.partial_output_shape,
                "equation": self.equation,
                "activation": activations.serialize(self.activation),
                "bias_axes": self.bias_axes, **self._w.config()}
