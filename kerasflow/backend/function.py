"""Execution: ``Function`` compiles a subgraph once; ``Session`` is the TF1 facade.

A ``Function(inputs, outputs, updates)`` prunes the graph to what its outputs and
updates need, orders it topologically (stateful nodes as late as possible, so
updates see and change nothing that an output reads) and turns it into one
straight-line Python function, one line per node, with each kernel pre-bound to
its array module and attributes. Running it costs one Python call per node; the
intermediate arrays are released as soon as their last consumer has run.
An output whose op writes into a given array (``writes_out``: MatMul) can be
computed straight into a caller's buffer (``into=``), as a data-parallel
replica does with its gradients and the collective's buffer.
"""

from __future__ import annotations

import functools
from collections import deque

import numpy as np

from kerasflow import tree
from kerasflow.backend import array as _array
from kerasflow.backend import default_session as _default
from kerasflow.backend import fusion as _fusion
from kerasflow.backend.feeding import cast_fed
from kerasflow.backend.graph import SymbolicTensor
from kerasflow.backend.ops.random import make_rng
from kerasflow.backend.ops.state import assign
from kerasflow.backend.registry import get_op
from kerasflow.backend.variables import Variable

__all__ = ["Function", "Session", "function"]


def _schedule(roots, fed):
    """Nodes needed for ``roots`` in topological order, stateful ones deferred."""
    needed, stack = {}, [t.node for t in roots if t not in fed]
    while stack:
        node = stack.pop()
        if node.id in needed:
            continue
        needed[node.id] = node
        for t in node.inputs:
            if t not in fed and t.node.id not in needed:
                stack.append(t.node)
    indeg = {nid: 0 for nid in needed}
    users: dict[int, list] = {nid: [] for nid in needed}
    for nid, node in needed.items():
        deps = {t.node.id for t in node.inputs if t not in fed}
        indeg[nid] = len(deps)
        for d in deps:
            users[d].append(nid)
    ready, late = deque(), deque()  # late: stateful nodes, run when nothing else is

    def push(nid):
        (late if _is_stateful(needed[nid]) else ready).append(nid)

    for nid in sorted(n for n in needed if indeg[n] == 0):
        push(nid)
    order = []
    while ready or late:
        nid = ready.popleft() if ready else late.popleft()
        order.append(needed[nid])
        for u in users[nid]:
            indeg[u] -= 1
            if indeg[u] == 0:
                push(u)
    return order


def _is_stateful(node):
    if node.op in ("Placeholder", "Const", "Variable"):
        return False
    return get_op(node.op).stateful


class Function:
    """A compiled, callable piece of graph (Keras' ``K.function``).

    Args:
        inputs: list of tensors to feed (usually placeholders; any tensor may be
            fed, cutting the graph there).
        outputs: a tensor, or a list/tuple/dict of tensors, to compute.
        updates: stateful tensors (``var.assign_sub(...)``, optimizer updates) or
            ``(variable, new_value)`` pairs, run after all outputs are computed.
        name: shown in error messages.

    Calling it with one array per input returns the outputs in the structure
    given, as device arrays (numpy on CPU, cupy on GPU). The keyword ``into``
    (a list with one entry per flattened output, each an array of the
    output's shape and dtype or None) lets outputs whose op writes into a
    given array (MatMul) land in the caller's arrays: the returned output is
    then that array; other outputs ignore their entry.

    Raises:
        ValueError: at construction, when the outputs need a placeholder that is
            not among ``inputs`` (naming it); at call time, when a fed value's
            shape does not fit its placeholder or the count of values is wrong.
        TypeError: a fed value whose dtype cannot be cast safely (same kind) to
            the placeholder's dtype.

    Example:
        >>> x = placeholder("float32", (None, 3))
        >>> f = Function([x], [sum(x * 2.0)])
        >>> f(np.ones((2, 3)))[0]
        12.0
    """

    def __init__(self, inputs, outputs, updates=(), name="function"):
        self.inputs = list(inputs)
        self.name = name
        self._structure = outputs
        self._single = isinstance(outputs, SymbolicTensor)
        self.outputs = tree.flatten(outputs)
        for t in self.inputs + self.outputs:
            if not isinstance(t, SymbolicTensor):
                raise TypeError(
                    f"Function '{name}' takes symbolic tensors as inputs and "
                    f"outputs. Received: {type(t).__name__} {t!r}."
                )
        self.updates = [self._as_update(u) for u in updates]
        # A flat list of tensors comes back as a list of the flat results.
        self._flat_list = type(outputs) is list and all(
            isinstance(t, SymbolicTensor) for t in outputs)
        self._xp = _array.get_xp()
        self._specs = [(t.shape, t.dtype, t.name) for t in self.inputs]
        # Per input: (dim index, size) of its static dims, checked per call.
        self._known = [None if t.shape is None else tuple(
            (j, d) for j, d in enumerate(t.shape) if d is not None)
            for t in self.inputs]
        self.rngs = []  # one generator per random node, in plan order
        self._run, self._lines = self._compile()

    def rng_state(self) -> list:
        """The random nodes' generator states (picklable), in plan order
        (``bit_generator.state``; None for a generator without one)."""
        return [getattr(getattr(r, "bit_generator", None), "state", None)
                for r in self.rngs]

    def set_rng_state(self, states) -> None:
        """Restores :meth:`rng_state`'s states (same graph, same order), so
        the next run draws what the saved function drew next."""
        for rng, state in zip(self.rngs, states):
            if state is not None:
                rng.bit_generator.state = state

    @staticmethod
    def _as_update(u):
        if isinstance(u, tuple) and len(u) == 2 and isinstance(u[0], Variable):
            return assign(u[0], u[1])
        if not isinstance(u, SymbolicTensor):
            raise TypeError(f"An update is a stateful tensor or (variable, value). "
                            f"Received: {u!r}.")
        return u

    # -- compilation ------------------------------------------------------------------
    def _compile(self):
        xp = self._xp
        fed = {t: f"a{i}" for i, t in enumerate(self.inputs)}
        order = _schedule(self.outputs + self.updates, fed)
        order = _fusion.rewrite(order, self.outputs, xp)  # fused chains, if on
        fed_uid = {t.node.uid: n for t, n in fed.items() if t.node.op == "Placeholder"}
        names = dict(fed)
        env = {}
        body = []  # (line, node)
        last_use: dict = {}
        for i, node in enumerate(order):
            for t in node.inputs:
                last_use[t] = i
        keep = set(self.outputs)
        into = {}  # node -> index of the output it may write into
        for j, t in enumerate(self.outputs):
            into.setdefault(t.node, j)
        for i, node in enumerate(order):
            outs = [f"t{node.id}_{k}" for k in range(len(node.outputs))]
            for t, n in zip(node.outputs, outs):
                names.setdefault(t, n)
            target = ", ".join(outs) + ("," if len(outs) > 1 else "")
            if node.op == "Placeholder":
                alias = fed_uid.get(node.uid)  # a pickled copy of a fed placeholder
                if alias is not None:
                    names[node.outputs[0]] = alias
                    continue
                raise ValueError(
                    f"Function '{self.name}': placeholder '{node.name}' "
                    f"(shape={node.outputs[0].shape}, "
                    f"dtype={node.outputs[0].dtype.name}) must be fed: the "
                    f"outputs depend on it but it is not among the inputs."
                )
            if node.op == "Const":
                # Constants are globals of the generated code, never deleted.
                names[node.outputs[0]] = f"c{node.id}"
                env[f"c{node.id}"] = _array.to_device(node.attrs["value"])
                continue
            if node.op == "Variable":
                env[f"V{node.id}"] = node.attrs["variable"]
                body.append((f"{target} = V{node.id}.value", node))
                continue
            opdef = get_op(node.op)
            attrs = dict(node.attrs)
            if opdef.random:
                attrs["rng"] = make_rng(xp, attrs.get("seed"))
                self.rngs.append(attrs["rng"])
            bind = getattr(opdef.kernel, "bind", None)
            fused = _fusion.kernel_for(node, xp, attrs)
            if fused is not None:
                env[f"k{node.id}"] = fused
            elif bind is not None and not attrs:
                # A kernel that is just xp.<ufunc>: call the ufunc itself, saving
                # the partial and two Python frames (~0.17 us) per node.
                env[f"k{node.id}"] = bind(xp)
            else:
                env[f"k{node.id}"] = functools.partial(opdef.kernel, xp, **attrs)
            args = []
            for j, t in enumerate(node.inputs):
                if j == 0 and opdef.stateful:
                    var = t.node.attrs["variable"]
                    env[f"V{t.node.id}"] = var
                    args.append(f"V{t.node.id}")
                else:
                    args.append(names[t])
            if opdef.writes_out and fused is None and node in into:
                args.append(f"out=_into[{into[node]}]")
            body.append((f"{target} = k{node.id}({', '.join(args)})", node))
            dead = [names[t] for t in dict.fromkeys(node.inputs)
                    if last_use.get(t) == i and t not in keep and t not in fed
                    and names[t].startswith("t")]
            if dead:
                body.append((f"del {', '.join(dead)}", node))
        results = []
        for t in self.outputs:
            n = names[t]
            # Fetching a Variable or constant itself: hand out a copy, as TF1 returns
            # a value that later updates (or the caller writing into it) cannot
            # change.
            if t.node.op in ("Variable", "Const"):
                n = f"{n}.copy()"
            results.append(n)
        env["_nones"] = (None,) * len(self.outputs)
        src = [f"def _run({''.join(fed[t] + ', ' for t in self.inputs)}_into=_nones):"]
        src += [f"    {line}" for line, _ in body]
        src.append(f"    return ({', '.join(results)}{',' if results else ''})")
        code = compile("\n".join(src), f"<kerasflow.Function {self.name}>", "exec")
        exec(code, env)  # noqa: S102  (generated from our own graph, no user text)
        return env["_run"], [n for _, n in body]

    # -- running -----------------------------------------------------------------------
    def _convert(self, i, value):
        shape, dtype, name = self._specs[i]
        xp = self._xp
        if not (isinstance(value, xp.ndarray) and value.dtype == dtype):
            value = cast_fed(value, dtype, name)
        if shape is not None:
            vs = value.shape
            ok = len(vs) == len(shape)
            for j, d in self._known[i] if ok else ():
                if vs[j] != d:
                    ok = False
                    break
            if not ok:
                raise ValueError(
                    f"Placeholder '{name}' expects shape {tuple(shape)}. "
                    f"Received: a value of shape {tuple(vs)}."
                )
        return value

    def __call__(self, *values, into=None):
        if len(values) != len(self.inputs):
            raise ValueError(
                f"Function '{self.name}' takes {len(self.inputs)} input value(s) "
                f"({', '.join(s[2] for s in self._specs)}). Received: {len(values)}."
            )
        args = [self._convert(i, v) for i, v in enumerate(values)]
        if into is not None:
            into = self._check_into(into)
        try:
            flat = self._run(*args) if into is None else self._run(*args, _into=into)
        except Exception as e:  # name the node whose kernel failed
            node = self._failed_node(e)
            if node is None:
                raise
            shapes = ", ".join(f"{t.name} {t.shape}" for t in node.inputs)
            msg = (f"Op '{node.name}' ({node.op}) failed at run time on inputs "
                   f"[{shapes}]: {e}")
            try:
                err = type(e)(msg)
            except Exception:  # a constructor that wants more (numpy's
                err = None  # _ArrayMemoryError takes a shape and a dtype)
            if err is None:
                # Keep the original, so `except MemoryError` still catches it.
                e.add_note(msg)
                raise
            raise err.with_traceback(None) from e
        if self._single:
            return flat[0]
        if self._flat_list:
            return list(flat)
        return tree.pack_sequence_as(self._structure, flat)

    def _check_into(self, into):
        into = tuple(into)
        if len(into) != len(self.outputs):
            raise ValueError(f"Function '{self.name}' has {len(self.outputs)} outputs; "
                             f"into= needs one entry (array or None) per output. "
                             f"Received: {len(into)} entries.")
        for t, a in zip(self.outputs, into):
            if a is None:
                continue
            want = t.shape
            fits = (isinstance(a, self._xp.ndarray) and a.dtype == t.dtype
                    and want is not None and len(a.shape) == len(want)
                    and all(d is None or d == s for d, s in zip(want, a.shape)))
            if not fits:
                raise ValueError(
                    f"Function '{self.name}': into= for output {t.name} needs a "
                    f"{self._xp.__name__} array of shape {want} and dtype "
                    f"{t.dtype.name}. Received: {type(a).__name__} of shape "
                    f"{tuple(getattr(a, 'shape', ()))}, dtype "
                    f"{getattr(a, 'dtype', None)}.")
        return into

    def _failed_node(self, exc):
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.startswith("<kerasflow.Function"):
                line = tb.tb_lineno
            tb = tb.tb_next
        if line is None or not 2 <= line < len(self._lines) + 2:
            return None
        return self._lines[line - 2]

    @property
    def num_nodes(self) -> int:
        """Kernel calls (and variable reads) per run of the compiled plan."""
        return len({id(n) for n in self._lines})


def function(inputs, outputs, updates=(), name="function"):
    """Keras-style alias of ``Function(inputs, outputs, updates)``."""
    return Function(inputs, outputs, updates, name)


def _is_value(x) -> bool:
    """Arrays (numpy or cupy) and numbers: values a Session can hand back."""
    return isinstance(x, (int, float, complex, np.number, np.bool_, np.ndarray)) \
        or _array.is_cupy_array(x)


class Session:
    """TF1-style runner: ``Session().run(fetches, feed_dict)``.

    Fetches may be a tensor, a stateful op (an assignment, ``group``), or nested
    lists/tuples/dicts of them; the result has the same structure with numpy arrays
    (None for fetched ops that yield nothing). Plans are compiled once per
    (fetches, fed tensors) signature and cached.

    Raises:
        ValueError: a placeholder the fetches need is not in ``feed_dict`` (naming
            it), or a fed value's shape does not fit (naming the placeholder, the
            expected and the received shape).
        TypeError: a fed value of an incompatible dtype, or a fetch that is not a
            tensor.

    Example:
        >>> with Session() as sess:
        ...     sess.run(x * 2.0, feed_dict={x: [1.0, 2.0]})
        array([2., 4.], dtype=float32)
    """

    def __init__(self):
        self._cache: dict = {}
        self._closed = False

    def run(self, fetches, feed_dict=None):
        """Computes ``fetches`` with ``feed_dict`` {tensor: value} fed.

        Args:
            fetches: a tensor or op, or nested lists/tuples/dicts of them.
            feed_dict: values for placeholders (or any tensor), array-like.

        Returns:
            The fetches' structure holding numpy arrays (None for ops).
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        feed_dict = dict(feed_dict or {})
        for k in feed_dict:
            if not isinstance(k, SymbolicTensor):
                raise TypeError(f"feed_dict keys are tensors. Received key: {k!r}.")
        flat = tree.flatten(fetches)
        # An op applied to arrays already ran (eagerly): TF1 would have made it a
        # constant, so fetching its value returns it.
        known = {i: _array.to_numpy(f) for i, f in enumerate(flat)
                 if not isinstance(f, SymbolicTensor) and _is_value(f)}
        for i, f in enumerate(flat):
            if i not in known and not isinstance(f, SymbolicTensor):
                raise TypeError(f"Fetches are tensors, ops or arrays. Received: "
                                f"{f!r}.")
        flat = [f for i, f in enumerate(flat) if i not in known]
        feeds = list(feed_dict)
        key = (tuple(id(t) for t in flat), tuple(id(t) for t in feeds))
        entry = self._cache.get(key)
        if entry is None:
            entry = (Function(feeds, flat, name="session_run"), flat, feeds)
            self._cache[key] = entry
        fn = entry[0]
        values = fn(*[feed_dict[t] for t in feeds])
        computed = iter([None if t.node.op == "NoOp" else _array.to_numpy(v)
                         for t, v in zip(flat, values)])
        out = [known[i] if i in known else next(computed)
               for i in range(len(known) + len(flat))]
        return tree.pack_sequence_as(fetches, out)

    def close(self):
        """Drops the cached plans; later ``run`` calls raise RuntimeError."""
        self._cache.clear()
        self._closed = True

    def __enter__(self):
        _default.push_default_session(self)  # tensor.eval() / op.run() use it
        return self

    def __exit__(self, *exc):
        _default.pop_default_session(self)
        self.close()
        return False

