"""What a layer call adds to the step being traced, and eager calls.

A step is traced once per input signature inside ``collect_updates()``: layers add
state updates (``add_update``, or plain ``var.assign`` in ``call``), loss terms
(``add_loss``) and logged means (``add_metric``) to it. An eager call on arrays
runs the layer through a trace cached per signature (as ``tf.function``
retraces only for a new input signature).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from kerasflow import backend as K
from kerasflow import tree

__all__ = ["collect_updates", "trace_losses", "TracingMixin"]

_ctx = threading.local()  # the training flag of the call being traced
_update_ctx = threading.local()


class _Collected(list):
    """State updates of one trace; ``.losses`` and ``.metrics`` hold what
    ``add_loss`` / ``add_metric`` contributed during it."""

    def __init__(self):
        super().__init__()
        self.losses: list = []
        self.metrics: list = []  # (name, tensor)


@contextlib.contextmanager
def collect_updates():
    """Collects the state updates layers add (``Layer.add_update``) while tracing.

    Yields:
        The list that receives each stateful tensor added inside the block
        (e.g. BatchNormalization's moving-statistics assignments); the train
        step runs them with every forward pass.
    """
    stack = _update_ctx.__dict__.setdefault("stack", [])
    found = _Collected()
    stack.append(found)
    try:
        with K.tracing() as trace:
            yield found
    finally:
        stack.pop()
    # Assignments made in call() without add_update (Keras' ``self.v.assign``)
    # run with the step too, each once.
    seen = {id(u) for u in found}
    found.extend(u for u in trace.stateful if id(u) not in seen)


def trace_losses() -> list:
    """Loss terms ``add_loss`` contributed so far to the innermost trace ([]
    outside one): what a traced ``compute_loss`` adds to the compiled loss."""
    stack = getattr(_update_ctx, "stack", None)
    return list(stack[-1].losses) if stack else []


def _after_updates(out, fn):
    """``out`` with each output that is a Variable re-read after the updates."""
    if fn._single:
        t = fn.outputs[0]
        return t.numpy() if isinstance(t, K.Variable) else out
    vals = iter([t.numpy() if isinstance(t, K.Variable) else v
                 for t, v in zip(fn.outputs, tree.flatten(out))])
    return tree.map_structure(lambda _: next(vals), out)


class TracingMixin:
    """``add_loss``, ``add_metric``, ``add_update`` and the eager-call cache of
    ``Layer``."""

    def add_loss(self, loss):
        """Adds a loss term (Keras' ``add_loss``) minimized with the compiled loss.

        Args:
            loss: a scalar tensor computed in ``call`` (it joins the step being
                traced), a tensor of a functional model's inputs, a
                zero-argument callable returning one, or a number.

        Raises:
            TypeError: anything else, naming it.
        """
        if not (K.is_symbolic(loss) or callable(loss) or isinstance(
                loss, (int, float, np.number, np.ndarray))):
            raise TypeError(f"add_loss takes a tensor, a callable or a number. "
                            f"Received: {type(loss).__name__}.")
        if not callable(loss) and not K.is_symbolic(loss):
            loss = K.constant(np.asarray(loss, K.floatx()))
        stack = getattr(_update_ctx, "stack", None)
        if stack and K.is_symbolic(loss):
            stack[-1].losses.append(loss)
        elif getattr(_update_ctx, "calls", 0) == 0 or not K.is_symbolic(loss):
            self.__dict__.setdefault("_added_losses", []).append(loss)
        # else: a symbolic call while building a functional graph; the train
        # step's trace replays the call and collects the loss then.

    def add_metric(self, value, name=None, aggregation="mean"):
        """Logs the batch mean of ``value`` under ``name`` (Keras 2's
        ``add_metric``), when called from ``call`` during training/evaluation.

        Raises:
            ValueError: no name, or an aggregation other than 'mean'.
        """
        if name is None or aggregation != "mean":
            raise ValueError(f"add_metric needs a name and aggregation='mean'. "
                             f"Received: name={name!r}, aggregation="
                             f"{aggregation!r}.")
        stack = getattr(_update_ctx, "stack", None)
        if stack and K.is_symbolic(value):
            stack[-1].metrics.append((name, value))

    def add_update(self, updates):
        """Adds state updates (stateful tensors such as ``var.assign(...)``).

        Inside a traced step (``collect_updates``) they run with every training
        and prediction step (a stateful RNN's states advance in ``predict`` as
        in Keras); in an eager call or outside a trace they are dropped.
        """
        stack = getattr(_update_ctx, "stack", None)
        ups = updates if isinstance(updates, (list, tuple)) else [updates]
        if stack:
            stack[-1].extend(u for u in ups if K.is_symbolic(u))

    def _call_eager(self, inputs, *args, **kwargs):
        """Runs the layer on arrays through a trace cached per input signature.

        The first call with a given structure, per-sample shapes and dtypes
        (and the same other arguments and training mode) traces the layer on
        placeholders and compiles a ``Function``; later calls only feed it, so
        repeated eager calls add no graph nodes, call records or memory (as
        ``tf.function`` retraces only for a new input signature). While a
        ``GradientTape`` records, the trace is a ``TapedCall`` instead (also
        cached): its outputs are recorded for ``tape.gradient``.
        """
        # None stays None: an optional model input left out (Keras 3).
        arrays = tree.map_structure(
            lambda a: None if a is None else np.asarray(a), inputs)
        flat = [a for a in tree.flatten(arrays) if a is not None]
        taped = K.tape_recording()
        key = _trace_key(inputs, flat, args, kwargs)
        if key is not None and taped:
            key = ("taped", key)
        cache = self.__dict__.get("_eager_traces")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_eager_traces", cache)
        entry = cache.get(key) if key is not None else None
        if entry is None:
            phs = tree.map_structure(
                lambda a: None if a is None else K.placeholder(
                    _placeholder_dtype(a.dtype, self.compute_dtype
                                       if self._convert_input_args
                                       else self.dtype),
                    (None,) + a.shape[1:]),
                arrays)
            before = {id(layer): layer.__dict__.get("_activity_penalty")
                      for layer in self._flatten_layers()} if taped else {}
            with collect_updates() as updates:
                outputs = self(phs, *args, **kwargs)
            fed = [p for p in tree.flatten(phs) if p is not None]
            if taped:  # this call's add_loss terms and activity penalties too
                added = list(updates.losses) + [
                    penalty for layer in self._flatten_layers()
                    if (penalty := layer.__dict__.get("_activity_penalty")) is not None
                    and penalty is not before.get(id(layer))]
                entry = K.TapedCall(fed, (outputs, added), updates,
                                    name=f"{self.name}_taped")
            else:
                entry = K.Function(fed, outputs, updates=updates,
                                   name=f"{self.name}_eager")
            if key is not None:
                if len(cache) >= _MAX_EAGER_TRACES:  # drop the oldest signature
                    cache.pop(next(iter(cache)))
                cache[key] = entry
        if taped:
            out, added = entry([a for a in tree.flatten(inputs) if a is not None])
            # What ``model.losses`` holds after this call (Keras' eager losses).
            object.__setattr__(self, "_eager_losses", list(added))
            return out
        out = entry(*flat)
        # Eagerly, code runs in order: an output that is a Variable shows the
        # value after this call's assignments (Keras), not the one read before.
        if entry.updates:
            out = _after_updates(out, entry)
        return K.to_numpy(out)

    def _clear_eager_traces(self):
        """Forgets cached eager traces (after the layer's structure changed)."""
        self.__dict__.pop("_eager_traces", None)


_MAX_EAGER_TRACES = 32


def _placeholder_dtype(dtype, layer_dtype=None):
    # Float arrays run in the layer's float dtype (Keras' autocast), else floatx.
    if dtype.kind in "fu" or dtype == np.uint8:
        return layer_dtype if layer_dtype and np.dtype(layer_dtype).kind == "f" \
            else K.floatx()
    return dtype


def _structure(x):
    if x is None:
        return "none"
    if isinstance(x, dict):
        return ("dict", tuple((k, _structure(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_structure(v) for v in x))
    return "leaf"


def _trace_key(inputs, flat_arrays, args, kwargs):
    """Hashable signature of an eager call, or None when an argument is not
    hashable (that call is traced afresh and not cached)."""
    key = (_structure(inputs),
           tuple((a.shape[1:], np.dtype(_placeholder_dtype(a.dtype)).str)
                 for a in flat_arrays),
           args, tuple(sorted(kwargs.items())), getattr(_ctx, "training", None))
    try:
        hash(key)
    except TypeError:
        return None
    return key
