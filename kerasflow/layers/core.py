"""Core layers: InputLayer/Input, Dense, Activation, Dropout, Flatten, Reshape, Lambda.

Keras' ``keras.layers`` semantics and argument names.
"""

from __future__ import annotations

import numpy as np

from kerasflow import activations, constraints, initializers, regularizers
from kerasflow import backend as K
from kerasflow.layers import _quantize
from kerasflow.layers.base import _HISTORY, CallRecord, InputSpec, Layer

__all__ = ["InputLayer", "Input", "Dense", "Activation", "Dropout", "Flatten",
           "Reshape", "Lambda"]


class InputLayer(Layer):
    """Holds the placeholder a functional model starts from.

    Args:
        shape: input shape without the batch axis; None for unknown sizes.
        batch_size: fixed batch size, or None.
        dtype: dtype of the fed values (floatx by default).
        sparse, ragged: unsupported; raise ValueError when True.
        optional: the model may be called with None for this input (Keras 3);
            layers then receive None.
    """

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None,
                 batch_shape=None, input_shape=None, batch_input_shape=None,
                 optional=False, sparse=False, ragged=False, **kwargs):
        if sparse or ragged:
            raise ValueError(f"InputLayer supports dense inputs only. Received: "
                             f"sparse={sparse}, ragged={ragged}.")
        shape = shape if shape is not None else input_shape
        batch_shape = batch_shape or batch_input_shape
        if batch_shape is None:
            if shape is None:
                raise ValueError("InputLayer needs shape= or batch_shape=.")
            batch_shape = (batch_size,) + tuple(shape)
        super().__init__(name=name, dtype=dtype, **kwargs)
        self._batch_input_shape = tuple(batch_shape)
        self.optional = bool(optional)
        output = K.placeholder(self.dtype, self._batch_input_shape, name=self.name)
        record = CallRecord(None, output, {}, 0)
        self._calls.append(record)
        _HISTORY[output] = (self, record, 0)
        self._last_output_shape = output.shape
        self.built = True

    def get_config(self):
        config = {"batch_shape": list(self._batch_input_shape),
                  "dtype": self.dtype, "name": self.name}
        if self.optional:
            config["optional"] = True
        return config


def Input(shape=None, batch_size=None, name=None, dtype=None, batch_shape=None,
          optional=False):
    """A symbolic model input (Keras' ``keras.Input``).

    Args:
        shape: tuple without the batch axis, e.g. ``(784,)``.
        batch_size: optional fixed batch size.
        dtype: e.g. 'float32' (default floatx) or 'int64' for token ids.
        optional: the model may be called with None for this input (Keras 3).

    Returns:
        A placeholder ``SymbolicTensor`` of shape (batch_size, *shape).
    """
    layer = InputLayer(shape=shape, batch_size=batch_size, name=name, dtype=dtype,
                       batch_shape=batch_shape, optional=optional)
    return layer.output


class Dense(Layer):
    """Densely connected layer: ``activation(inputs @ kernel + bias)``.

    Args:
        units: output size (positive int).
        activation: name or callable; None for linear.
        use_bias: add a bias vector.
        kernel_initializer, bias_initializer: names or initializers.
        kernel_regularizer, bias_regularizer, activity_regularizer: penalties.
        kernel_constraint, bias_constraint: callables applied after each update.
        lora_rank: when set, ``enable_lora(lora_rank)`` runs at build.
        lora_alpha: scales the LoRA update by ``lora_alpha / lora_rank``
            (default ``lora_rank``); kept through build (Keras 3.15's Dense
            drops it there, its EinsumDense keeps it).
        quantization_config: only None (the default int8 quantizers).

    Input shape: (batch, ..., input_dim), float. Output: (batch, ..., units).

    After ``quantize("int8")`` the kernel is an int8 (input_dim, units)
    Variable with a float ``kernel_scale`` of shape (units,); after
    ``enable_lora(rank)`` the kernel is frozen and ``kernel`` reads
    ``kernel + lora_kernel_a @ lora_kernel_b * lora_alpha / rank`` (LoRA, Hu
    et al., ICLR 2022), as Keras 3's ``Dense``.

    Raises:
        ValueError: units not a positive int (a string '3' included, as
            Keras); an input of rank < 2; an input whose
            last axis differs from the one the layer was built for.
        NotImplementedError: a ``quantization_config``.

    Example:
        >>> layer = Dense(8, name="dense")
        >>> layer.build((None, 16))
        >>> layer.enable_lora(2)
        >>> [w.name for w in layer.trainable_weights]
        ['dense/bias', 'dense/lora_kernel_a', 'dense/lora_kernel_b']
    """

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None,
                 quantization_config=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if (not isinstance(units, (int, np.integer)) or isinstance(units, bool)
                or units <= 0):
            raise ValueError(  # Keras raises ValueError for any bad units
                f"Received an invalid value for `units`, expected a positive "
                f"integer. Received: units={units!r}"
            )
        if quantization_config is not None:
            raise NotImplementedError(
                f"Dense quantizes with Keras' default int8 quantizers only. "
                f"Received: quantization_config={quantization_config!r}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = _get_constraint(kernel_constraint)
        self.bias_constraint = _get_constraint(bias_constraint)
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else lora_rank
        self.lora_enabled = False
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        if input_shape is not None and len(input_shape) < 2:
            raise ValueError(
                f"Layer '{self.name}' expects inputs of rank >= 2 (batch, ..., "
                f"input_dim). Received: inputs of rank {len(input_shape)}, "
                f"shape {tuple(input_shape)}."
            )
        in_dim = input_shape[-1]
        if in_dim is None:
            raise ValueError(
                f"Layer '{self.name}' needs a known last input dimension. Received: "
                f"input_shape={input_shape}."
            )
        if self.quantization_mode == "int8":  # rebuilt from a quantized config
            self._int8_build((in_dim, self.units))
        else:
            self._kernel = self.add_weight("kernel", (in_dim, self.units),
                                           self.kernel_initializer,
                                           self.kernel_regularizer,
                                           constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", (self.units,), self.bias_initializer,
                                     self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: in_dim})
        self.built = True
        if self.lora_rank and not self.lora_enabled:
            self.enable_lora(self.lora_rank, lora_alpha=self.lora_alpha)

    @property
    def kernel(self):
        """The (input_dim, units) kernel the layer multiplies by: the
        Variable; with LoRA on, the sum with the scaled low-rank update in
        the compute dtype (a graph tensor); the int8 Variable once quantized.

        Raises:
            AttributeError: the layer is not built.
        """
        return _effective_kernel(self)

    @kernel.setter
    def kernel(self, value):
        self._kernel = value

    def call(self, inputs):
        if self.quantization_mode == "int8":
            x = self._int8_call(inputs)
        else:
            x = K.matmul(inputs, self.kernel)
        if self.bias is not None:
            x = x + self.bias
        return self.activation(x)

    # -- LoRA ---------------------------------------------------------------------
    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Freezes the kernel and trains a low-rank update of it instead (LoRA,
        Hu et al., ICLR 2022; Keras 3's ``Dense.enable_lora``).

        Adds float32 weights ``lora_kernel_a`` (input_dim, rank) and
        ``lora_kernel_b`` (rank, units), with the kernel's regularizer; the
        effective kernel is ``kernel + a @ b * lora_alpha / rank``, which B's
        zero start leaves equal to the kernel. The trainable weights become
        the bias (if any) and the two LoRA kernels; compile a model again
        after enabling it.

        Args:
            rank: positive int, the rank of the update.
            lora_alpha: the update's scale numerator (default ``rank``).
            a_initializer, b_initializer: initializers of A and B.

        Raises:
            ValueError: a kernel constraint, a layer not built, or LoRA already
                enabled (Keras' messages).
        """
        _check_lora(self)
        in_dim, units = self._kernel.shape
        _add_lora_weights(self, (in_dim, rank), (rank, units), a_initializer,
                          b_initializer)
        self.lora_rank = rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else rank

    # -- int8 quantization ----------------------------------------------------------
    def quantize(self, mode=None, type_check=True, config=None):
        """Quantizes the kernel to int8 per output unit (Keras 3's
        ``Dense.quantize("int8")``): ``kernel_scale = 127 / (max_i |w_ij| +
        1e-7)`` of shape (units,), an int8 kernel ``round(w * kernel_scale)``;
        inputs are quantized per row in ``call``. The layer's policy becomes
        "int8_from_<policy>" and its bias stays float.

        Args:
            mode: "int8".
            type_check: refuse subclasses of Dense (Keras).
            config: only None.

        Raises:
            ValueError: an unknown mode, naming the supported ones; a layer
                not built or already quantized; a float16 compute dtype.
            NotImplementedError: a Keras mode other than "int8" ("int4",
                "float8", "gptq", "awq"), naming it; a subclass with
                ``type_check``; a ``config``.
        """
        self._check_quantize_args(mode, config)
        if type_check and type(self) is not Dense:
            raise self._not_implemented_error(self.quantize)
        q, scale = _quantize.abs_max_quantize(self._kernel.numpy(), axis=0)
        _quantize.set_quantized_policy(self, mode)
        self._int8_build(q.shape)
        self._kernel.assign(q)
        self.kernel_scale.assign(np.squeeze(scale, axis=0))

    def _int8_build(self, kernel_shape):
        if "_kernel" in self.__dict__:
            self._untrack_weight(self._kernel)
        self._kernel = self.add_weight("kernel", tuple(kernel_shape), "zeros",
                                       dtype="int8", trainable=False)
        self.kernel_scale = self.add_weight("kernel_scale", (self.units,),
                                            "ones", trainable=False)

    def _int8_call(self, inputs):
        q, scale = _quantize.quantize_inputs(inputs, axis=-1)
        x = K.matmul(q, K.cast(self._kernel, q.dtype))
        x = x / (self.kernel_scale * scale)
        if self.lora_enabled:
            a, b = _lora_weights(self)
            x = x + (self.lora_alpha / self.lora_rank) * K.matmul(
                K.matmul(inputs, a), b)
        return x

    # -- Keras 3 weight files -------------------------------------------------------
    def _stored_variables(self):
        return _stored_kernel_variables(self)

    def save_own_variables(self, store):
        """Writes the slots Keras 3's ``Dense.save_own_variables`` writes:
        kernel, bias (if any), kernel_scale (int8). With LoRA on, A and B
        are not stored: the kernel slot holds ``kernel + a @ b * lora_alpha
        / rank`` in the compute dtype, or for an int8 layer that sum
        quantized again per output unit, with its new scale (Keras'
        ``_get_kernel_with_merged_lora``), so Keras reads the same layer.

        Args:
            store: a dict, filled in place with ``"0"``, ``"1"``... -> numpy
                arrays ((input_dim, units) kernel, (units,) bias and scale).
        """
        _save_kernel_slots(self, store, "ij", "j")

    def _load_assignments(self, arrays):
        # The kernel slot holds the merged update: A and B start again from
        # zeros, as Keras' load_own_variables.
        return super()._load_assignments(arrays) + _lora_reset(self)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            activation=activations.serialize(self.activation),
            use_bias=self.use_bias,
            kernel_initializer=initializers.serialize(self.kernel_initializer),
            bias_initializer=initializers.serialize(self.bias_initializer),
            kernel_regularizer=regularizers.serialize(self.kernel_regularizer)
            if self.kernel_regularizer else None,
            bias_regularizer=regularizers.serialize(self.bias_regularizer)
            if self.bias_regularizer else None,
            kernel_constraint=_serialize_constraint(self.kernel_constraint),
            bias_constraint=_serialize_constraint(self.bias_constraint),
        )
        if self.lora_rank:
            config.update(lora_rank=self.lora_rank, lora_alpha=self.lora_alpha)
        return config


def _cast(x, dtype):
    return x if x.dtype == np.dtype(dtype) else K.cast(x, dtype)


def _effective_kernel(layer):
    """``layer.kernel`` of Dense and EinsumDense: the Variable, or with LoRA
    on ``kernel + a @ b * lora_alpha / rank`` in the compute dtype.

    Raises:
        AttributeError: the layer is not built (Keras' message).
    """
    if "_kernel" not in layer.__dict__:
        raise AttributeError("You must build the layer before accessing "
                             "`kernel`.")
    kernel = layer._kernel
    if layer.lora_enabled:
        a, b = _lora_weights(layer)
        kernel = _cast(kernel, layer.compute_dtype) + (
            layer.lora_alpha / layer.lora_rank) * K.matmul(a, b)
    return kernel


def _check_lora(layer):
    """Keras 3's refusals before ``enable_lora``."""
    if layer.kernel_constraint:
        raise ValueError("Lora is incompatible with kernel constraints. In order "
                         "to enable lora on this layer, remove the "
                         "`kernel_constraint` argument.")
    if not layer.built:
        raise ValueError("Cannot enable lora on a layer that isn't yet built.")
    if layer.lora_enabled:
        raise ValueError("lora is already enabled. This can only be done once "
                         "per layer.")


def _add_lora_weights(layer, a_shape, b_shape, a_initializer, b_initializer):
    """Adds LoRA's A and B (float32, as Keras: no underflow while tuning) and
    freezes the kernel."""
    layer.lora_kernel_a = layer.add_weight(
        "lora_kernel_a", tuple(a_shape), initializers.get(a_initializer),
        layer.kernel_regularizer, dtype="float32")
    layer.lora_kernel_b = layer.add_weight(
        "lora_kernel_b", tuple(b_shape), initializers.get(b_initializer),
        layer.kernel_regularizer, dtype="float32")
    layer._kernel.trainable = False
    layer.lora_enabled = True
    layer._clear_eager_traces()


def _stored_kernel_variables(layer):
    """Keras 3's slot order for Dense and EinsumDense
    (``variable_serialization_spec``): kernel, bias if any, kernel_scale if
    int8; LoRA's A and B have no slot. None before build ([])."""
    if not layer.built:
        return []
    out = [layer._kernel] + ([] if layer.bias is None else [layer.bias])
    return out + ([layer.kernel_scale] if layer.quantization_mode == "int8"
                  else [])


def _save_kernel_slots(layer, store, ws, outs):
    """Fills ``store`` with ``layer``'s slots, the LoRA update merged into
    the kernel; ``ws``/``outs`` are the kernel's and the output's einsum
    subscripts (where the int8 scales lie)."""
    values = [np.asarray(v.numpy()) for v in _stored_kernel_variables(layer)]
    if layer.lora_enabled:
        kernel, scale = _merged_kernel(layer, ws, outs)
        values[0] = kernel
        if scale is not None:
            values[-1] = scale
    for i, value in enumerate(values):
        store[str(i)] = value


def _merged_kernel(layer, ws, outs):
    """(kernel, int8 scale or None) with the LoRA update merged in (Keras 3's
    ``_get_kernel_with_merged_lora``): a float kernel in the compute dtype; an
    int8 kernel de-quantized, merged and quantized again over the axes the
    product sums over."""
    delta = (layer.lora_alpha / layer.lora_rank) * np.matmul(
        layer.lora_kernel_a.numpy(), layer.lora_kernel_b.numpy())
    kernel = np.asarray(layer._kernel.numpy())
    if layer.quantization_mode != "int8":
        return (kernel + delta).astype(layer.compute_dtype), None
    reduced = [c for c in ws if c not in outs]
    scale = _quantize.unarrange_scale(layer.kernel_scale.numpy(), ws, outs,
                                      reduced)
    merged = kernel.astype(layer.compute_dtype) / scale + delta
    q, scale = _quantize.abs_max_quantize(
        merged, axis=tuple(ws.index(c) for c in reduced))
    return q, np.asarray(_quantize.arrange_scale(scale, ws, outs, reduced))


def _lora_reset(layer):
    """(A, zeros), (B, zeros) for a LoRA layer, else []."""
    if not layer.lora_enabled:
        return []
    return [(w, np.zeros(w.shape, w.dtype))
            for w in (layer.lora_kernel_a, layer.lora_kernel_b)]


def _lora_weights(layer):
    """A and B in the layer's compute dtype (a float64 layer has float32 LoRA
    weights, as Keras, and kerasflow's matmul takes one dtype)."""
    dtype = layer.compute_dtype
    return _cast(layer.lora_kernel_a, dtype), _cast(layer.lora_kernel_b, dtype)


def _get_constraint(identifier):
    return constraints.get(identifier)


def _serialize_constraint(c):
    # A plain function has no config: it is left out (rebuilt as None).
    return constraints.serialize(c) if isinstance(c, constraints.Constraint) \
        else None


class Activation(Layer):
    """Applies an activation function (name or callable) elementwise."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Dropout(Layer):
    """Randomly zeroes a fraction ``rate`` of inputs during training and scales
    the rest by 1 / (1 - rate) (Srivastava et al., JMLR 2014); identity at
    inference.

    Args:
        rate: drop probability in [0, 1).
        noise_shape: unsupported beyond None (full-shape masks).
        seed: op seed for reproducible masks.

    Raises:
        TypeError: rate not a number. ValueError: rate outside [0, 1).
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float, np.integer, np.floating)) or isinstance(
                rate, bool):
            raise TypeError(
                f"Layer '{self.name}' expects `rate` as a float in [0, 1). "
                f"Received: rate={rate!r} of type {type(rate).__name__}."
            )
        if not 0 <= rate < 1:
            raise ValueError(
                f"Invalid value received for argument `rate`. Expected a float "
                f"value between 0 and 1. Received: rate={rate}"
            )
        if noise_shape is not None:
            raise ValueError("Dropout(noise_shape=...) is not supported yet.")
        self.rate = float(rate)
        self.seed = seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return K.dropout(inputs, self.rate, seed=self.seed)

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config


class Flatten(Layer):
    """Flattens all axes but the batch axis: (batch, d1, d2, ...) -> (batch, d)
    (Keras' ``Flatten``).

    Args:
        data_format: 'channels_last', or 'channels_first', whose inputs
            (batch, channels, *spatial) are flattened in channels_last order,
            so a Dense layer after it sees the same features in either layout
            (as Keras); None means ``image_data_format()``.

    Raises:
        ValueError: a bad ``data_format``.
    """

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = K.standardize_data_format(data_format)

    def call(self, inputs):
        rank = None if inputs.shape is None else len(inputs.shape)
        if self.data_format == "channels_first" and rank is not None and rank > 2:
            inputs = K.transpose(inputs, (0, *range(2, rank), 1))
        shape = inputs.shape
        if shape is not None and None not in shape[1:]:
            return K.reshape(inputs, (-1, int(np.prod(shape[1:]))))
        return K.flatten(inputs)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes to ``(batch,) + target_shape``; one entry may be -1.

    Args:
        target_shape: positive ints (one may be -1), without the batch axis.

    Raises:
        ValueError: a target with entries other than positive ints and one -1;
            a per-sample size that differs from the target's, naming the layer
            and both sizes (when built for static shapes, else when run).
        TypeError: ``target_shape`` is not a sequence of ints.
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(target_shape, (list, tuple)) or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                for d in target_shape):
            raise TypeError(
                f"Reshape expects target_shape as a tuple of ints. Received: "
                f"target_shape={target_shape!r}."
            )
        if list(target_shape).count(-1) > 1 or any(
                d == 0 or d < -1 for d in target_shape):
            raise ValueError(
                f"Reshape expects target_shape of positive ints with at most one "
                f"-1. Received: target_shape={tuple(target_shape)}."
            )
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs):
        return K.reshape_batch(inputs, self.target_shape, who=f"Layer '{self.name}'")

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = list(self.target_shape)
        return config

class Lambda(Layer):
    """Wraps a function of backend ops as a layer (Keras' ``Lambda``).

    Args:
        function: ``f(inputs, **arguments)`` built from backend ops.
        output_shape: accepted for Keras compatibility; shapes are inferred
            by tracing ``function``.
        arguments: dict of extra keyword arguments passed to ``function``.

    Not serializable to JSON (it holds Python code).
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None,
                 **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda expects a callable. Received: "
                            f"function={function!r}.")
        self.function = function
        self.output_shape_arg = output_shape
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)

    def get_config(self):
        raise NotImplementedError(
            f"Lambda layer '{self.name}' wraps Python code and cannot be saved as "
            f"JSON; write a Layer subclass with get_config instead."
        )
