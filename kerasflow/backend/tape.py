"""``GradientTape``: TF2's gradient API on the graph backend.

Two modes, chosen by the target given to ``gradient``:

* **symbolic** (inside a traced ``train_step``, or on placeholders): the target
  is a graph tensor and ``gradient`` is ``backend.gradients(target, sources)``;
  the tape records nothing, the graph already knows how the target was made.
* **eager** (a training loop written from scratch on arrays): while the tape
  records, a layer called on arrays runs a ``TapedCall`` (traced and compiled
  once per input signature) and backend ops on its outputs are recorded; all
  return ``TapeArray``s, plain numpy arrays that point at their records; an
  op on a trainable Variable (``K.sum(K.square(w))``) runs on its value and
  records the read.
  ``gradient`` runs the records' backward functions in reverse order and sums
  what reaches each Variable.

Source: ``tf.GradientTape`` (TensorFlow 2), as Keras 3's guides use it.
"""

from __future__ import annotations

import contextlib

import numpy as np

from kerasflow import tree
from kerasflow.backend import registry
from kerasflow.backend.autodiff import gradients
from kerasflow.backend.graph import is_symbolic
from kerasflow.backend.ops.math import zeros_like
from kerasflow.backend.tape_array import TapeArray, tape_state
from kerasflow.backend.tape_call import read_variables, record_op
from kerasflow.backend.variables import Variable

__all__ = ["GradientTape"]

registry.set_tape_hook(record_op, read_variables)


class GradientTape:
    """Records computations to differentiate them (``tf.GradientTape``).

    Args:
        persistent: allow several ``gradient`` calls on one recording.
        watch_accessed_variables: accepted for TF compatibility; trainable
            Variables a recorded layer reads are always watched.

    Example:
        >>> with kf.GradientTape() as tape:
        ...     logits = model(x_batch, training=True)     # arrays in
        ...     loss = loss_fn(y_batch, logits)
        >>> grads = tape.gradient(loss, model.trainable_weights)
        >>> optimizer.apply_gradients(zip(grads, model.trainable_weights))
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self.persistent = bool(persistent)
        self.watch_accessed_variables = bool(watch_accessed_variables)
        self._watched: dict = {}  # id -> array, kept alive so ids stay unique
        self._used = False

    def __enter__(self):
        stack = tape_state.__dict__.setdefault("tapes", [])
        stack.append(self)
        return self

    def __exit__(self, *exc):
        stack = tape_state.tapes
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break
        return False

    def watch(self, tensor) -> None:
        """Differentiates against ``tensor`` (arrays: ops reading them record).

        A watched numpy array is recorded when a backend op or a layer reads
        it (``K.square(x)``), not by numpy's own operators (``x * x``), which
        kerasflow cannot see. Symbolic tensors need no watching: ``gradient``
        reaches any of them.
        """
        for t in tree.flatten(tensor):
            if not is_symbolic(t):
                self._watched[id(t)] = t

    def watched_ids(self) -> set:
        """Ids of the arrays ``watch`` was given."""
        return set(self._watched)

    @contextlib.contextmanager
    def stop_recording(self):
        """Computations inside this block are not recorded."""
        tape_state.paused = getattr(tape_state, "paused", 0) + 1
        try:
            yield
        finally:
            tape_state.paused -= 1

    def reset(self) -> None:
        """Forgets what was watched; the tape can compute gradients again."""
        self._watched.clear()
        self._used = False

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients="none"):
        """Gradients of ``target`` (summed if not scalar) w.r.t. ``sources``.

        Args:
            target: a scalar loss (or a structure of tensors): a graph tensor in
                a traced step, or an array this tape recorded.
            sources: a Variable, tensor or array, or a list/dict of them.
            output_gradients: initial gradients, one per target (default ones).
            unconnected_gradients: "none" (None where nothing flows) or "zero".

        Returns:
            The gradients in the structure of ``sources``: graph tensors in
            symbolic mode, numpy arrays in eager mode; None (or zeros) for a
            source the target does not depend on.

        Raises:
            RuntimeError: a second call on a non-persistent tape.
            ValueError: an unknown ``unconnected_gradients``.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"Unknown value for unconnected_gradients: "
                             f"'{unconnected_gradients}'. Expected 'none' or "
                             f"'zero'.")
        if self._used and not self.persistent:
            raise RuntimeError(
                "A non-persistent GradientTape can only be used to compute one "
                "set of gradients (or jacobians). Received: a second gradient() "
                "call; create the tape with persistent=True.")
        self._used = True
        targets, flat_src = tree.flatten(target), tree.flatten(sources)
        ogs = None if output_gradients is None else tree.flatten(output_gradients)
        symbolic = any(is_symbolic(t) for t in targets)
        if symbolic:
            grads = gradients(targets, flat_src, grad_ys=ogs)
        else:
            with self.stop_recording():
                grads = _eager_gradients(self, targets, flat_src, ogs)
        if unconnected_gradients == "zero":
            grads = [g if g is not None else zeros_like(s) if symbolic else
                     np.zeros(tuple(s.shape), s.dtype) for g, s in zip(grads, flat_src)]
        return tree.pack_sequence_as(sources, grads)


def _recorded(x, tid):
    rec = getattr(x, "_tape_rec", None) if isinstance(x, TapeArray) else None
    return rec if rec is not None and tid in rec.tapes else None


def _accumulate(store, key, g):
    prev = store.get(key)
    store[key] = g if prev is None else prev + g


def _eager_gradients(tape, targets, sources, output_gradients) -> list:
    """Reverse pass over the records reachable from ``targets``."""
    tid = id(tape)
    records, stack = {}, [r for r in (_recorded(t, tid) for t in targets) if r]
    while stack:
        rec = stack.pop()
        if id(rec) in records:
            continue
        records[id(rec)] = rec
        stack.extend(r for r in (_recorded(x, tid) for x in rec.inputs)
                     if r is not None and id(r) not in records)
    grads: dict = {}  # (id(record), output index) -> gradient
    for i, t in enumerate(targets):
        rec = _recorded(t, tid)
        if rec is not None:
            og = None if output_gradients is None else output_gradients[i]
            seed = np.ones_like(np.asarray(t)) if og is None else np.asarray(
                og, dtype=t.dtype)
            _accumulate(grads, (id(rec), t._tape_idx), seed)
    var_grads: dict = {}
    leaf_grads: dict = {}
    for rec in sorted(records.values(), key=lambda r: r.seq, reverse=True):
        upstream = [grads.get((id(rec), k)) for k in range(len(rec.specs))]
        if all(u is None for u in upstream):
            continue
        upstream = [np.zeros(shape, dtype) if u is None else u
                    for u, (shape, dtype) in zip(upstream, rec.specs)]
        input_grads, v_grads = rec.vjp(rec, upstream)
        for x, g in zip(rec.inputs, input_grads):
            if g is None:
                continue
            producer = _recorded(x, tid)
            if producer is not None and id(producer) in records:
                _accumulate(grads, (id(producer), x._tape_idx), g)
            elif id(x) in tape._watched:
                _accumulate(leaf_grads, id(x), g)
        for key, (_, g) in v_grads.items():
            _accumulate(var_grads, key, g)
    out = []
    for s in sources:
        if isinstance(s, Variable):
            out.append(var_grads.get(id(s)))
        elif _recorded(s, tid) is not None:
            out.append(grads.get((id(s._tape_rec), s._tape_idx)))
        else:
            out.append(leaf_grads.get(id(s)))
    return out
