"""Layer wrappers and masking: Bidirectional, TimeDistributed, Masking (Keras)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers.base import Layer

__all__ = ["Bidirectional", "TimeDistributed", "Masking"]

_MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _serialize(layer):
    from kerasflow.layers import serialize  # noqa: PLC0415

    return serialize(layer)


def _deserialize(config, custom_objects=None):
    from kerasflow.layers import deserialize  # noqa: PLC0415

    return deserialize(config, custom_objects)


class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy backwards and merges both
    (Schuster & Paliwal 1997; Keras' ``Bidirectional``).

    Args:
        layer: a SimpleRNN, LSTM or GRU instance (the forward layer).
        merge_mode: 'concat' (default), 'sum', 'mul', 'ave' or None (a list
            [forward, backward]).
        backward_layer: optional backward instance; default: ``layer``'s config
            with ``go_backwards`` flipped. Its outputs are reversed back in time
            so that step t of both halves lines up.

    Output: (batch, [steps,] 2 * units) for 'concat'; with the wrapped layer's
    ``return_state``, followed by the forward then the backward states.

    Raises:
        ValueError: an unknown merge_mode; a layer that is not recurrent; a
            backward layer whose return_sequences/return_state differ.
    """

    def __init__(self, layer, merge_mode="concat", backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Merge mode should be one of "
                             f"{list(_MERGE_MODES)}. Received: "
                             f"merge_mode={merge_mode!r}.")
        if not hasattr(layer, "go_backwards") or not hasattr(layer,
                                                             "return_sequences"):
            raise ValueError(f"Bidirectional wraps a recurrent layer (SimpleRNN, "
                             f"LSTM, GRU). Received: {layer!r}.")
        if backward_layer is None:
            config = layer.get_config()
            config["go_backwards"] = not layer.go_backwards
            config["name"] = f"backward_{layer.name}"
            backward_layer = type(layer).from_config(config)
        for attr in ("return_sequences", "return_state"):
            if getattr(layer, attr) != getattr(backward_layer, attr):
                raise ValueError(
                    f"Forward and backward layers of Bidirectional must agree on "
                    f"{attr}. Received: {getattr(layer, attr)} and "
                    f"{getattr(backward_layer, attr)}.")
        self.forward_layer, self.backward_layer = layer, backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if mask is None:
            mask = get_mask(inputs)
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = initial_state[:half], initial_state[half:]
        y_f = self.forward_layer(inputs, mask=mask, training=training,
                                 initial_state=fw_state)
        y_b = self.backward_layer(inputs, mask=mask, training=training,
                                  initial_state=bw_state)
        states = []
        if self.return_state:
            y_f, *s_f = y_f
            y_b, *s_b = y_b
            states = s_f + s_b
        if self.return_sequences:
            y_b = y_b[:, ::-1]
        if self.merge_mode == "concat":
            out = K.concatenate([y_f, y_b], axis=-1)
        elif self.merge_mode == "sum":
            out = y_f + y_b
        elif self.merge_mode == "mul":
            out = y_f * y_b
        elif self.merge_mode == "ave":
            out = (y_f + y_b) * 0.5
        else:
            out = [y_f, y_b]
        if self.return_sequences and mask is not None and self.merge_mode:
            set_mask(out, mask)
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def get_config(self):
        config = super().get_config()
        config.update(layer=_serialize(self.forward_layer),
                      backward_layer=_serialize(self.backward_layer),
                      merge_mode=self.merge_mode)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["layer"] = _deserialize(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = _deserialize(config["backward_layer"],
                                                    custom_objects)
        return cls(**config)


class TimeDistributed(Layer):
    """Applies ``layer`` to every time step (Keras' ``TimeDistributed``):
    (batch, steps, ...) -> (batch, steps, ...layer output), by folding the
    steps into the batch axis, so the layer's weights are shared across steps.

    The number of steps may be unknown (``Input((None, 4))``); the inner
    dimensions must be known.

    Raises:
        ValueError: an input of rank < 3, or unknown inner dimensions.
    """

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(f"TimeDistributed wraps a Layer instance. Received: "
                             f"layer={layer!r}.")
        self.layer = layer

    def build(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(
                f"Layer '{self.name}' (TimeDistributed) expects an input of rank "
                f">= 3 (batch, timesteps, ...). Received: "
                f"input_shape={tuple(input_shape)}.")
        self.built = True

    def call(self, inputs, training=None):
        shape = inputs.shape
        if len(shape) < 3:
            self.build(shape)
        steps, inner = shape[1], shape[2:]
        if None in inner:
            raise ValueError(f"Layer '{self.name}' needs known inner dims. "
                             f"Received: input shape {shape}.")
        folded = K.reshape(inputs, (-1,) + tuple(inner))
        kwargs = {"training": training} if "training" in _params(self.layer) else {}
        y = self.layer(folded, **kwargs)
        if steps is not None:
            out = K.reshape(y, (-1, steps) + tuple(y.shape[1:]))
        else:
            out = K.reshape_like(y, _steps_like(inputs, y.shape[1:]))
        mask = get_mask(inputs)
        if mask is not None:
            set_mask(out, mask)
        return out

    def get_config(self):
        return {**super().get_config(), "layer": _serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["layer"] = _deserialize(config["layer"], custom_objects)
        return cls(**config)


def _steps_like(inputs, inner):
    """Zeros of runtime shape (batch, steps, *inner): the target of unfolding
    when both batch and steps are unknown until run time."""
    n_in = len(inputs.shape) - 2
    picked = inputs[(slice(None), slice(None)) + (0,) * n_in
                    + (None,) * len(inner)]
    return K.tile(K.zeros_like(picked), (1, 1) + tuple(inner))


def _params(layer):
    import inspect  # noqa: PLC0415

    return inspect.signature(layer.call).parameters


class Masking(Layer):
    """Marks time steps whose features all equal ``mask_value`` as padding
    (Keras' ``Masking``): zeroes them and attaches the (batch, steps) mask that
    recurrent layers and GlobalAveragePooling1D honour.

    Input: (batch, steps, features). Output: same shape.
    """

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)

    def call(self, inputs):
        keep = K.not_equal(inputs, np.asarray(self.mask_value, inputs.dtype))
        mask = K.greater(K.max(K.cast(keep, inputs.dtype), axis=-1), 0.0)
        out = inputs * K.expand_dims(K.cast(mask, inputs.dtype), -1)
        set_mask(out, mask)
        return out

    def compute_mask(self, inputs, mask=None):
        return K.greater(K.max(K.cast(K.not_equal(inputs, self.mask_value),
                                      inputs.dtype), axis=-1), 0.0)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
