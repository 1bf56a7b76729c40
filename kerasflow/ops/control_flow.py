"""Control flow of Keras 3's ``keras.ops``: ``cond``, ``switch``,
``while_loop``, ``fori_loop``, ``scan``, ``associative_scan``, ``map``,
``vectorized_map`` and ``custom_gradient``.

On arrays they run as Python control flow (Keras' numpy backend does the
same). On symbolic tensors the graph has no loop op, so loops of static
length are unrolled into the graph (gradients flow through every step), a
symbolic ``cond``/``switch`` evaluates every branch and selects with
``where``, and a symbolic ``while_loop`` needs ``maximum_iterations`` (it runs
that many masked steps). Source: Keras 3's ``keras.ops`` (JAX's ``lax``
semantics).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.ops.common import is_sym, tensor

__all__ = ["associative_scan", "cond", "custom_gradient", "fori_loop", "map", "scan",
           "switch", "vectorized_map", "while_loop"]


def _any_sym(*structures) -> bool:
    return any(is_sym(v) for s in structures for v in tree.flatten(s))


def _select(pred, a, b):
    """``where(pred, a, b)`` over matching nested structures."""
    return tree.map_structure(lambda u, v: K.where(pred, u, v), a, b)


def cond(pred, true_fn, false_fn):
    """``true_fn()`` if ``pred`` else ``false_fn()``. A symbolic scalar
    ``pred`` builds both branches (they must return matching structures of
    broadcastable tensors) and selects elementwise."""
    if not is_sym(pred):
        return true_fn() if bool(np.asarray(K.to_numpy(pred))) else false_fn()
    return _select(K.cast(pred, "bool"), true_fn(), false_fn())


def switch(index, branches, *operands):
    """``branches[index](*operands)``, ``index`` clipped to the valid range. A
    symbolic ``index`` builds every branch and selects elementwise.

    Raises:
        ValueError: no branches.
    """
    if not branches:
        raise ValueError("switch needs at least one branch. Received: branches=[].")
    n = len(branches)
    if not is_sym(index):
        i = int(np.clip(int(np.asarray(K.to_numpy(index))), 0, n - 1))
        return branches[i](*operands)
    idx = K.clip(K.cast(index, "int32"), 0, n - 1)
    out = branches[-1](*operands)
    for i in range(n - 2, -1, -1):
        out = _select(K.equal(idx, i), branches[i](*operands), out)
    return out


def while_loop(cond, body, loop_vars, maximum_iterations=None):  # noqa: A002
    """Repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``
    (at most ``maximum_iterations`` times). Symbolic loop variables need
    ``maximum_iterations``: that many steps are unrolled, each applied only
    while the condition still holds.

    Raises:
        ValueError: symbolic loop variables without ``maximum_iterations``.
    """
    is_tuple = isinstance(loop_vars, (list, tuple))
    vars_ = tuple(loop_vars) if is_tuple else (loop_vars,)

    def step(v):
        out = body(*v)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    if not _any_sym(vars_):
        i = 0
        while (maximum_iterations is None or i < maximum_iterations) and bool(
                np.asarray(K.to_numpy(cond(*vars_)))):
            vars_ = step(vars_)
            i += 1
        return vars_ if is_tuple else vars_[0]
    if maximum_iterations is None:
        raise ValueError("while_loop on symbolic tensors needs maximum_iterations "
                         "(the graph has no loop op; that many steps are "
                         "unrolled). Received: maximum_iterations=None.")
    running = None
    for _ in range(int(maximum_iterations)):
        c = K.cast(cond(*vars_), "bool")
        running = c if running is None else K.logical_and(running, c)
        vars_ = tuple(_select(running, n, o) for n, o in zip(step(vars_), vars_))
    return vars_ if is_tuple else vars_[0]


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (Python
    ints: unrolled in a graph).

    Raises:
        ValueError: symbolic bounds.
    """
    if is_sym(lower) or is_sym(upper):
        raise ValueError("fori_loop needs concrete bounds (ints) here. Received "
                         f"lower={lower!r}, upper={upper!r}.")
    val = init_val
    for i in range(int(np.asarray(K.to_numpy(lower))),
                   int(np.asarray(K.to_numpy(upper)))):
        val = body_fun(i, val)
    return val


def _stack(values):
    return K.stack([tensor(v) for v in values], axis=0)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs`` (or
    ``length`` steps with ``x = None``), returning the final carry and the
    stacked ``y`` (JAX's ``lax.scan``). Unrolled in a graph.

    Raises:
        TypeError: ``f`` not callable. ValueError: neither ``xs`` nor ``length``.
    """
    if not callable(f):
        raise TypeError(f"`f` should be a callable. Received: f={f}")
    if xs is None and length is None:
        raise ValueError("Got no `xs` to scan over and `length` not provided.")
    xs_flat = [] if xs is None else [tensor(v) for v in tree.flatten(xs)]
    n = int(length) if length is not None else int(xs_flat[0].shape[0])
    carry = tree.map_structure(tensor, init)
    ys = []
    steps = range(n - 1, -1, -1) if reverse else range(n)
    for i in steps:
        x = None if xs is None else tree.pack_sequence_as(
            xs, [v[i] for v in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    if not ys or ys[0] is None or (tree.is_nested(ys[0]) and not tree.flatten(
            ys[0])):
        return carry, ys[0] if ys else None
    stacked = [_stack(list(parts)) for parts in zip(*[tree.flatten(y) for y in ys])]
    return carry, tree.pack_sequence_as(ys[0], stacked)


def associative_scan(f, elems, reverse=False, axis=0):
    """Inclusive prefix combination ``out[i] = f(out[i - 1], elems[i])`` along
    ``axis`` for an associative ``f`` (JAX's ``lax.associative_scan``;
    evaluated sequentially, unrolled in a graph)."""
    if not callable(f):
        raise TypeError(f"`f` should be a callable. Received: f={f}")
    flat = [tensor(v) for v in tree.flatten(elems)]
    n = int(flat[0].shape[axis])

    def take(i):
        key = [slice(None)] * len(flat[0].shape)
        key[axis] = slice(i, i + 1)
        return tree.pack_sequence_as(elems, [v[tuple(key)] for v in flat])

    order = range(n - 1, -1, -1) if reverse else range(n)
    outs, acc = [], None
    for i in order:
        acc = take(i) if acc is None else f(acc, take(i))
        outs.append(acc)
    if reverse:
        outs = outs[::-1]
    parts = zip(*[tree.flatten(o) for o in outs])
    joined = [K.concatenate(list(p), axis=axis) for p in parts]
    return tree.pack_sequence_as(elems, joined)


def map(f, xs):  # noqa: A001  (Keras' name)
    """``f`` applied to each slice of ``xs`` along its leading axis, results
    stacked (unrolled in a graph)."""
    return scan(lambda _, x: ((), f(x)), (), xs)[1]


def vectorized_map(function, elements):
    """``function`` applied to each element along axis 0 of ``elements`` (a
    tensor, or a list/tuple of tensors passed as a list), results stacked."""
    if not isinstance(elements, (list, tuple)):
        return map(function, elements)
    flat = [tensor(e) for e in elements]
    n = int(flat[0].shape[0])
    return _stack([function([e[i] for e in flat]) for i in range(n)])


def custom_gradient(f):
    """Decorator for ``f(*args) -> (y, grad_fn)``, returning ``y`` (as Keras'
    numpy backend does). The graph keeps no Python closures (graphs pickle to
    Ray actors), so ``grad_fn`` is not installed as the gradient: in graphs
    ``y``'s gradient is that of the ops that computed it."""
    def wrapped(*args, **kwargs):
        return f(*args, **kwargs)[0]
    wrapped.__name__ = getattr(f, "__name__", "custom_gradient")
    wrapped.__doc__ = f.__doc__
    return wrapped
