"""TF1 control flow: ``tf.map_fn``, ``tf.vectorized_map`` and ``tf.cond``.

``map_fn`` traces ``fn`` once on placeholders standing for one element
(slices along axis 0) into a sub-graph, as TF traces a ``while_loop`` body.
The graph gets one ``MapFn`` node whose kernel runs the compiled sub-graph
once per element and stacks the results, so the number of elements may be
unknown until run time (``placeholder([None, ...])``). Tensors from outside
that ``fn`` reads (placeholders, Variables, computed tensors) become inputs of
the node, fed whole to every call, so gradients reach them: the gradient of
a ``MapFn`` is another ``MapFn``, over the elements and the incoming
gradients, of ``fn``'s vector-Jacobian product; what it yields for outside
tensors is summed over the elements.

``cond`` with a run-time predicate builds both branches, runs both and
selects the taken branch's values elementwise (``where``): results and
gradients are TF's, but both branches' ops run, stateful ones (assignments,
``iterator.get_next()``) included.

Source: TensorFlow 1.15's ``tf.map_fn`` (``functional_ops.py``),
``tf.vectorized_map`` (``pfor``) and ``tf.cond`` (``control_flow_ops.py``).
"""

from __future__ import annotations

import threading

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.graph import Node, SymbolicTensor, walk
from kerasflow.backend.registry import (
    apply, get_op, register_gradient, register_op, register_op_family,
)
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.dtypes import resolve
from kerasflow.ops import control_flow as _cf

__all__ = ["cond", "map_fn", "vectorized_map"]

_LEAVES = ("Placeholder", "Const", "Variable")


class _Body:
    """``fn`` on one element as a closed sub-graph: ``feeds`` (per-element
    placeholders), ``captures`` (placeholders standing for outside tensors,
    fed whole) and ``outputs``; compiled on its first run."""

    def __init__(self, feeds, captures, outputs):
        self.feeds, self.captures = list(feeds), list(captures)
        self.outputs = list(outputs)
        self._function = None
        self._lock = threading.Lock()

    def __getstate__(self):
        # A graph pickled to another process carries the tensors, not the plan.
        return {"feeds": self.feeds, "captures": self.captures,
                "outputs": self.outputs}

    def __setstate__(self, state):
        self.__init__(**state)

    def function(self) -> K.Function:
        with self._lock:
            if self._function is None:
                self._function = K.Function(self.feeds + self.captures,
                                            self.outputs, name="map_fn_body")
        return self._function

    def draws_random(self) -> bool:
        stop = set(self.feeds + self.captures)
        nodes = walk(self.outputs, lambda n: () if any(
            t in stop for t in n.outputs) else n.inputs)
        return any(n.op not in _LEAVES and get_op(n.op).random for n in nodes)


def _close(feeds, outputs):
    """``outputs`` (built from ``feeds``) rewired so that every tensor made
    before ``feeds`` is read through a new placeholder.

    Returns:
        ``(outside tensors, their placeholders, rewired outputs)``.
    """
    start = min(f.node.id for f in feeds)
    feed_set = set(feeds)
    outside, captures, swap = [], [], {}

    def inside(t):
        return t in feed_set or t.node.id >= start or t.node.op == "Const"

    def inputs_of(node):
        # Stop at the feeds and at tensors from outside (read, not entered).
        if node.id < start or any(t in feed_set for t in node.outputs):
            return ()
        return node.inputs

    for t in outputs:  # an output read straight from outside
        if not inside(t) and t not in swap:
            swap[t] = K.placeholder(t.dtype, t.shape, name="map_fn_capture")
            outside.append(t)
            captures.append(swap[t])
    for node in walk(outputs, inputs_of):
        if node.id < start:
            continue
        for t in node.inputs:
            if not inside(t) and t not in swap:
                swap[t] = K.placeholder(t.dtype, t.shape, name="map_fn_capture")
                outside.append(t)
                captures.append(swap[t])
    return outside, captures, _rewire(outputs, swap)


def _rewire(outputs, swap):
    """``outputs`` recomputed with each tensor ``t`` in ``swap`` replaced by
    ``swap[t]``: the nodes between are copied, the rest kept."""
    stop = set(swap)
    new = dict(swap)
    for node in walk(outputs, lambda n: () if any(t in stop for t in n.outputs)
                     else n.inputs):
        if any(t in stop for t in node.outputs) or node.op in _LEAVES:
            continue
        inputs = [new.get(t, t) for t in node.inputs]
        if all(a is b for a, b in zip(inputs, node.inputs)):
            continue
        copy = Node(node.op, inputs, dict(node.attrs), node.name, scoped=False)
        copy.outputs = tuple(SymbolicTensor(copy, i, t.shape, t.dtype)
                             for i, t in enumerate(node.outputs))
        new.update(zip(node.outputs, copy.outputs))
    return [new.get(t, t) for t in outputs]


# -- the MapFn op ---------------------------------------------------------------------
def _map_infer(*specs, body, num_elems):
    lead = {s.shape[0] for s in specs[:num_elems] if s.shape[0] is not None}
    if len(lead) > 1:
        raise ValueError(f"map_fn expects elems with one size along axis 0. "
                         f"Received shapes: {[s.shape for s in specs[:num_elems]]}.")
    n = lead.pop() if lead else None
    specs = [((n,) + tuple(o.shape), o.dtype) for o in body.outputs]
    return specs if len(specs) > 1 else specs[0]


def _map_kernel(xp, *arrays, body, num_elems):
    elems, whole = arrays[:num_elems], arrays[num_elems:]
    n = elems[0].shape[0]
    if any(e.shape[0] != n for e in elems):
        raise ValueError(f"map_fn expects elems with one size along axis 0. "
                         f"Received shapes: {[tuple(e.shape) for e in elems]}.")
    fn = body.function()
    rows = [fn(*[e[i] for e in elems], *whole) for i in range(n)]
    if n == 0:
        outs = tuple(xp.zeros((0,) + tuple(d or 0 for d in o.shape), o.dtype)
                     for o in body.outputs)
    else:
        outs = tuple(xp.stack([xp.asarray(r[j]) for r in rows])
                     for j in range(len(body.outputs)))
    return outs if len(outs) > 1 else outs[0]


def _map_grad(node, *grads):
    body, k = node.attrs["body"], node.attrs["num_elems"]
    if body.draws_random():
        raise NotImplementedError(
            "The gradient of tf.map_fn through a fn that draws random values is "
            "not provided by kerasflow.compat.v1 (the backward pass would draw "
            "anew). Draw the values outside fn and pass them in elems.")
    elems, outside = node.inputs[:k], node.inputs[k:]
    used = [j for j, o in enumerate(body.outputs) if o.dtype.kind == "f"]
    g_feeds = [K.placeholder(body.outputs[j].dtype, body.outputs[j].shape,
                             name="map_fn_grad") for j in used]
    wrt = [t for t in body.feeds + body.captures if t.dtype.kind == "f"]
    if not used or not wrt:
        return (None,) * len(node.inputs)
    vjp = K.gradients([body.outputs[j] for j in used], wrt, grad_ys=g_feeds)
    found = [(t, g) for t, g in zip(wrt, vjp) if g is not None]
    if not found:
        return (None,) * len(node.inputs)
    grad_body = _Body(body.feeds + g_feeds, body.captures, [g for _, g in found])
    upstream = [K.zeros_like(node.outputs[j]) if grads[j] is None else grads[j]
                for j in used]
    outs = _apply_map(grad_body, list(elems) + upstream, list(outside))
    by_input = dict(zip([t for t, _ in found], outs))
    result = []
    for i, t in enumerate(body.feeds + body.captures):
        g = by_input.get(t)
        if g is not None and i >= k:  # a tensor fed whole: summed over elements
            g = K.sum(g, axis=0)
        result.append(g)
    return tuple(result)


_REGISTERED: set = set()


def _register_map(n):
    """The op ``MapFn<n>`` (n outputs), registered on first use."""
    name = f"MapFn{n}"
    if name not in _REGISTERED:
        _REGISTERED.add(name)
        register_op(name, _map_infer, num_outputs=n)(_map_kernel)
        register_gradient(name)(_map_grad)
    return name


register_op_family("MapFn", _register_map)


def _apply_map(body, elems, outside) -> list:
    outs = apply(_register_map(len(body.outputs)), *elems, *outside, body=body,
                 num_elems=len(elems))
    return [outs] if isinstance(outs, SymbolicTensor) else list(outs)


# -- public ----------------------------------------------------------------------------
def _check_dtypes(outputs, dtype):
    """Checks the traced outputs against ``dtype`` (TF1's declared output
    dtypes: one, or a structure with one per output)."""
    flat = tree.flatten(dtype)
    if len(flat) == 1 and len(outputs) > 1:
        flat = flat * len(outputs)
    if len(flat) != len(outputs):
        raise ValueError(f"map_fn's dtype names {len(flat)} outputs; fn returned "
                         f"{len(outputs)}. Received: dtype={dtype!r}.")
    for o, d in zip(outputs, flat):
        if np.dtype(o.dtype) != resolve(d):
            raise TypeError(f"map_fn's fn returned {o.dtype.name} where dtype says "
                            f"{resolve(d).name}. Received: dtype={dtype!r}.")


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """``fn`` applied to each element of ``elems`` along axis 0, the results
    stacked (TF's ``tf.map_fn``).

    Args:
        fn: callable taking one element (the structure of ``elems``, each
            tensor sliced at one index of axis 0) and returning a tensor or a
            nested structure of tensors. Traced once on placeholders; it may
            read tensors from outside (placeholders, Variables), which get
            gradients; Variables it creates itself get none.
        elems: a tensor or array (N, ...), or a nested structure of them with
            one N; N may be unknown until run time.
        dtype: the output dtype (a structure of them for several outputs), as
            TF1 needs when fn's outputs differ from elems; checked.
        back_prop: False stops gradients at the result.
        parallel_iterations, swap_memory, infer_shape: accepted for TF1
            programs; the elements run one after another.

    Returns:
        fn's output structure, each tensor (N,) + its per-element shape.

    Raises:
        TypeError: ``fn`` not callable; outputs not of ``dtype``.
        ValueError: elems of unknown rank, a scalar, or of different sizes
            along axis 0 (at run time if unknown before).
        NotImplementedError: gradients through a fn that draws random values.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 3])
        >>> sq = tf.map_fn(lambda row: tf.reduce_sum(row * row), x)
    """
    if not callable(fn):
        raise TypeError(f"map_fn expects a callable fn. Received: fn={fn!r}.")
    flat = [G.as_tensor(e) for e in tree.flatten(elems)]
    if not flat:
        raise ValueError("map_fn expects at least one tensor in elems. Received: "
                         f"elems={elems!r}.")
    for e in flat:
        if e.shape is None or len(e.shape) == 0:
            raise ValueError(f"map_fn expects elems of rank >= 1 (elements along "
                             f"axis 0). Received: {e!r}.")
    feeds = [K.placeholder(e.dtype, e.shape[1:], name="map_fn_elem") for e in flat]
    out = fn(tree.pack_sequence_as(elems, feeds))
    outputs = [G.as_tensor(o) for o in tree.flatten(out)]
    if dtype is not None:
        _check_dtypes(outputs, dtype)
    outside, captures, outputs = _close(feeds, outputs)
    body = _Body(feeds, captures, outputs)
    stacked = _apply_map(body, flat, outside)
    if not back_prop:
        stacked = [K.stop_gradient(t) for t in stacked]
    return tree.pack_sequence_as(out, G.track(stacked))


def vectorized_map(fn, elems, fallback_to_while_loop=True):
    """``fn`` applied to each element of ``elems`` along axis 0, results
    stacked: TF's semantics (``fn`` sees one element, never the batch),
    computed as ``map_fn`` does, one element after another."""
    return map_fn(fn, elems)


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None,
         fn2=None):
    """``true_fn()`` where ``pred`` holds, else ``false_fn()`` (TF1's
    ``tf.cond``).

    Both branches are built and, when the graph runs, both are computed; the
    values of the taken one are selected elementwise (``where``), so results
    and gradients are TF's but both branches' ops run, stateful ones
    (``tf.assign``, ``iterator.get_next()``) included.

    Args:
        pred: a scalar bool tensor (or array).
        true_fn, false_fn: callables without arguments returning matching
            structures of tensors (TF1's older ``fn1``, ``fn2`` too).
        strict: False unpacks a branch result that is a one-element list, as
            TF1 does.

    Returns:
        The selected structure, each tensor of the branches' broadcast shape.

    Raises:
        TypeError: ``pred`` a Python bool (TF1 refuses it: use an ``if``), or a
            branch not callable.
        ValueError: ``pred`` not a scalar, or branches returning different
            structures.
    """
    true_fn = fn1 if true_fn is None else true_fn
    false_fn = fn2 if false_fn is None else false_fn
    if isinstance(pred, bool):
        raise TypeError("tf.cond expects pred as a bool tensor; TF1 refuses a "
                        "Python bool (use a Python `if`). Received: "
                        f"pred={pred!r}.")
    for label, f in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(f):
            raise TypeError(f"tf.cond expects {label} to be callable. Received: "
                            f"{label}={f!r}.")
    p = G.as_tensor(pred)
    if p.shape is not None and len(p.shape) != 0:
        raise ValueError(f"tf.cond expects a scalar pred. Received: shape "
                         f"{tuple(p.shape)}.")
    if p.dtype.kind != "b":
        raise TypeError(f"tf.cond expects a bool pred. Received: dtype "
                        f"{p.dtype.name}.")

    def branch(f):
        def call():
            out = f()
            if not strict and isinstance(out, (list, tuple)) and len(out) == 1:
                out = out[0]
            return tree.map_structure(G.as_tensor, out)
        return call

    a, b = branch(true_fn)(), branch(false_fn)()
    try:
        tree.assert_same_structure(a, b)
    except (ValueError, TypeError) as e:
        raise ValueError(f"tf.cond expects true_fn and false_fn to return the same "
                         f"structure of tensors. Received: {e}") from None
    out = _cf.cond(p, lambda: a, lambda: b)
    return tree.map_structure(G.track, out)
