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
* ``function(fn)``: accepted so TF 2-style programs run; the function runs as
  Python each call (no tracing of its own here: ``strategy.run`` inside it
  traces and caches its step, and kerasflow's ``fit`` compiles its graphs).
  ``experimental_get_tracing_count()`` counts the distinct input signatures
  seen, TF's retracing rule (structure, dtypes and shapes).
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.registry import apply, register_op
from kerasflow.compat.v1 import graph as G

__all__ = ["control_dependencies", "control_deps_of", "function", "print_op"]


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


def _signature(args, kwargs):
    def leaf(v):
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return ("array", tuple(v.shape), str(v.dtype))
        return ("py", repr(v))
    return repr(tree.map_structure(leaf, (list(args), dict(kwargs))))


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             experimental_relax_shapes=False, reduce_retracing=False, **kwargs):
    """``tf.function``: see the module docstring (runs ``func`` as Python)."""
    def wrap(f):
        seen = set()

        @functools.wraps(f)
        def call(*args, **kw):
            seen.add(_signature(args, kw))
            return f(*args, **kw)
        call.experimental_get_tracing_count = lambda: len(seen)
        call.python_function = f
        call.input_signature = input_signature
        return call
    return wrap if func is None else wrap(func)
