"""TF 1.14+ names a TF1 program also uses: ``tf.control_dependencies``,
``tf.print``, ``tf.function`` and ``tf.compat.v1`` (the aliases ``tf.keras``,
``tf.distribute``, ``tf.GradientTape`` live in the package ``__init__``).

* ``control_dependencies(deps)``: ops created inside the block run only after
  ``deps`` ran (TF1 graph semantics). The block's node-id range is recorded
  on the default graph, as ``tf.device`` records its range; a ``Session.run``
  whose fetches reach a node created inside first runs the block's ``deps``
  (with the same feeds), then the fetches.
* ``print(*inputs)``: eagerly prints at once; given a tensor, returns an op
  that prints the inputs' values each time it runs (fetch it, or name it in
  ``control_dependencies``), as TF's ``PrintV2``.
* ``function(fn)``: traced once per input signature into a compiled plan
  (:class:`Function`); with ``PerReplica`` arguments it runs as Python and
  ``strategy.run`` inside traces its own step.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.eager import as_eager
from kerasflow.backend.registry import apply, register_op
from kerasflow.compat.v1 import graph as G
from kerasflow.distribute.values import PerReplica
from kerasflow.metrics import PendingResult

__all__ = ["Function", "TensorSpec", "control_dependencies", "control_deps_of",
           "function", "print_op"]


@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Ops created inside run after ``control_inputs`` (a list of ops or
    tensors; None clears nothing here).

    Raises:
        TypeError: ``control_inputs`` is not a list/tuple of graph ops or None.
    """
    deps = [] if control_inputs is None else control_inputs
    if not isinstance(deps, (list, tuple)):
        raise TypeError(f"tf.control_dependencies expects a list of ops. Received: "
                        f"{type(control_inputs).__name__}")
    deps = [d for d in tree.flatten(list(deps)) if d is not None]
    bad = [d for d in deps if not K.is_symbolic(d)]
    if bad:
        raise TypeError(f"tf.control_dependencies expects graph ops or tensors. "
                        f"Received: {bad[0]!r}")
    graph = G.get_default_graph()
    entry = [K.no_op().node.id, float("inf"), deps]
    graph.control_deps.append(entry)
    try:
        yield
    finally:
        entry[1] = K.no_op().node.id


def control_deps_of(graph, nodes) -> list:
    """The ``control_dependencies`` ops that ``nodes`` (a fetch's subgraph)
    wait for, in block order, each once."""
    out, seen = [], set()
    for first, last, deps in graph.control_deps:
        if any(first < n.id < last for n in nodes):
            for d in deps:
                if id(d) not in seen:
                    seen.add(id(d))
                    out.append(d)
    return out


def _print_infer(*inputs, **attrs):
    return (), "bool"


@register_op("PrintV2", _print_infer, differentiable=False)
def _print_kernel(xp, *arrays, template, stream, summarize):
    values = [np.asarray(K.to_numpy(a)) for a in arrays]
    parts = iter([str(v.item()) if v.ndim == 0 else np.array2string(
        v, threshold=summarize * 2 + 1, edgeitems=summarize) for v in values])
    text = "".join(next(parts) if p is None else p for p in template)
    print(text, file=sys.stderr if stream == "stderr" else sys.stdout, flush=True)
    return None


def print_op(*inputs, output_stream=sys.stderr, summarize=3, sep=" ", end="\n",
             name=None):
    """TF's ``tf.print``: prints at once when no input is a tensor, else
    returns an op printing the values each time it runs.

    Raises:
        ValueError: ``output_stream`` is not sys.stdout / sys.stderr.
    """
    if output_stream not in (sys.stdout, sys.stderr):
        raise ValueError(f"tf.print expects output_stream sys.stdout or sys.stderr. "
                         f"Received: {output_stream!r}")
    stream = "stdout" if output_stream is sys.stdout else "stderr"
    tensors = [x for x in inputs if K.is_symbolic(x)]
    if not tensors:
        print(*inputs, sep=sep, end=end, file=output_stream, flush=True)
        return None
    template = []
    for i, x in enumerate(inputs):
        if i:
            template.append(sep)
        template.append(None if K.is_symbolic(x) else str(x))
    template.append(end.rstrip("\n"))
    return apply("PrintV2", *tensors, template=tuple(template), stream=stream,
                 summarize=int(summarize))


class TensorSpec:
    """``tf.TensorSpec(shape, dtype, name)``: one input of a
    ``tf.function``'s ``input_signature`` (None dims match any size)."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = None if shape is None else tuple(shape)
        self.dtype = np.dtype(getattr(dtype, "name", dtype)).name
        self.name = name

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r})"


class Function:
    """A ``tf.function``: ``fn`` traced into a graph once per input
    signature, then run as one compiled plan per call.

    The signature is TF's: the structure of the arguments, each array's
    shape and dtype (or the ``input_signature``'s ``TensorSpec``, None dims
    matching any size) and every other argument's value. Inside the trace,
    Variable updates (``assign``, ``optimizer.apply_gradients``, metric
    updates) become the plan's updates and later reads see them (TF's
    automatic control dependencies); Python side effects run at trace time
    only, as in TF. Called with ``PerReplica`` values (a distributed
    dataset's) or on tensors inside another trace, ``fn`` runs as Python:
    ``strategy.run`` traces its own step, and the caller's trace takes the
    ops.

    Raises:
        TypeError: arguments that do not match ``input_signature``.
    """

    def __init__(self, fn, input_signature=None):
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.input_signature = None if input_signature is None else list(input_signature)
        self._traces = {}

    def experimental_get_tracing_count(self) -> int:
        """Traces made so far (one per distinct input signature)."""
        return len(self._traces)

    def _spec(self, args, kwargs):
        leaves = tree.flatten((list(args), dict(kwargs)))
        if self.input_signature is not None:
            specs = tree.flatten(self.input_signature)
            arrays = [v for v in leaves if hasattr(v, "shape")]
            if len(specs) != len(arrays):
                raise TypeError(f"{self.__name__} expects {len(specs)} tensors "
                                f"(input_signature). Received: {len(arrays)}")
            for spec, a in zip(specs, arrays):
                shape = tuple(np.shape(a))
                if spec.shape is not None and (len(shape) != len(spec.shape) or any(
                        d is not None and d != s for d, s in zip(spec.shape, shape))):
                    raise TypeError(f"{self.__name__}'s input_signature expects shape "
                                    f"{spec.shape}. Received: {shape}")
        return leaves

    def __call__(self, *args, **kwargs):
        leaves = self._spec(args, kwargs)
        if any(isinstance(v, PerReplica) or K.is_symbolic(v) for v in leaves):
            return self.python_function(*args, **kwargs)
        specs = iter(tree.flatten(self.input_signature or []))
        key, phs = [], []
        for v in leaves:
            if hasattr(v, "shape") and hasattr(v, "dtype"):
                spec = next(specs, None)
                shape = spec.shape if spec is not None and spec.shape is not None \
                    else tuple(np.shape(v))
                key.append(("array", shape, str(np.dtype(v.dtype))))
                phs.append((shape, str(np.dtype(v.dtype))))
            else:
                key.append(("py", repr(v)))
                phs.append(None)
        key = (repr(tree.map_structure(lambda _: 0, (list(args), dict(kwargs)))),
               tuple(key))
        trace = self._traces.get(key)
        if trace is None:
            trace = self._traces[key] = self._trace(args, kwargs, leaves, phs)
        plan, feeds, struct, consts = trace
        values = iter(plan(*[np.asarray(v) for v, p in zip(leaves, phs)
                             if p is not None]) if feeds else plan())
        flat = [next(values) if c is _FETCHED else c for c in consts]
        # a metric's result computed on the host, after the plan's updates
        flat = [c.metric.result() if isinstance(c, PendingResult) else c for c in flat]
        # TF 2's eager results: arrays with .numpy() (views, no copy).
        flat = [as_eager(v) if isinstance(v, (np.ndarray, np.generic)) else v
                for v in flat]
        return None if struct is None else tree.pack_sequence_as(struct, flat)

    def _trace(self, args, kwargs, leaves, phs):
        from kerasflow.backend.sequencing import sequential_reads
        from kerasflow.layers.tracing import collect_updates

        inputs = [K.placeholder(p[1], p[0], name=f"fn_in_{i}") if p else v
                  for i, (v, p) in enumerate(zip(leaves, phs))]
        a, kw = tree.pack_sequence_as((list(args), dict(kwargs)), inputs)
        with collect_updates() as updates, sequential_reads():
            out = self.python_function(*a, **kw)
        flat = [] if out is None else tree.flatten(out)
        fetched = [t for t in flat if K.is_symbolic(t)]
        consts = [_FETCHED if K.is_symbolic(t) else t for t in flat]
        feeds = [p for p, s in zip(inputs, phs) if s is not None]
        plan = K.Function(feeds, fetched, updates=list(updates),
                          name=f"tf_function_{self.__name__}")
        return plan, feeds, (None if out is None else out), consts


_FETCHED = object()


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             experimental_relax_shapes=False, reduce_retracing=False, **kwargs):
    """``tf.function``: see :class:`Function` (as a decorator, with or
    without arguments)."""
    def wrap(f):
        return Function(f, input_signature)
    return wrap if func is None else wrap(func)
