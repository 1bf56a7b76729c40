"""``EinsumDense``: a dense layer whose product is any einsum of the input and
one kernel (Keras 3's ``keras.layers.EinsumDense``)."""

from __future__ import annotations

import re
import string

import numpy as np

from kerasflow import activations, initializers
from kerasflow import backend as K
from kerasflow.layers import _quantize
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers.base import InputSpec, Layer
from kerasflow.layers.core import (
    _add_lora_weights,
    _check_lora,
    _effective_kernel,
    _lora_reset,
    _lora_weights,
    _save_kernel_slots,
    _stored_kernel_variables,
)

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
        lora_rank, lora_alpha: ``enable_lora(lora_rank, lora_alpha)`` at
            build, as Keras.

    Input: float tensor of the rank the equation names. Output: float tensor
    of shape (batch, *output_shape) (with the elided axes), the compute dtype.

    After ``quantize("int8")`` the kernel is int8 and ``kernel_scale`` holds
    one scale per kernel entry of the output's subscripts, shaped to broadcast
    against the output (1 for output subscripts the kernel lacks); after
    ``enable_lora(rank)``, ``lora_kernel_a`` has the kernel's shape with its
    last axis ``rank`` and ``lora_kernel_b`` is (rank, last kernel axis), as
    Keras 3's ``EinsumDense``.

    Raises:
        ValueError: an equation not of those forms; output and input sizes that
            differ on a shared letter; a kernel or output letter found nowhere
            else; a bias letter not in the output.
        NotImplementedError: a ``quantization_config`` or
            ``gptq_unpacked_column_size``.

    Example:
        >>> layer = EinsumDense("abc,cd->abd", output_shape=(None, 64),
        ...                     bias_axes="d")
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 lora_rank=None, lora_alpha=None, **kwargs):
        self._w = WeightArgs(kwargs, "kernel", "bias")
        for unsupported in ("quantization_config", "gptq_unpacked_column_size"):
            if kwargs.pop(unsupported, None) is not None:
                raise NotImplementedError(
                    f"EinsumDense quantizes with Keras' default int8 "
                    f"quantizers only: no `{unsupported}`.")
        super().__init__(**kwargs)
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else lora_rank
        self.lora_enabled = False
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
        if self.quantization_mode == "int8":  # rebuilt from a quantized config
            self._int8_build()
        else:
            self._kernel = self.add_weight(
                "kernel", tuple(kernel), self._kernel_initial(input_shape),
                self._w.reg["kernel"], constraint=self._w.con["kernel"])
        self.bias = self._w.add(self, "bias", tuple(bias)) if bias is not None \
            else None
        self.built = True
        if self.lora_rank and not self.lora_enabled:
            self.enable_lora(self.lora_rank, lora_alpha=self.lora_alpha)

    @property
    def kernel_regularizer(self):
        """The kernel's regularizer (LoRA's A and B get it too), or None."""
        return self._w.reg["kernel"]

    @property
    def kernel_constraint(self):
        """The kernel's constraint, or None (LoRA refuses one)."""
        return self._w.con["kernel"]

    @property
    def kernel(self):
        """The kernel of the einsum: the Variable; with LoRA on, the sum with
        ``lora_kernel_a @ lora_kernel_b * lora_alpha / rank`` in the compute
        dtype (a graph tensor); the int8 Variable once quantized.

        Raises:
            AttributeError: the layer is not built.
        """
        return _effective_kernel(self)

    @kernel.setter
    def kernel(self, value):
        self._kernel = value

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
        if self.quantization_mode == "int8":
            x = self._int8_call(inputs)
        else:
            x = K.einsum(self._explicit, inputs, self.kernel)
        if self.bias is not None:
            x = x + self.bias
        return self.activation(x)

    # -- LoRA ---------------------------------------------------------------------
    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Freezes the kernel and trains a low-rank update of it (LoRA, Hu et
        al., ICLR 2022; Keras 3's ``EinsumDense.enable_lora``): float32
        ``lora_kernel_a`` of the kernel's shape with its last axis ``rank``
        and ``lora_kernel_b`` (rank, last kernel axis); the kernel read is
        ``kernel + a @ b * lora_alpha / rank``.

        Raises:
            ValueError: a kernel constraint, a layer not built, or LoRA already
                enabled (Keras' messages).
        """
        _check_lora(self)
        shape = tuple(self._kernel.shape)
        _add_lora_weights(self, shape[:-1] + (rank,), (rank, shape[-1]),
                          a_initializer, b_initializer)
        self.lora_rank = rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else rank

    # -- int8 quantization ----------------------------------------------------------
    def _subscripts(self):
        """(input, kernel, output subscripts, ellipses spelled out), and the
        input and kernel subscripts the einsum sums over."""
        ins, rest = self._explicit.split(",")
        ws, outs = rest.split("->")
        return ins, ws, outs, [c for c in ins if c not in outs], \
            [c for c in ws if c not in outs]

    def quantize(self, mode=None, type_check=True, config=None):
        """Quantizes the kernel to int8 (Keras 3's
        ``EinsumDense.quantize("int8")``): one scale ``127 / (max|w| +
        1e-7)`` over the kernel axes the einsum sums over, per entry of the
        others; inputs are quantized the same way over their summed axes in
        ``call``. The policy becomes "int8_from_<policy>".

        Raises:
            ValueError: an unknown mode, naming the supported ones; a layer
                not built or already quantized; a float16 compute dtype.
            NotImplementedError: a Keras mode other than "int8", naming it;
                a subclass with ``type_check``; a ``config``.
        """
        self._check_quantize_args(mode, config)
        if type_check and type(self) is not EinsumDense:
            raise self._not_implemented_error(self.quantize)
        _, ws, outs, _, reduced = self._subscripts()
        q, scale = _quantize.abs_max_quantize(
            self._kernel.numpy(), axis=tuple(ws.index(c) for c in reduced))
        scale = np.asarray(_quantize.arrange_scale(scale, ws, outs, reduced))
        _quantize.set_quantized_policy(self, mode)
        self._int8_build()
        self._kernel.assign(q)
        self.kernel_scale.assign(scale)

    def _int8_build(self):
        _, ws, outs, _, _ = self._subscripts()
        if "_kernel" in self.__dict__:
            self._untrack_weight(self._kernel)
        self._kernel = self.add_weight("kernel", self._kernel_shape, "zeros",
                                       dtype="int8", trainable=False)
        sizes = dict(zip(ws, self._kernel_shape))
        self.kernel_scale = self.add_weight(
            "kernel_scale", tuple(sizes.get(c, 1) for c in outs), "ones",
            trainable=False)

    def _int8_call(self, inputs):
        ins, _, outs, reduced, _ = self._subscripts()
        q, scale = _quantize.quantize_inputs(
            inputs, axis=tuple(ins.index(c) for c in reduced))
        scale = _quantize.arrange_scale(scale, ins, outs, reduced)
        x = K.einsum(self._explicit, q, K.cast(self._kernel, q.dtype))
        x = x / (scale * self.kernel_scale)
        if self.lora_enabled:
            a, b = _lora_weights(self)
            lora = K.matmul(K.einsum(self._explicit, inputs, a), b)
            x = x + (self.lora_alpha / self.lora_rank) * lora
        return x

    # -- Keras 3 weight files -------------------------------------------------------
    def _stored_variables(self):
        return _stored_kernel_variables(self)

    def save_own_variables(self, store):
        """Writes the slots Keras 3's ``EinsumDense.save_own_variables``
        writes: kernel, bias (if any), kernel_scale (int8). With LoRA on, A
        and B are not stored: the kernel slot holds ``kernel + a @ b *
        lora_alpha / rank`` in the compute dtype, or for an int8 layer that
        sum quantized again over the summed axes, with its new scale (Keras'
        ``_get_kernel_with_merged_lora``).

        Args:
            store: a dict, filled in place with ``"0"``, ``"1"``... -> numpy
                arrays of the variables' shapes.
        """
        if not self.built:  # no variables yet, no subscripts: nothing to write
            return
        _, ws, outs, _, _ = self._subscripts()
        _save_kernel_slots(self, store, ws, outs)

    def _load_assignments(self, arrays):
        # The kernel slot holds the merged update: A and B start again from
        # zeros, as Keras' load_own_variables.
        return super()._load_assignments(arrays) + _lora_reset(self)

    def compute_output_shape(self, input_shape):
        return tuple(analyze(self.equation, self.bias_axes, input_shape,
                             self.partial_output_shape)[2])

    def get_config(self):
        config = {**super().get_config(),
                  "output_shape": self.partial_output_shape,
                  "equation": self.equation,
                  "activation": activations.serialize(self.activation),
                  "bias_axes": self.bias_axes, **self._w.config()}
        if self.lora_rank:
            config.update(lora_rank=self.lora_rank, lora_alpha=self.lora_alpha)
        return config
