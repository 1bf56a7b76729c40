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
import threading
from collections import defaultdict

import numpy as np

from kerasflow.backend import array as _array

__all__ = [
    "SymbolicTensor",
    "Node",
    "Variable",
    "placeholder",
    "constant",
    "name_scope",
    "is_symbolic",
    "TensorSpec",
    "assign_all",
]

_node_ids = itertools.count(1)
_name_counts: dict[str, int] = defaultdict(int)
_name_lock = threading.Lock()
_scope = threading.local()


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
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name})"


class Node:
    """One op application: op name, input tensors, plain attributes, outputs."""

    __slots__ = ("id", "op", "inputs", "attrs", "outputs", "name", "__weakref__")

    def __init__(self, op: str, inputs, attrs, name=None, scoped=True):
        self.id = next(_node_ids)
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.outputs: tuple = ()
        self.name = _unique_name(name or op, scoped)

    def __repr__(self):
        return f"<Node {self.name} op={self.op}>"


class SymbolicTensor:
    """A value in a graph: one output of a ``Node``, with static shape and dtype.

    Python operators build ops: ``+ - * / // % ** @``, unary ``-``, ``abs``,
    ``< <= > >=`` (elementwise; ``==`` keeps identity, as TF1 tensors did, so
    tensors can be dict keys: use ``equal()`` for the elementwise test), and
    indexing/slicing (``x[:, 1:3]``, ``x[..., None]``, ``x[int_tensor]`` gathers).
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

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

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
    def __add__(self, o):
        return _ops().add(self, o)

    def __radd__(self, o):
        return _ops().add(o, self)

    def __sub__(self, o):
        return _ops().subtract(self, o)

    def __rsub__(self, o):
        return _ops().subtract(o, self)

    def __mul__(self, o):
        return _ops().multiply(self, o)

    def __rmul__(self, o):
        return _ops().multiply(o, self)

    def __truediv__(self, o):
        return _ops().divide(self, o)

    def __rtruediv__(self, o):
        return _ops().divide(o, self)

    def __floordiv__(self, o):
        return _ops().floor_divide(self, o)

    def __rfloordiv__(self, o):
        return _ops().floor_divide(o, self)

    def __mod__(self, o):
        return _ops().mod(self, o)

    def __pow__(self, o):
        return _ops().power(self, o)

    def __rpow__(self, o):
        return _ops().power(o, self)

    def __matmul__(self, o):
        return _ops().matmul(self, o)

    def __rmatmul__(self, o):
        return _ops().matmul(o, self)

    def __neg__(self):
        return _ops().negative(self)

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
    value = _as_numpy(value, dtype, f"constant '{name or 'Const'}'")
    return _make_node_tensor(
        "Const", value.shape, value.dtype, name or "Const", {"value": value}
    )


def _as_numpy(value, dtype=None, what=None):
    value = _array.to_numpy(value)
    if dtype is None and isinstance(value, float):
        dtype = _array.floatx()
    if dtype is None and isinstance(value, (list, tuple)):
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            dtype = _array.floatx()
    return cast_checked(value, dtype, what or "a value")


def cast_checked(value, dtype, what):
    """``np.asarray(value, dtype)``, refusing float overflow to inf (issue 7).

    Raises:
        ValueError: a finite value too large for ``dtype``, naming ``what``.
    """
    try:
        with np.errstate(over="raise"):
            return np.asarray(value, dtype=dtype)
    except FloatingPointError:
        big = np.abs(np.asarray(value, dtype=np.float64))
        top = float(big[np.isfinite(big)].max())
        raise ValueError(
            f"{what} expects values that fit dtype {np.dtype(dtype).name} (|x| <= "
            f"{float(np.finfo(dtype).max):.4g}). Received: |x| up to {top:.4g}, "
            f"which would overflow to inf."
        ) from None


class Variable(SymbolicTensor):
    """A mutable value on the device; as a graph tensor it reads its current value.

    ``assign``, ``assign_add`` and ``assign_sub`` given a symbolic value add a
    stateful node to the graph (run it, or pass it as a ``Function`` update); given
    an array or number they update the value at once.

    Args:
        initial_value: array-like, Python number, or a callable ``f(shape, dtype)``
            (an initializer, then ``shape`` is required).
        trainable: whether optimizers and ``gradients`` see it as a weight.
        name: readable name ("dense/kernel").
        dtype: dtype; defaults to floatx() for floats.
        shape: the shape, needed when ``initial_value`` is callable.

    Example:
        >>> w = Variable(0.0, name="weights")
        >>> w.assign_add(1.5)
        >>> float(w.numpy())
        1.5
    """

    __slots__ = ("value", "trainable", "constraint")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None,
                 shape=None, constraint=None):
        if callable(initial_value):
            if shape is None:
                raise ValueError(
                    f"Variable '{name}' with a callable initial_value needs shape=."
                )
            initial_value = initial_value(
                _normalize_shape(shape), dtype or _array.floatx()
            )
        what = f"Variable '{name or 'Variable'}'"
        host = _as_numpy(initial_value, dtype, what)
        if dtype is None and host.dtype.kind == "f":
            host = cast_checked(host, _array.floatx(), what)
        # Variable names are not prefixed by name scopes: layers name their
        # weights "<layer>/<weight>" themselves, wherever they are built.
        node = Node("Variable", (), {}, name or "Variable", scoped=False)
        SymbolicTensor.__init__(self, node, 0, host.shape, host.dtype)
        node.outputs = (self,)
        node.attrs = {"variable": self}
        # A private copy: the caller's array must not alias the Variable.
        self.value = _array.to_device(host).copy()
        self.trainable = bool(trainable)
        self.constraint = constraint

    @property
    def name(self):
        return self.node.name

    def numpy(self):
        """The current value as a numpy array (a copy)."""
        return np.array(_array.to_numpy(self.value), copy=True)

    def read_value(self):
        return self.value

    def _set(self, value):
        if not isinstance(value, _array.get_xp().ndarray) or value.dtype != self.dtype:
            value = cast_checked(_array.to_numpy(value), self.dtype,
                                 f"Variable '{self.name}'")
        value = _array.to_device(value, dtype=self.dtype)
        if value.shape != self.value.shape:
            raise ValueError(
                f"Variable '{self.name}' has shape {self.value.shape}; cannot assign "
                f"a value of shape {value.shape}."
            )
        self.value = value.copy()

    def assign(self, value):
        """Sets the value (eagerly for arrays, as a graph node for tensors)."""
        if is_symbolic(value):
            return _ops().assign(self, value)
        self._set(value)
        return self.value

    def assign_add(self, delta):
        """Adds ``delta`` (broadcastable to the variable's shape)."""
        if is_symbolic(delta):
            return _ops().assign_add(self, delta)
        self._set(self.value + _array.to_device(delta, dtype=self.dtype))
        return self.value

    def assign_sub(self, delta):
        """Subtracts ``delta`` (broadcastable to the variable's shape)."""
        if is_symbolic(delta):
            return _ops().assign_sub(self, delta)
        self._set(self.value - _array.to_device(delta, dtype=self.dtype))
        return self.value

    def __repr__(self):
        return (
            f"<Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
        )

    # Pickle: the value travels as numpy so a graph can move between devices.
    def __getstate__(self):
        return {
            "node": self.node,
            "index": self.index,
            "spec": (self.spec.shape, self.spec.dtype.str),
            "value": _array.to_numpy(self.value),
            "trainable": self.trainable,
            "constraint": self.constraint,
        }

    def __setstate__(self, state):
        self._keras_logits = None
        self.node = state["node"]
        self.index = state["index"]
        self.spec = TensorSpec(*state["spec"])
        value = _array.to_device(state["value"])
        # ray.get hands out read-only shared memory; updates need a private copy.
        if not getattr(getattr(value, "flags", None), "writeable", True):
            value = value.copy()
        self.value = value
        self.trainable = state["trainable"]
        self.constraint = state["constraint"]


def _tensor_getstate(self):
    return {"node": self.node, "index": self.index,
            "spec": (self.spec.shape, self.spec.dtype.str)}


def _tensor_setstate(self, state):
    self._keras_logits = None
    self.node = state["node"]
    self.index = state["index"]
    self.spec = TensorSpec(*state["spec"])


SymbolicTensor.__getstate__ = _tensor_getstate
SymbolicTensor.__setstate__ = _tensor_setstate


def _node_getstate(self):
    return {k: getattr(self, k) for k in ("id", "op", "inputs", "attrs", "outputs",
                                          "name")}


def _node_setstate(self, state):
    for k, v in state.items():
        setattr(self, k, v)
    # Ids are per process: a node arriving from elsewhere gets a fresh one.
    self.id = next(_node_ids)


Node.__getstate__ = _node_getstate
Node.__setstate__ = _node_setstate


def assign_all(variables, values, owner: str) -> None:
    """Sets each Variable to its value, checking count and every shape first.

    Nothing is assigned unless all values fit, so a bad list (or a corrupt file
    read into one) never leaves the owner half-updated.

    Args:
        variables: list of ``Variable``.
        values: list of array-likes, one per variable.
        owner: who holds them, for messages ("Layer 'dense'").

    Raises:
        ValueError: a different count, or a value whose shape differs, naming the
            variable, the expected and the received shape.
    """
    values = list(values)
    if len(values) != len(variables):
        raise ValueError(
            f"{owner} expects {len(variables)} weight arrays. Received: "
            f"{len(values)}."
        )
    for var, value in zip(variables, values):
        if tuple(np.shape(value)) != tuple(var.shape):
            raise ValueError(
                f"Weight '{var.name}' of {owner} expects shape {tuple(var.shape)}. "
                f"Received: shape {tuple(np.shape(value))}."
            )
    # Cast (and check for overflow) all first: nothing is assigned on failure.
    cast = [cast_checked(_array.to_numpy(value), var.dtype,
                         f"Weight '{var.name}' of {owner}")
            for var, value in zip(variables, values)]
    for var, value in zip(variables, cast):
        var.assign(value)
