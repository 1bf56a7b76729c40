"""Recurrent layers: SimpleRNN, LSTM, GRU (Keras 3's names, arguments, defaults).

Each layer runs its whole sequence in one ``rnn_loop`` op (and its gradient in
one ``RNNLoopGrad`` op): the graph does not grow with the number of time
steps, so 500-step sequences build and compile as fast as short ones.
``unroll`` is accepted for compatibility and changes nothing.
"""

from __future__ import annotations

import numpy as np

from kerasflow import activations
from kerasflow import backend as K
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers._utils import WeightArgs, check_rank
from kerasflow.layers.base import InputSpec, Layer
from kerasflow.layers.rnn_cells import add_gate_weights, check_rnn_args

__all__ = ["SimpleRNN", "LSTM", "GRU"]

_SUPPORTED = ("tanh", "sigmoid", "relu", "linear", "hard_sigmoid")


def _act_name(layer, arg, value):
    fn = activations.get(value)
    name = activations.serialize(fn)
    if name not in _SUPPORTED:
        raise ValueError(
            f"Layer '{layer.name}' supports {arg} in {list(_SUPPORTED)} (its loop "
            f"op computes their derivatives). Received: {arg}={value!r}.")
    return name


def run_loop(x, kernel, recurrent_kernel, bias, *, kind, units, activation,
             recurrent_activation, dropout, recurrent_dropout, seed, mask, states,
             training, dtype):
    """One built-in cell over the whole of ``x`` (batch, steps, features) in one
    ``rnn_loop`` op, with Keras' per-sequence dropout masks; the recurrent
    layers and ``RNN`` over the built-in cells share it.

    Returns:
        (hs, cs): outputs at every step (batch, steps, units) and the LSTM
        cell states (width 0 for other cells).
    """
    x = x if x.dtype == np.dtype(dtype) else K.cast(x, dtype)
    if training and dropout > 0:
        x = x * K.dropout(K.ones_like(x[:, :1, :]), dropout, seed=seed)
    rmask = None
    if training and recurrent_dropout > 0:
        ones = K.ones_like(x[:, 0, :1]) * np.ones(units, dtype)
        rmask = K.dropout(ones, recurrent_dropout,
                          seed=None if seed is None else seed + 1)
    if mask is not None and mask.dtype != np.dtype(bool):
        mask = K.cast(mask, "bool")
    if bias is None:
        gates = {"simple": 1, "lstm": 4}.get(kind, 3)
        bias = np.zeros((2, 3 * units) if kind == "gru" else (gates * units,),
                        dtype)
    hs, cs, _ = K.rnn_loop(
        x, kernel, recurrent_kernel, bias, cell=kind, activation=activation,
        recurrent_activation=recurrent_activation, initial_state=states,
        mask=mask, recurrent_mask=rmask)
    return hs, cs


class _Recurrence(Layer):
    """Base of ``RNN`` and the recurrent layers here: the sequence a call runs
    over (``_sequence``) and the final states kept for the next batch with
    ``stateful=True`` (one zeros Variable (batch, size) per state, ``states``,
    ``reset_states``)."""

    def __init__(self, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, **kwargs):
        super().__init__(**kwargs)
        self.return_sequences, self.return_state = (bool(return_sequences),
                                                    bool(return_state))
        self.go_backwards, self.stateful, self.unroll = (
            bool(go_backwards), bool(stateful), bool(unroll))
        self._state_vars = None

    def _sequence(self, inputs, mask, initial_state):
        """``(x, mask, initial_state)`` of a call: states given as list inputs,
        the mask the input carries, both reversed in time with
        ``go_backwards``."""
        if isinstance(inputs, (list, tuple)):
            # ``layer([x, h0, c0])``: states as inputs, which functional models
            # can feed (keyword tensors are not replayed).
            inputs, *states = inputs
            initial_state = states or initial_state
        if mask is None:
            mask = get_mask(inputs)
        x = inputs
        if self.go_backwards:
            x = x[:, ::-1]
            mask = None if mask is None else mask[:, ::-1]
        return x, mask, initial_state

    def _build_states(self, batch, sizes):
        """The kept states, one per ``{name: size}`` entry (``state_<name>``)."""
        if batch is None:
            raise ValueError(
                f"Layer '{self.name}': stateful=True needs a static batch size "
                f"(the states are kept per sample): pass batch_input_shape=("
                f"batch, timesteps, features) or Input(..., batch_size=batch).")
        self._state_vars = [
            self.add_weight(f"state_{n}", (int(batch), size), "zeros",
                            trainable=False) for n, size in sizes.items()]

    @property
    def states(self):
        """The kept states of a stateful layer: Variables of shape (batch,
        size), e.g. [h] or [h, c]; None otherwise."""
        return self._state_vars

    def reset_states(self, states=None):
        """Sets the kept states to zeros, or to ``states`` (a list of (batch,
        size) arrays) (Keras' ``reset_states``).

        Raises:
            AttributeError: the layer is not stateful.
            ValueError: ``states`` of another count or shape.
        """
        if not self.stateful:
            raise AttributeError(f"Layer '{self.name}' is not stateful: there are "
                                 f"no states to reset.")
        if self._state_vars is None:
            return
        values = [np.zeros(v.shape, v.dtype) for v in self._state_vars] \
            if states is None else list(states)
        K.assign_all(self._state_vars, values, owner=f"Layer '{self.name}' states")

    reset_state = reset_states  # Keras 3's name


class _RNN(_Recurrence):
    """Base of the recurrent layers: arguments, weights, masks, outputs."""

    cell = "simple"
    gates = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, seed=None, implementation=2,
                 **kwargs):
        self._w = WeightArgs(kwargs, "kernel", "recurrent", "bias",
                             defaults=self._weight_defaults())
        super().__init__(return_sequences, return_state, go_backwards, stateful,
                         unroll, **kwargs)
        check_rnn_args(units, dropout, recurrent_dropout)
        if implementation not in (1, 2):
            raise ValueError(f"`implementation` must be 1 or 2. Received: "
                             f"implementation={implementation!r}.")
        self.units = int(units)
        self.activation = _act_name(self, "activation", activation)
        self.recurrent_activation = _act_name(self, "recurrent_activation",
                                              recurrent_activation)
        self.use_bias = bool(use_bias)
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        # Keras' kernel choice; one loop op serves both here.
        self.implementation = int(implementation)
        self.seed = seed
        self.input_spec = InputSpec(ndim=3)

    def _weight_defaults(self):
        return {"recurrent": "orthogonal"}

    # -- weights -------------------------------------------------------------------
    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_initial(self, shape, dtype):
        return self._w.init["bias"](shape, dtype=dtype)

    def build(self, input_shape):
        if isinstance(input_shape, list):  # [x, *initial_states] (Keras 2 form)
            input_shape = input_shape[0]
        check_rank(self, input_shape, 3, "(batch, timesteps, features)")
        d = input_shape[-1]
        if d is None:
            raise ValueError(f"Layer '{self.name}' needs a known feature dimension. "
                             f"Received: input_shape={tuple(input_shape)}.")
        add_gate_weights(self, d)
        self.input_spec = InputSpec(ndim=3, axes={-1: d})
        if self.stateful:
            names = ["h", "c"] if self.cell == "lstm" else ["h"]
            self._build_states(input_shape[0], dict.fromkeys(names, self.units))
        self.built = True

    # -- call ------------------------------------------------------------------------
    def call(self, inputs, mask=None, training=None, initial_state=None):
        x, mask, initial_state = self._sequence(inputs, mask, initial_state)
        states = self._check_states(initial_state)
        if states is None and self._state_vars is not None:
            states = list(self._state_vars)
        hs, cs = run_loop(
            x, self.kernel, self.recurrent_kernel, self.bias, kind=self.cell,
            units=self.units, activation=self.activation,
            recurrent_activation=self.recurrent_activation, dropout=self.dropout,
            recurrent_dropout=self.recurrent_dropout, seed=self.seed, mask=mask,
            states=states, training=training, dtype=self.compute_dtype)
        last = hs[:, -1]
        if self._state_vars is not None:  # the next batch starts from here
            finals = [last] + ([cs[:, -1]] if self.cell == "lstm" else [])
            self.add_update([v.assign(f) for v, f in zip(self._state_vars, finals)])
        out = hs if self.return_sequences else last
        if self.return_sequences and mask is not None:
            set_mask(out, mask)
        if not self.return_state:
            return out
        return [out, last] + ([cs[:, -1]] if self.cell == "lstm" else [])

    def _check_states(self, initial_state):
        if initial_state is None:
            return None
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
            else [initial_state]
        want = 2 if self.cell == "lstm" else 1
        if len(states) != want:
            raise ValueError(
                f"Layer '{self.name}' expects {want} initial state tensor(s) of "
                f"shape (batch, {self.units}). Received: {len(states)}.")
        for s in states:
            shape = getattr(s, "shape", None)
            if shape is not None and shape[-1] is not None and \
                    shape[-1] != self.units:
                raise ValueError(
                    f"Layer '{self.name}' expects initial states of shape (batch, "
                    f"{self.units}). Received: shape={tuple(shape)}.")
        return states

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units, activation=self.activation, use_bias=self.use_bias,
            dropout=self.dropout, recurrent_dropout=self.recurrent_dropout,
            return_sequences=self.return_sequences, return_state=self.return_state,
            go_backwards=self.go_backwards, stateful=self.stateful,
            unroll=self.unroll, seed=self.seed, implementation=self.implementation,
            **self._w.config())
        if self.cell != "simple":
            config["recurrent_activation"] = self.recurrent_activation
        else:
            # Keras 3's SimpleRNN takes no `implementation` (its LSTM/GRU do).
            del config["implementation"]
        return config


class SimpleRNN(_RNN):
    """Fully connected recurrence ``h_t = activation(x_t W + h_{t-1} U + b)``
    (Elman 1990; Keras' ``SimpleRNN``).

    Args:
        units: state size. activation: default 'tanh'.
        use_bias, kernel_/recurrent_/bias_ initializer ('glorot_uniform',
        'orthogonal', 'zeros'), regularizer, constraint: as Dense's.
        dropout, recurrent_dropout: rates of the input and state masks (one
            mask per sequence, Gal & Ghahramani 2016), training only.
        return_sequences: output every step (batch, steps, units) instead of
            the last (batch, units). return_state: also return the final state.
        go_backwards: process the sequence reversed (outputs stay reversed).
        stateful: keep each sample's final state as the next batch's initial
            state (a static batch size is required; ``reset_states()`` zeroes
            them), as Keras. unroll, implementation: accepted; one loop op
            serves every setting.

    Input: float (batch, timesteps, features); ``mask`` (batch, timesteps) bool,
    or the mask of ``Embedding(mask_zero=True)`` / ``Masking``. Initial states:
    ``initial_state=[h]`` (``[h, c]`` for LSTM), or ``layer([x, h, c])`` in a
    functional model (whose replay feeds list inputs, not keyword tensors).

    Raises:
        ValueError: bad arguments; an input that is not rank 3 (naming the
            layer, expected and received shapes) or whose features differ from
            the built kernel.
    """

    cell, gates = "simple", 1

    def __init__(self, units, activation="tanh", **kwargs):
        kwargs.pop("recurrent_activation", None)
        super().__init__(units, activation=activation, **kwargs)


class LSTM(_RNN):
    """Long short-term memory (Hochreiter & Schmidhuber 1997; Keras' ``LSTM``).

    Gates i, f, c, o in that order in kernel (features, 4 * units), recurrent
    kernel (units, 4 * units) and bias (4 * units,); ``unit_forget_bias``
    initializes the forget gate's bias to 1 (Jozefowicz et al. 2015). Returns
    ``[output, h, c]`` with ``return_state``. Other arguments, input and errors
    as ``SimpleRNN`` (recurrent_activation default 'sigmoid').
    """

    cell, gates = "lstm", 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, **kwargs):
        self.unit_forget_bias = bool(unit_forget_bias)
        super().__init__(units, activation=activation,
                         recurrent_activation=recurrent_activation, **kwargs)

    def _bias_initial(self, shape, dtype):
        b = np.asarray(self._w.init["bias"](shape, dtype=dtype), dtype=dtype)
        if self.unit_forget_bias:
            b = b.copy()
            b[self.units:2 * self.units] = 1.0
        return b

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRU(_RNN):
    """Gated recurrent unit (Cho et al. 2014; Keras 3's ``GRU``): gates z, r, h.

    ``reset_after=True`` (default, the cuDNN-compatible form): the reset gate
    multiplies ``h R_h + b_rec``, and the bias is (2, 3 * units) for the input
    and recurrent products. ``reset_after=False`` (Keras' original form):
    ``hh = act(x W_h + (r * h) R_h + b_h)`` with a (3 * units,) bias. Other
    arguments, input and errors as ``SimpleRNN``.
    """

    cell, gates = "gru", 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, **kwargs):
        self.reset_after = bool(reset_after)
        if not self.reset_after:
            self.cell = "gru_v1"
        super().__init__(units, activation=activation,
                         recurrent_activation=recurrent_activation, **kwargs)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}
