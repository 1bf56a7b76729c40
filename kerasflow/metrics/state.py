"""Recording of metric state updates made inside ``update_state``.

Keras' custom metrics update their state by calling ``self.v.assign_add(x)``
and return nothing (keras.io, "Training & evaluation with the built-in
methods", ``CategoricalTruePositives``). In a graph that assignment is an op
nobody fetches. Here a metric's Variables are ``MetricVariable``s: while an
``update_state`` wrapped by ``recording_update`` traces symbolic inputs, each
assignment to one of them is recorded on a thread-local stack and returned with
the ops ``update_state`` returned itself, so the caller runs it once per batch.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from kerasflow.backend import Function, Variable, placeholder, to_numpy
from kerasflow.backend.graph import in_tracing, is_symbolic, record_stateful, tracing

__all__ = ["MetricVariable", "PendingResult", "host_result", "record_assignments",
           "recording_update"]


def _out(x):
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


_rec = threading.local()


class _Frame:
    """The assignments one ``update_state`` call made; ``symbolic`` when it
    traces symbolic inputs (else its symbolic assignments run when it returns)."""

    __slots__ = ("ops", "symbolic")

    def __init__(self, symbolic):
        self.symbolic, self.ops = symbolic, []


def _collectors() -> list:
    stack = getattr(_rec, "stack", None)
    if stack is None:
        stack = _rec.stack = []
    return stack


class MetricVariable(Variable):
    """A metric's state Variable: assignments with a symbolic value made inside
    ``update_state`` are recorded as that call's update ops; an eager assignment
    while tracing symbolic inputs is refused (it would change the state once, at
    trace time, instead of once per batch)."""

    def _record(self, op):
        stack = _collectors()
        if stack:
            stack[-1].ops.append(op)
        return op

    def _check_eager(self, value):
        stack = _collectors()
        if stack and stack[-1].symbolic:
            raise TypeError(
                f"Metric variable '{self.name}' was assigned a non-symbolic value "
                f"while update_state() traced symbolic inputs: the update would "
                f"run once now instead of once per batch. Compute the value with "
                f"backend ops (e.g. ops.equal(a, b), not a == b, which compares "
                f"tensor identity). Received: value of type {type(value).__name__}."
            )

    def assign(self, value):
        if is_symbolic(value):
            return self._record(super().assign(value))
        self._check_eager(value)
        return super().assign(value)

    def assign_add(self, delta):
        if is_symbolic(delta):
            return self._record(super().assign_add(delta))
        self._check_eager(delta)
        return super().assign_add(delta)

    def assign_sub(self, delta):
        if is_symbolic(delta):
            return self._record(super().assign_sub(delta))
        self._check_eager(delta)
        return super().assign_sub(delta)


def _any_symbolic(args, kwargs) -> bool:
    stack = [*args, *kwargs.values()]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif is_symbolic(x):
            return True
    return False


_UNTRACEABLE = object()


def _signature(args, kwargs):
    """Hashable signature of a call on arrays (and None), else None."""
    sig = []
    for x in list(args) + [kwargs[k] for k in sorted(kwargs)]:
        if x is None:
            sig.append(None)
        elif isinstance(x, np.ndarray):
            sig.append((x.shape[1:] if x.ndim else None, x.dtype.str))
        else:
            return None
    return tuple(sig), tuple(sorted(kwargs))


def _run_cached(metric, wrapped, args, kwargs) -> bool:
    """Runs an eager ``update_state`` through a compiled trace of it, cached
    per signature (as layers' eager calls are); False when it cannot be
    traced (it then runs eagerly, as written)."""
    sig = _signature(args, kwargs)
    if sig is None:
        return False
    cache = metric.__dict__.setdefault("_eager_updates", {})
    fn = cache.get(sig)
    if fn is None:
        def ph(x):
            return None if x is None else placeholder(
                x.dtype, (None,) + x.shape[1:] if x.ndim else ())
        phs = [ph(x) for x in args]
        kw = {k: ph(v) for k, v in kwargs.items()}
        try:
            with tracing():  # graph only, even inside a recording tape
                ops = wrapped(metric, *phs, **kw)
        except (TypeError, ValueError, NotImplementedError):
            ops = None  # written for arrays only: keep running it eagerly
        fed = [p for p in phs + list(kw.values()) if p is not None]
        fn = cache[sig] = Function(fed, [], updates=ops,
                                   name=f"{metric.name}_update") if ops \
            else _UNTRACEABLE
    if fn is _UNTRACEABLE:
        return False
    fn(*[x for x in list(args) + list(kwargs.values()) if x is not None])
    return True


def recording_update(update_state):
    """Wraps ``update_state``: on symbolic inputs, returns the ops it returned
    plus every recorded assignment to a metric Variable, each once. On arrays
    it runs a compiled trace of itself, cached per signature."""

    @functools.wraps(update_state)
    def wrapped(self, *args, **kwargs):
        symbolic = _any_symbolic(args, kwargs)
        stack = _collectors()
        if (not symbolic and not stack and not in_tracing()
                and _run_cached(self, wrapped, args, kwargs)):
            return []
        stack.append(_Frame(symbolic))
        try:
            returned = update_state(self, *args, **kwargs)
        finally:
            recorded = stack.pop().ops
        if not symbolic:
            # Eager inputs, yet an op built from the state Variables themselves
            # (``v.assign(ops.maximum(v, x))``): run it now, as Keras would.
            pending = recorded
            if pending:
                Function([], [], updates=pending, name=f"{self.name}_update")()
            return []
        ops_out = [] if returned is None else (
            list(returned) if isinstance(returned, (list, tuple)) else [returned])
        seen = {id(op) for op in ops_out}
        ops_out += [op for op in recorded if id(op) not in seen]
        if stack:  # a caller's update_state: it sees these ops too
            stack[-1].ops.extend(ops_out)
        elif in_tracing():
            # A traced train_step that ignores the returned ops (Keras style):
            # they join the step being traced.
            for op in ops_out:
                record_stateful(op)
        return ops_out

    wrapped._records_updates = True
    return wrapped


def record_assignments(fn, *args) -> list:
    """Traces ``fn(*args)`` (unwrapped from ``recording_update``) as graph:
    returns the ops it returned plus every assignment with a symbolic value
    it made to a metric Variable, each once, without running any.

    Raises:
        TypeError: ``fn`` assigned a metric Variable a non-symbolic value.
    """
    fn = getattr(fn, "__wrapped__", fn)
    stack = _collectors()
    stack.append(_Frame(True))
    try:
        returned = fn(*args)
    finally:
        recorded = stack.pop().ops
    ops_out = [] if returned is None else (
        list(returned) if isinstance(returned, (list, tuple)) else [returned])
    seen = {id(op) for op in ops_out}
    return ops_out + [op for op in recorded if id(op) not in seen]


class PendingResult:
    """What ``metric.result()`` returns while a step is traced and the result
    is computed on the host: the traced step reads ``metric.result()`` once
    its updates have run (a custom ``train_step``'s logs)."""

    __slots__ = ("metric",)

    def __init__(self, metric):
        self.metric = metric

    def value(self):
        """The metric's result now."""
        return self.metric.result()

    def __repr__(self):
        return f"<PendingResult of metric '{self.metric.name}'>"


def host_result(result):
    """Wraps ``result`` so a Variable, an expression of Variables, an array or a
    number comes back as a float (or a numpy array for vector results); while
    a step is traced (a custom ``train_step``), the tensor itself, so the step
    reports the result after each batch's update."""

    @functools.wraps(result)
    def wrapped(self):
        if in_tracing():
            value = result(self)
            return value if is_symbolic(value) else PendingResult(self)
        value = result(self)
        if isinstance(value, Variable):
            return _out(value.numpy())
        if is_symbolic(value):  # an expression of the state Variables
            return _out(to_numpy(Function([], [value])()[0]))
        if isinstance(value, (float, dict)):
            return value
        return _out(value)

    wrapped._records_updates = True
    return wrapped
