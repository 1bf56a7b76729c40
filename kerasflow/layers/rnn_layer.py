"""``RNN``: runs a recurrent cell over a sequence (Keras 3's
``keras.layers.RNN``).

The built-in cells (``SimpleRNNCell``, ``LSTMCell``, ``GRUCell`` with
activations the loop op knows), alone or stacked, run in one ``rnn_loop`` op
per cell, as ``SimpleRNN`` / ``LSTM`` / ``GRU`` do. Any other cell is unrolled
over the (static) time steps, calling its ``call(inputs, states)`` once per
step.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers._masks import set_mask
from kerasflow.layers._utils import check_rank
from kerasflow.layers.base import InputSpec
from kerasflow.layers.layer_helpers import call_params
from kerasflow.layers.recurrent import _Recurrence, run_loop
from kerasflow.layers.rnn_cells import StackedRNNCells, _Cell, state_sizes
from kerasflow.utils.serialization import serialize_object

__all__ = ["RNN"]


def _against(mask, x):
    """``mask`` with trailing unit axes to broadcast against ``x``."""
    for _ in range(len(x.shape) - len(mask.shape)):
        mask = K.expand_dims(mask, -1)
    return mask


def _is_cell(cell):
    return hasattr(cell, "call") and hasattr(cell, "state_size")


class RNN(_Recurrence):
    """Runs ``cell`` over the time axis (Keras 3's ``RNN``).

    Args:
        cell: a cell (a layer with ``state_size`` — an int or a list of ints —
            and ``call(inputs, states[, training])`` returning ``(output,
            new_states)``), or a list of cells (a ``StackedRNNCells``).
        return_sequences: output every step (batch, steps, output_size)
            instead of the last (batch, output_size).
        return_state: also return the final states: ``[output, *states]``
            (for stacked cells ``[output, states_of_cell_1, ...]``, one list
            per cell, as Keras).
        go_backwards: process the sequence reversed (outputs stay reversed).
        stateful: keep each sample's final states for the next batch (a
            static batch size is needed; ``reset_states()`` zeroes them).
        unroll: accepted; built-in cells always run in one loop op, other
            cells are always unrolled.
        zero_output_for_mask: with ``return_sequences``, zeros (instead of
            the previous output) at masked steps.

    Input: float (batch, steps, features); ``mask`` bool (batch, steps) or the
    mask the input carries; ``initial_state``: a list of (batch, size) tensors,
    one per state, or ``layer([x, *states])``.

    Raises:
        ValueError: ``cell`` is not a cell; an input not of rank 3; initial
            states of another count; a cell other than the built-in ones on
            sequences of unknown length.

    Example:
        >>> layer = RNN(LSTMCell(8), return_sequences=True)
    """

    def __init__(self, cell, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False,
                 zero_output_for_mask=False, **kwargs):
        super().__init__(return_sequences, return_state, go_backwards, stateful,
                         unroll, **kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not _is_cell(cell):
            raise ValueError(f"Argument `cell` should have a `call` method and a "
                             f"`state_size` attribute. Received: cell={cell!r}.")
        self.cell = cell
        self.zero_output_for_mask = bool(zero_output_for_mask)
        # A step of a convolutional cell is an image, not a vector.
        self._step_ndim = int(getattr(cell, "step_ndim", 2))
        if self.stateful and self._step_ndim != 2:
            raise NotImplementedError(f"stateful=True is supported for cells of "
                                      f"vector states only. Received: cell="
                                      f"{type(cell).__name__}.")
        self.input_spec = InputSpec(ndim=self._step_ndim + 1)

    # -- build ------------------------------------------------------------------------
    def build(self, input_shape):
        if isinstance(input_shape, list) and input_shape and not isinstance(
                input_shape[0], (int, np.integer, type(None))):
            input_shape = input_shape[0]  # [x, *initial_states]
        check_rank(self, input_shape, self._step_ndim + 1,
                   "(batch, timesteps, features)" if self._step_ndim == 2 else
                   "(batch, timesteps, *spatial, channels)")
        step = (input_shape[0],) + tuple(input_shape[2:])
        if not self.cell.built:
            with K.name_scope(self.cell.name):
                self.cell.build(step)
            self.cell.built = True
        if self.stateful:
            self._build_states(input_shape[0],
                               dict(enumerate(state_sizes(self.cell))))
        self.built = True

    # -- call -------------------------------------------------------------------------
    def call(self, inputs, mask=None, training=None, initial_state=None):
        x, mask, initial_state = self._sequence(inputs, mask, initial_state)
        if mask is not None and mask.dtype != np.dtype(bool):
            mask = K.cast(mask, "bool")
        if x.dtype != np.dtype(self.compute_dtype):
            x = K.cast(x, self.compute_dtype)
        states = self._initial_states(x, initial_state)
        cells = self._loop_cells()
        if cells is not None:
            hs, finals = self._run_loops(cells, x, mask, states, training)
            last = hs[:, -1]
        else:
            hs, last, finals = self._unroll(x, mask, states, training)
        if self._state_vars is not None:
            self.add_update([v.assign(f) for v, f in zip(self._state_vars, finals)])
        out = last
        if self.return_sequences:
            out = hs
            if mask is not None:
                if self.zero_output_for_mask:
                    out = K.where(_against(mask, hs), hs, K.zeros_like(hs))
                set_mask(out, mask)
        if not self.return_state:
            return out
        if isinstance(self.cell, StackedRNNCells):
            it = iter(finals)
            return [out] + [[next(it) for _ in state_sizes(c)]
                            for c in self.cell.cells]
        return [out] + list(finals)

    def _initial_states(self, x, initial_state):
        sizes = state_sizes(self.cell)
        if initial_state is None:
            if self._state_vars is not None:
                return list(self._state_vars)
            like = getattr(self.cell, "zero_states_like", None)
            if like is not None:  # states whose shape follows the input's
                return like(x[:, 0])
            zero = K.zeros_like(x[:, 0, :1])
            return [zero * np.zeros(n, self.compute_dtype) for n in sizes]
        given = tree.flatten(initial_state)
        if len(given) != len(sizes):
            raise ValueError(
                f"Layer '{self.name}' expects {len(sizes)} initial state "
                f"tensor(s) of sizes {sizes}. Received: {len(given)}.")
        for s, n in zip(given, sizes):
            shape = getattr(s, "shape", None)
            if shape is not None and shape[-1] is not None and shape[-1] != n:
                raise ValueError(
                    f"Layer '{self.name}' expects initial states of sizes "
                    f"{sizes}. Received: shape={tuple(shape)} for size {n}.")
        return [s if K.is_symbolic(s) else np.asarray(s, self.compute_dtype)
                for s in given]

    def _loop_cells(self):
        """The built-in cells to run as loop ops, or None (unroll instead)."""
        cells = self.cell.cells if isinstance(self.cell, StackedRNNCells) \
            else [self.cell]
        ok = all(isinstance(c, _Cell) and c.loop_activations() is not None
                 for c in cells)
        return cells if ok else None

    def _run_loops(self, cells, x, mask, states, training):
        finals, pos = [], 0
        for c in cells:
            n = len(state_sizes(c))
            act, rec = c.loop_activations()
            hs, cs = run_loop(
                x, c.kernel, c.recurrent_kernel, c.bias, kind=c.kind,
                units=c.units, activation=act, recurrent_activation=rec,
                dropout=c.dropout, recurrent_dropout=c.recurrent_dropout,
                seed=c.seed, mask=mask, states=states[pos:pos + n],
                training=training, dtype=self.compute_dtype)
            finals += [hs[:, -1]] + ([cs[:, -1]] if c.kind == "lstm" else [])
            pos += n
            x = hs
        return hs, finals

    def _step_states(self, flat):
        """Flat states in the structure the cell's ``call`` takes."""
        if isinstance(self.cell, StackedRNNCells):
            it = iter(flat)
            return [[next(it) for _ in state_sizes(c)] for c in self.cell.cells]
        return list(flat)

    def _unroll(self, x, mask, states, training):
        steps = x.shape[1]
        if steps is None:
            raise ValueError(
                f"Layer '{self.name}' unrolls cell '{self.cell.name}' over the "
                f"time steps, which must be known. Received: input shape "
                f"{tuple(x.shape)}; give the Input a fixed length or use a "
                f"built-in cell.")
        kw = {"training": training} if "training" in call_params(
            type(self.cell)) else {}
        cells = self.cell.cells if isinstance(self.cell, StackedRNNCells) \
            else [self.cell]
        # Keras draws each cell's dropout masks once per sequence.
        zero, width = K.zeros_like(x[:, 0, :1]), x.shape[-1]
        for c in cells:
            if isinstance(c, _Cell):
                c._sequence_masks = c._masks(
                    zero * np.zeros(width, self.compute_dtype),
                    zero * np.zeros(c.units, self.compute_dtype), training)
            width = getattr(c, "output_size", None) or state_sizes(c)[0]
        outs, prev = [], None
        try:
            for t in range(steps):
                out, new = self.cell.call(x[:, t], self._step_states(states), **kw)
                new = tree.flatten(new)
                if mask is not None:
                    m = mask[:, t]
                    new = [K.where(_against(m, n), n, s)
                           for n, s in zip(new, states)]
                    out = K.where(_against(m, out), out, K.zeros_like(out)
                                  if prev is None else prev)
                outs.append(out)
                states, prev = new, out
        finally:
            for c in cells:
                if isinstance(c, _Cell):
                    c._sequence_masks = None
        return K.stack(outs, axis=1), prev, states

    def get_config(self):
        return {**super().get_config(), "cell": serialize_object(self.cell),
                "return_sequences": self.return_sequences,
                "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kerasflow.layers import deserialize  # the package imports this module

        config = dict(config)
        config["cell"] = deserialize(config["cell"], custom_objects)
        return cls(**config)
