"""Recurrent cells for the cell-based ``RNN`` API (Keras 3's ``SimpleRNNCell``,
``LSTMCell``, ``GRUCell``, ``StackedRNNCells``).

A cell is a layer with ``state_size`` and ``call(inputs, states, training)``
returning ``(output, new_states)`` for one time step. The built-in cells have
the weights, gate order and formulas of ``SimpleRNN``, ``LSTM`` and ``GRU``
(see ``backend/ops/scan.py``), so ``RNN(LSTMCell(n))`` computes what
``LSTM(n)`` computes; ``RNN`` runs them in one loop op.
"""

from __future__ import annotations

import numpy as np

from kerasflow import activations
from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers.base import Layer
from kerasflow.layers.layer_helpers import call_params
from kerasflow.utils.serialization import serialize_object

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]

# Activations the loop op differentiates itself (the RNN fast path).
_LOOP_ACTS = ("tanh", "sigmoid", "relu", "linear", "hard_sigmoid")


_W = ("kernel_initializer", "recurrent_initializer", "bias_initializer",
      "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
      "kernel_constraint", "recurrent_constraint", "bias_constraint")


def _weight_kwargs(values):
    """The initializer / regularizer / constraint arguments among ``values``."""
    return {k: values[k] for k in _W}


def state_sizes(cell):
    """The cell's states' sizes as a flat list of ints."""
    return [int(s) for s in tree.flatten(cell.state_size)]


def check_rnn_args(units, dropout, recurrent_dropout, cell=False) -> None:
    """Keras' checks of a recurrence's arguments: ``units`` a positive integer,
    the dropout rates in [0, 1) (in [0, 1] for a cell, which clips them)."""
    if not isinstance(units, (int, np.integer)) or isinstance(units, bool) \
            or units <= 0:
        raise ValueError(f"Received an invalid value for argument `units`, "
                         f"expected a positive integer, got {units!r}.")
    for name, rate in (("dropout", dropout),
                       ("recurrent_dropout", recurrent_dropout)):
        if not (0.0 <= float(rate) <= 1.0 if cell else 0.0 <= rate < 1.0):
            raise ValueError(f"`{name}` must be in [0, {'1]' if cell else '1)'}. "
                             f"Received: {name}={rate!r}.")


def add_gate_weights(layer, features):
    """Adds ``kernel`` (features, gates * units), ``recurrent_kernel`` (units,
    gates * units) and ``bias`` (``layer._bias_shape()``, initialized by
    ``layer._bias_initial``; None without ``use_bias``) to a built-in recurrent
    layer or cell."""
    gu = layer.gates * layer.units
    layer.kernel = layer._w.add(layer, "kernel", (features, gu))
    layer.recurrent_kernel = layer._w.add(layer, "recurrent", (layer.units, gu),
                                          weight_name="recurrent_kernel")
    layer.bias = layer.add_weight(
        "bias", layer._bias_shape(), layer._bias_initial, layer._w.reg["bias"],
        constraint=layer._w.con["bias"]) if layer.use_bias else None


class _Cell(Layer):
    """Arguments, weights, per-sequence dropout masks and config of the
    built-in cells (Keras' ``DropoutRNNCell``)."""

    kind, gates = "simple", 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 **kwargs):
        self._w = WeightArgs(kwargs, "kernel", "recurrent", "bias")
        super().__init__(**kwargs)
        check_rnn_args(units, dropout, recurrent_dropout, cell=True)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self._sequence_masks = None  # (input mask, state mask) set by RNN

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_initial(self, shape, dtype):
        return self._w.init["bias"](shape, dtype=dtype)

    def build(self, input_shape):
        d = input_shape[-1]
        if d is None:
            raise ValueError(f"Layer '{self.name}' needs a known feature dimension. "
                             f"Received: input_shape={tuple(input_shape)}.")
        add_gate_weights(self, d)
        self.built = True

    def loop_activations(self):
        """(activation, recurrent_activation) names when the loop op can run
        this cell, else None (a subclass or another activation: unrolled)."""
        if type(self) not in (SimpleRNNCell, LSTMCell, GRUCell):
            return None
        names = (activations.serialize(self.activation),
                 activations.serialize(self.recurrent_activation))
        return names if all(n in _LOOP_ACTS for n in names) else None

    def _masks(self, inputs, h, training):
        """Dropout multipliers of the inputs and the state (or None)."""
        if self._sequence_masks is not None:
            return self._sequence_masks
        dp = rdp = None
        if training and self.dropout > 0:
            dp = K.dropout(K.ones_like(inputs), self.dropout, seed=self.seed)
        if training and self.recurrent_dropout > 0:
            rdp = K.dropout(K.ones_like(h), self.recurrent_dropout,
                            seed=None if self.seed is None else self.seed + 1)
        return dp, rdp

    def _states(self, states, n):
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        if len(states) != n:
            raise ValueError(f"Layer '{self.name}' expects {n} state tensor(s) of "
                             f"shape (batch, {self.units}). Received: "
                             f"{len(states)}.")
        return states

    def get_config(self):
        config = {**super().get_config(), "units": self.units,
                  "activation": activations.serialize(self.activation),
                  "use_bias": self.use_bias, "dropout": self.dropout,
                  "recurrent_dropout": self.recurrent_dropout, "seed": self.seed,
                  **self._w.config()}
        if self.kind != "simple":
            config["recurrent_activation"] = activations.serialize(
                self.recurrent_activation)
        return config


class SimpleRNNCell(_Cell):
    """One step of ``SimpleRNN``: ``h = activation(x W + h_prev U + b)``
    (Keras 3's ``SimpleRNNCell``).

    Args:
        units: state size. activation: default 'tanh'. use_bias,
        kernel_/recurrent_/bias_ initializer ('glorot_uniform', 'orthogonal',
        'zeros'), regularizer, constraint: as ``SimpleRNN``'s.
        dropout, recurrent_dropout: rates of the input and state masks (one
            mask per sequence inside ``RNN``), training only. seed: their seed.

    Call: ``cell(x, [h])`` with x (batch, features), h (batch, units) ->
    ``(h_new, [h_new])``.

    Raises:
        ValueError: non-positive units, a rate outside [0, 1], a wrong number
            of states.
    """

    kind, gates = "simple", 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("recurrent_activation", None)
        super().__init__(units, activation=activation, use_bias=use_bias,
                         dropout=dropout, recurrent_dropout=recurrent_dropout,
                         seed=seed, **_weight_kwargs(locals()), **kwargs)

    def call(self, inputs, states, training=None):
        (h,) = self._states(states, 1)
        dp, rdp = self._masks(inputs, h, training)
        x = inputs if dp is None else inputs * dp
        z = K.matmul(x, self.kernel)
        if self.bias is not None:
            z = z + self.bias
        hr = h if rdp is None else h * rdp
        out = self.activation(z + K.matmul(hr, self.recurrent_kernel))
        return out, [out]


class LSTMCell(_Cell):
    """One step of ``LSTM`` (Hochreiter & Schmidhuber 1997; Keras 3's
    ``LSTMCell``): gates i, f, c, o; ``c = f * c_prev + i * act(z_c)``,
    ``h = o * act(c)``.

    Args:
        as ``SimpleRNNCell``, plus recurrent_activation (default 'sigmoid'),
        unit_forget_bias (forget-gate bias initialized to 1) and
        implementation (accepted; one formula serves both).

    Call: ``cell(x, [h, c])`` -> ``(h_new, [h_new, c_new])``; weights kernel
    (features, 4 units), recurrent_kernel (units, 4 units), bias (4 units,).

    Raises:
        as ``SimpleRNNCell``.
    """

    kind, gates = "lstm", 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 seed=None, implementation=2, **kwargs):
        self.unit_forget_bias = bool(unit_forget_bias)
        self.implementation = int(implementation)
        super().__init__(units, activation, recurrent_activation, use_bias,
                         dropout, recurrent_dropout, seed,
                         **_weight_kwargs(locals()), **kwargs)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initial(self, shape, dtype):
        b = np.array(self._w.init["bias"](shape, dtype=dtype), dtype=dtype)
        if self.unit_forget_bias:
            b[self.units:2 * self.units] = 1.0
        return b

    def call(self, inputs, states, training=None):
        h, c = self._states(states, 2)
        dp, rdp = self._masks(inputs, h, training)
        x = inputs if dp is None else inputs * dp
        hr = h if rdp is None else h * rdp
        z = K.matmul(x, self.kernel) + K.matmul(hr, self.recurrent_kernel)
        if self.bias is not None:
            z = z + self.bias
        u, ra = self.units, self.recurrent_activation
        i, f = ra(z[:, :u]), ra(z[:, u:2 * u])
        c_new = f * c + i * self.activation(z[:, 2 * u:3 * u])
        h_new = ra(z[:, 3 * u:]) * self.activation(c_new)
        return h_new, [h_new, c_new]

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias,
                "implementation": self.implementation}


class GRUCell(_Cell):
    """One step of ``GRU`` (Cho et al. 2014; Keras 3's ``GRUCell``): gates z, r,
    h; ``h = z * h_prev + (1 - z) * hh``.

    Args:
        as ``LSTMCell`` (no unit_forget_bias), plus ``reset_after`` (default
        True: the reset gate multiplies ``h U_h + b_rec`` and the bias is (2, 3
        units); False: ``hh = act(x W_h + (r * h) U_h + b_h)``, bias (3 units,)).

    Call: ``cell(x, [h])`` -> ``(h_new, [h_new])``.

    Raises:
        as ``SimpleRNNCell``.
    """

    kind, gates = "gru", 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, reset_after=True, seed=None,
                 implementation=2, **kwargs):
        self.reset_after = bool(reset_after)
        self.implementation = int(implementation)
        if not self.reset_after:
            self.kind = "gru_v1"
        super().__init__(units, activation, recurrent_activation, use_bias,
                         dropout, recurrent_dropout, seed,
                         **_weight_kwargs(locals()), **kwargs)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def call(self, inputs, states, training=None):
        (h,) = self._states(states, 1)
        dp, rdp = self._masks(inputs, h, training)
        x = inputs if dp is None else inputs * dp
        hr = h if rdp is None else h * rdp
        u, ra, b = self.units, self.recurrent_activation, self.bias
        xw = K.matmul(x, self.kernel)
        if self.reset_after:
            inner = K.matmul(hr, self.recurrent_kernel)
            if b is not None:
                xw, inner = xw + b[0], inner + b[1]
            z = ra(xw[:, :u] + inner[:, :u])
            r = ra(xw[:, u:2 * u] + inner[:, u:2 * u])
            hh = self.activation(xw[:, 2 * u:] + r * inner[:, 2 * u:])
        else:
            if b is not None:
                xw = xw + b
            inner = K.matmul(hr, self.recurrent_kernel[:, :2 * u])
            z = ra(xw[:, :u] + inner[:, :u])
            r = ra(xw[:, u:2 * u] + inner[:, u:])
            hh = self.activation(xw[:, 2 * u:] + K.matmul(
                r * hr, self.recurrent_kernel[:, 2 * u:]))
        h_new = z * h + (1.0 - z) * hh
        return h_new, [h_new]

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after,
                "implementation": self.implementation}


class StackedRNNCells(Layer):
    """Cells applied one after another at each time step, each feeding its
    output to the next (Keras 3's ``StackedRNNCells``; ``RNN([c1, c2])``
    builds one).

    Args:
        cells: a list of cells (layers with ``state_size`` and
            ``call(inputs, states)``).

    Call: ``cell(x, [states_1, states_2, ...])``, one list of states per cell
    -> ``(last cell's output, [new_states_1, ...])``.

    Raises:
        ValueError: an empty list or an element that is not a cell.
    """

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        cells = list(cells)
        if not cells:
            raise ValueError("StackedRNNCells expects a non-empty list of cells. "
                             "Received: cells=[].")
        for c in cells:
            if not (hasattr(c, "call") and hasattr(c, "state_size")):
                raise ValueError(f"StackedRNNCells expects cells with `call` and "
                                 f"`state_size`. Received: {c!r}.")
        self.cells = cells

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", None) or state_sizes(last)[0]

    def build(self, input_shape):
        shape = tuple(input_shape)
        for c in self.cells:
            if not c.built:
                with K.name_scope(c.name):
                    c.build(shape)
                c.built = True
            out = getattr(c, "output_size", None) or state_sizes(c)[0]
            shape = shape[:-1] + (int(out),)
        self.built = True

    def call(self, inputs, states, training=None):
        new = []
        for c, s in zip(self.cells, states):
            s = list(s) if isinstance(s, (list, tuple)) else [s]
            kw = {"training": training} if "training" in call_params(type(c)) \
                else {}
            inputs, ns = c.call(inputs, s, **kw)
            new.append(list(ns) if isinstance(ns, (list, tuple)) else [ns])
        return inputs, new

    def get_config(self):
        return {**super().get_config(),
                "cells": [serialize_object(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kerasflow.layers import deserialize

        config = dict(config)
        config["cells"] = [deserialize(c, custom_objects)
                           for c in config["cells"]]
        return cls(**config)
