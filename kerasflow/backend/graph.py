"""The graph: symbolic tensors, nodes, placeholders, constants and Variables.

A graph is plain data: every ``Node`` holds an op name, its input tensors and a dict
of plain attributes (no closures), so a graph pickles and can be compiled anywhere
(TensorFlow, Abadi et al., OSDI 2016, §3). There is no global default graph: a
graph is whatever is reachable from the tensors a caller holds, so unrelated models
never share state. Only node names come from a process-wide counter, to keep them
unique and readable ("dense/MatMul_3").
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import defaultdict

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.operators import ArithmeticOps

__all__ = [
    "SymbolicTensor",
    "Node",
    "placeholder",
    "constant",
    "name_scope",
    "is_symbolic",
    "TensorSpec",
    "walk",
    "reachable_variables",
]

_node_ids = itertools.count(1)
_name_counts: dict[str, int] = defaultdict(int)
_name_lock = threading.Lock()
_scope = threading.local()
# Node uids are unique across processes (graph_pickle keys node identity on them).
_process_tag = os.urandom(6).hex()


def _new_process_tag():
    global _process_tag
    _process_tag = os.urandom(6).hex()


os.register_at_fork(after_in_child=_new_process_tag)


def _unique_name(base: str, scoped: bool = True) -> str:
    prefix = "/".join(getattr(_scope, "stack", [])) if scoped else ""
    full = f"{prefix}/{base}" if prefix else base
    with _name_lock:
        n = _name_counts[full]
        _name_counts[full] += 1
    return full if n == 0 else f"{full}_{n}"


class name_scope:
    """Context manager prefixing the names of nodes created inside it.

    Example:
        >>> with name_scope("dense"):
        ...     y = matmul(x, w)      # node named "dense/MatMul"
    """

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        if not hasattr(_scope, "stack"):
            _scope.stack = []
        _scope.stack.append(self.name)
        return self.name

    def __exit__(self, *exc):
        _scope.stack.pop()
        return False


class tracing:
    """Context manager marking that a graph is being traced (a step is built).

    Inside it ``Variable.assign*`` given plain numbers or arrays still builds a
    graph node (TF1 semantics) instead of updating the value at once, so code
    written for graphs (a layer's ``self.v.assign_add(1.0)``) is traced, not run.
    """

    def __enter__(self):
        _scope.tracing = getattr(_scope, "tracing", 0) + 1
        stack = _scope.__dict__.setdefault("recorded", [])
        self.stateful: list = []  # assignments made to Variables inside
        stack.append(self.stateful)
        return self

    def __exit__(self, *exc):
        _scope.tracing -= 1
        _scope.recorded.pop()
        return False


def in_tracing() -> bool:
    """True inside a ``tracing()`` block of this thread."""
    return getattr(_scope, "tracing", 0) > 0


def record_stateful(op) -> None:
    """Notes a Variable assignment built while tracing (``tracing().stateful``),
    so code that assigns without returning the op (Keras layers and metrics)
    still gets its update run with the traced step."""
    stack = getattr(_scope, "recorded", None)
    if stack:
        stack[-1].append(op)


def _normalize_shape(shape):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    out = []
    for d in shape:
        if d is None or (isinstance(d, (int, np.integer)) and d >= 0):
            out.append(None if d is None else int(d))
        elif isinstance(d, (int, np.integer)) and d == -1:
            out.append(None)
        else:
            raise ValueError(
                f"A shape holds non-negative ints or None. Received: shape={shape!r}."
            )
    return tuple(out)


class TensorSpec:
    """Static shape (tuple, None for unknown dims; None for unknown rank) and dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = _normalize_shape(shape)
        self.dtype = _array.as_dtype(dtype)

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name})"


class Node:
    """One op application: op name, input tensors, plain attributes, outputs."""

    __slots__ = ("id", "uid", "op", "inputs", "attrs", "outputs", "name",
                 "__weakref__")

    def __init__(self, op: str, inputs, attrs, name=None, scoped=True):
        self.id = next(_node_ids)
        self.uid = f"{_process_tag}:{self.id}"
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.outputs: tuple = ()
        self.name = _unique_name(name or op, scoped)

    def __repr__(self):
        return f"<Node {self.name} op={self.op}>"


class SymbolicTensor(ArithmeticOps):
    """A value in a graph: one output of a ``Node``, with static shape and dtype.

    Python operators build ops: ``+ - * / // % ** @``, unary ``-``, ``abs``,
    ``< <= > >= == !=`` (elementwise, as Keras 3; hashing is by identity, so
    tensors can still be dict keys, and ``bool()`` of a symbolic comparison
    raises), and indexing/slicing (``x[:, 1:3]``, ``x[..., None]``,
    ``x[int_tensor]`` gathers).
    """

    # ``_keras_logits``: set on a softmax/sigmoid output to the logits it came from,
    # so cross-entropy losses can use the fused, stable op (as Keras does).
    __slots__ = ("node", "index", "spec", "_keras_logits", "__weakref__")
    # numpy defers to our reflected operators: array + tensor -> tensor.__radd__.
    __array_ufunc__ = None

    def __init__(self, node: Node, index: int, shape, dtype):
        self.node = node
        self.index = index
        self.spec = TensorSpec(shape, dtype)
        self._keras_logits = None

    # -- static properties -------------------------------------------------------
    @property
    def shape(self):
        return self.spec.shape

    def get_shape(self):
        return self.spec.shape

    @property
    def dtype(self):
        return self.spec.dtype

    @property
    def ndim(self):
        return self.spec.ndim

    @property
    def op(self):
        return self.node

    @property
    def name(self):
        return f"{self.node.name}:{self.index}"

    def __repr__(self):
        return (
            f"<SymbolicTensor '{self.name}' shape={self.shape} "
            f"dtype={self.dtype.name}>"
        )

    def __hash__(self):
        return id(self)

    # ``==`` / ``!=`` are elementwise, as in Keras 3 and TF2 (not TF1's identity
    # test). Hashing stays by identity, and a tensor compared with itself is
    # plainly True, so tensors remain keys of dicts, weak dicts and sets;
    # ``bool()`` of a symbolic result raises, so other identity-style uses
    # (``t in a_list`` of other tensors) fail loudly instead of silently.
    def _compare(self, other, op, same):
        if other is self:
            return same
        if other is None or not _comparable(other):
            return NotImplemented
        return getattr(_ops(), op)(self, other)

    def __eq__(self, other):
        return self._compare(other, "equal", True)

    def __ne__(self, other):
        return self._compare(other, "not_equal", False)

    def __bool__(self):
        raise TypeError(
            f"A symbolic tensor has no truth value until it is run. Received: "
            f"{self!r}. Use where()/greater() in the graph, or run it in a Session."
        )

    def __len__(self):
        if self.shape is None or not self.shape or self.shape[0] is None:
            raise TypeError(f"len() needs a known first dimension. Received: {self!r}.")
        return self.shape[0]

    def __iter__(self):
        raise TypeError(f"A symbolic tensor is not iterable. Received: {self!r}.")

    # -- operators: resolved lazily to avoid an import cycle with ops -----------








    def __floordiv__(self, o):
        return _ops().floor_divide(self, o)

    def __rfloordiv__(self, o):
        return _ops().floor_divide(o, self)

    def __mod__(self, o):
        return _ops().mod(self, o)


    def __rpow__(self, o):
        return _ops().power(o, self)




    def __pos__(self):
        return self

    def __abs__(self):
        return _ops().abs(self)

    def __lt__(self, o):
        return _ops().less(self, o)

    def __le__(self, o):
        return _ops().less_equal(self, o)

    def __gt__(self, o):
        return _ops().greater(self, o)

    def __ge__(self, o):
        return _ops().greater_equal(self, o)

    def __getitem__(self, key):
        return _ops().getitem(self, key)

    @property
    def T(self):
        return _ops().transpose(self)


def _comparable(x) -> bool:
    return isinstance(x, (SymbolicTensor, bool, int, float, np.number, np.ndarray,
                          np.bool_)) or _array.is_cupy_array(x)


def _ops():
    from kerasflow.backend import ops  # noqa: PLC0415  (cycle: ops build tensors)

    return ops


def is_symbolic(x) -> bool:
    """True for a ``SymbolicTensor`` (Variables included)."""
    return isinstance(x, SymbolicTensor)


def _make_node_tensor(op, shape, dtype, name, attrs=None, cls=SymbolicTensor):
    node = Node(op, (), attrs or {}, name)
    t = cls.__new__(cls)
    SymbolicTensor.__init__(t, node, 0, shape, dtype)
    node.outputs = (t,)
    return t


def placeholder(dtype="float32", shape=None, name=None) -> SymbolicTensor:
    """A graph input to be fed at run time (TF1's ``tf.placeholder``).

    Args:
        dtype: dtype of the values to feed; e.g. 'float32', 'int64'.
        shape: tuple with None for dims of any size; None for any rank and shape.
        name: readable name used in error messages.

    Returns:
        A ``SymbolicTensor`` of that shape and dtype.
    """
    return _make_node_tensor(
        "Placeholder", shape, dtype, name or "Placeholder", {}
    )


def constant(value, dtype=None, name=None) -> SymbolicTensor:
    """A constant in the graph; its value is a numpy array stored on the node.

    Args:
        value: array-like.
        dtype: dtype to convert to; defaults to floatx() for Python floats and to
            the array's own dtype otherwise.
    """
    value = _array.as_numpy(value, dtype, f"constant '{name or 'Const'}'")
    return _make_node_tensor(
        "Const", value.shape, value.dtype, name or "Const", {"value": value}
    )


def walk(roots, inputs_of=None) -> list:
    """Every node reachable from ``roots``, each once, inputs before their users.

    The one graph traversal of kerasflow: pruning, pickling, GraphDef export,
    seed offsets, variable discovery and functional models all use it.
    Iterative, so chains of any length are fine; nodes are told apart by
    identity.

    Args:
        roots: iterable of ``SymbolicTensor`` (Variables included) or ``Node``.
        inputs_of: optional ``inputs_of(node) -> iterable of SymbolicTensor``
            naming the tensors a node depends on (default ``node.inputs``); a
            functional model uses it to step over a layer call to the call's
            inputs, and to stop at its own inputs (an empty iterable).

    Returns:
        list of ``Node`` in a topological order (a node's inputs' nodes come
        before it). The order depends only on the graph's structure and the
        order of ``roots``, so a pickled copy walks in the same order.

    Raises:
        TypeError: a root is neither a tensor nor a node.
    """
    order, seen = [], set()
    for root in roots:
        node = root.node if isinstance(root, SymbolicTensor) else root
        if not isinstance(node, Node):
            raise TypeError(f"walk() expects SymbolicTensors or Nodes. "
                            f"Received: {root!r}.")
        stack = [(node, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            deps = node.inputs if inputs_of is None else tuple(inputs_of(node))
            stack.extend((t.node, False) for t in reversed(deps)
                         if id(t.node) not in seen)
    return order


def reachable_variables(roots, trainable: bool | None = None) -> list:
    """The Variables that ``roots`` read or write, each once, in creation order.

    Creation order is TF1's collection order (``tf.trainable_variables()``), so
    an optimizer's slots and a flat gradient buffer line up with the model's
    weights.

    Args:
        roots: iterable of ``SymbolicTensor`` or ``Node``.
        trainable: True or False keeps only Variables with that ``trainable``
            flag; None keeps all.

    Returns:
        list of ``Variable``.
    """
    found = [n for n in walk(roots) if n.op == "Variable"
             and (trainable is None
                  or n.attrs["variable"].trainable == trainable)]
    found.sort(key=lambda n: n.id)
    return [n.attrs["variable"] for n in found]
