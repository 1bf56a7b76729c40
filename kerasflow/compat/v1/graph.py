"""The TF1 default graph: collections, the variable store and a record of ops.

kerasflow has no global graph: a graph is whatever its tensors reach. TF1
programs, though, ask a graph for things — ``tf.global_variables()``,
``tf.get_collection``, ``sess.graph`` for TensorBoard — so this module keeps a
``Graph`` *record*: the Variables, collections and ``get_variable`` store of the
program, and (weakly) the tensors ``kerasflow.compat.v1`` functions returned,
from which ``as_graph_def()`` writes every node they depend on.
``reset_default_graph()`` starts a new, empty record; tensors built before stay
valid (kerasflow graphs belong to their tensors), they are just no longer
listed.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import weakref

import numpy as np

from kerasflow import backend as K
from kerasflow.backend import stack
from kerasflow.utils.graph_def import collect_nodes, graph_def_from_tensors

__all__ = ["Graph", "GraphKeys", "get_default_graph", "reset_default_graph",
           "add_to_collection", "get_collection", "get_collection_ref",
           "track", "as_tensor", "as_tensor_pair", "graph_op", "VariableOp"]


class GraphKeys:
    """TF1's standard collection names."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    SUMMARIES = "summaries"
    REGULARIZATION_LOSSES = "regularization_losses"
    LOSSES = "losses"
    GLOBAL_STEP = "global_step"
    UPDATE_OPS = "update_ops"
    TRAIN_OP = "train_op"
    SAVERS = "savers"


class Graph:
    """A TF1 graph record (see the module docstring).

    ``with g.as_default():`` makes it the default graph inside the block.
    """

    def __init__(self):
        self._collections: dict = {}
        self._tensors = weakref.WeakSet()
        self.var_store: dict = {}    # get_variable name -> Variable
        self.layer_store: dict = {}  # tf.layers name -> Layer (reuse)
        self.devices: list = []      # (first node id, last node id, device spec)
        self.control_deps: list = []  # (first node id, last node id, deps)
        self.device_stack: list = []  # active tf.device specs/functions
        self.ps_vars: dict = {}      # Variable -> (ps task index, key)
        self.sync_replicas: dict = {}  # train op -> (to aggregate, total replicas)
        self.seed = None
        self._finalized = False
        self.initial_values: dict = {}  # Variable -> numpy value at registration

    def register_variable(self, var, collections=None) -> None:
        """Lists ``var`` in the variable collections and remembers its value
        now as the one ``global_variables_initializer()`` restores."""
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
            if var.trainable:
                collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self.add_to_collections(collections, var)
        if var not in self.initial_values:
            self.initial_values[var] = var.numpy()
        if self.device_stack and var not in self.ps_vars:
            self._place_on_ps(var)

    def _place_on_ps(self, var) -> None:
        """Records the ps task an enclosing ``tf.device`` (a string or a
        device function such as ``replica_device_setter``) gives ``var``;
        its key is its name, made unique in this graph."""
        spec = self.device_stack[-1]
        if callable(spec):
            spec = spec(VariableOp(var))
        m = _PS_RE.search(spec or "")
        if m is None:
            return
        used = {k for _, k in self.ps_vars.values()}
        key, n = var.name, 0
        while key in used:
            n += 1
            key = f"{var.name}_{n}"
        self.ps_vars[var] = (int(m.group(1) or 0), key)

    @contextlib.contextmanager
    def as_default(self):
        """Makes this graph the default one inside the ``with`` block."""
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    # -- collections ------------------------------------------------------------------
    def add_to_collection(self, name, value) -> None:
        """Appends ``value`` to collection ``name`` (a value is listed once)."""
        coll = self._collections.setdefault(name, [])
        if not any(v is value for v in coll):
            coll.append(value)

    def add_to_collections(self, names, value) -> None:
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name) -> list:
        """The collection's list itself (changes to it are kept)."""
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None) -> list:
        """A copy of collection ``name``; with ``scope``, only items whose name
        starts with it."""
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        return [v for v in items if str(getattr(v, "name", "")).startswith(scope)]

    def get_all_collection_keys(self) -> list:
        return list(self._collections)

    def clear_collection(self, name) -> None:
        self._collections.pop(name, None)

    # -- ops --------------------------------------------------------------------------
    def track(self, tensor) -> None:
        """Records a tensor built for this graph (for ``as_graph_def``)."""
        if isinstance(tensor, K.SymbolicTensor):
            self._tensors.add(tensor)

    def _roots(self) -> list:
        roots = list(self._tensors)
        for items in self._collections.values():
            roots.extend(v for v in items if isinstance(v, K.SymbolicTensor))
        return roots

    def get_operations(self) -> list:
        """Every node the recorded tensors depend on, in creation order."""
        return collect_nodes(self._roots())

    def get_tensor_by_name(self, name: str):
        """The tensor ``"node_name:k"`` (or ``"node_name"`` for output 0).

        Raises:
            KeyError: no recorded node of that name.
        """
        node_name, _, index = name.partition(":")
        for node in self.get_operations():
            if node.name == node_name:
                return node.outputs[int(index or 0)]
        raise KeyError(f"The name '{name}' refers to a Tensor which does not exist.")

    def device_of(self, node) -> str | None:
        """The device spec a ``tf.device`` block gave ``node``, innermost last."""
        spec = None
        for first, last, device in self.devices:
            if first < node.id < last:
                spec = device
        return spec

    def as_graph_def(self, add_shapes: bool = False):
        """The ``GraphDef`` of every recorded node (TensorBoard's Graphs tab)."""
        roots = self._roots()
        devices = {n.id: d for n in self.get_operations()
                   if (d := self.device_of(n)) is not None}
        return graph_def_from_tensors(roots, devices)

    def finalize(self) -> None:
        """Kept for TF1 programs; kerasflow graphs need no freezing."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized


_PS_RE = re.compile(r"/job:ps(?:/replica:\d+)?(?:/task:(\d+))?")


class VariableOp:
    """What a TF1 device function receives for a Variable: an op of type
    ``"VariableV2"`` with its name, output (shape, dtype) and ``nbytes``."""

    type = "VariableV2"
    device = ""

    def __init__(self, var):
        self.name, self.outputs = var.name, [var]
        self.nbytes = int(np.prod(var.shape, dtype=np.int64)) * np.dtype(
            var.dtype).itemsize


_local = threading.local()
_DEFAULT = [Graph()]


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_graph() -> Graph:
    """The innermost ``as_default()`` graph, else the process-wide default."""
    stack = _stack()
    return stack[-1] if stack else _DEFAULT[0]


def reset_default_graph() -> None:
    """Starts a new, empty default graph record.

    Forgets the collections (``global_variables()``), the ``get_variable``
    store (so names can be created again) and the recorded ops. Tensors and
    Variables built before keep working: they hold their own graph.

    Raises:
        RuntimeError: called inside a
            ``graph.as_default()`` block, as TF1 refused.
    """
    if _stack():
        raise RuntimeError("Do not use tf.reset_default_graph() to clear nested "
                           "graphs. If you need a cleared graph, exit the nesting "
                           "and create a new graph.")
    _DEFAULT[0] = Graph()


def add_to_collection(name, value) -> None:
    get_default_graph().add_to_collection(name, value)


def get_collection(name, scope=None) -> list:
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name) -> list:
    return get_default_graph().get_collection_ref(name)


def track(value):
    """Records every tensor in ``value`` (nested lists/tuples) and returns it."""
    graph = get_default_graph()
    if isinstance(value, (list, tuple)):
        for v in value:
            track(v)
    else:
        graph.track(value)
    return value


def as_tensor(value, dtype=None):
    """``value`` if symbolic, else a graph constant of it (TF1 made every op
    result a graph tensor, so ``sess.run`` and ``.eval()`` accept it)."""
    if isinstance(value, K.SymbolicTensor):
        return value
    if isinstance(value, (list, tuple)) and any(
            isinstance(v, K.SymbolicTensor) for v in value):
        return stack([as_tensor(v, dtype) for v in value])
    arr = np.asarray(K.to_numpy(value))
    if arr.dtype.kind in "SU":
        # tf.string holds bytes: "a" and b"a" are one value, as in TF.
        arr = np.vectorize(_as_bytes, otypes=[object])(arr) if arr.ndim else \
            np.array(_as_bytes(arr[()]), dtype=object)
    if dtype is not None:
        arr = arr.astype(dtype)
    elif not isinstance(value, (np.ndarray, np.generic)):
        # Python numbers and lists: float32 and int32, TF1's inference.
        if arr.dtype == np.float64:
            arr = arr.astype(K.floatx())
        elif arr.dtype == np.int64:
            arr = arr.astype(np.int32)
    return track(K.constant(arr))


def _as_bytes(s):
    return s.encode() if isinstance(s, str) else bytes(s)


def as_tensor_pair(x, y):
    """Both operands of a binary op as TF1 converted them: a non-tensor
    operand takes the dtype of the tensor one (``float32_tensor * 2`` stays
    float32); Python numbers are left to the backend, which does the same."""
    xs, ys = isinstance(x, K.SymbolicTensor), isinstance(y, K.SymbolicTensor)
    if xs and not ys:
        return x, _like(y, x)
    if ys and not xs:
        return _like(x, y), y
    return as_tensor(x), as_tensor(y)


def _like(value, tensor):
    if isinstance(value, (bool, int, float)):
        return value
    return as_tensor(value, tensor.dtype)


def graph_op(fn):
    """Wraps a backend function: results become recorded graph tensors."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _finish(fn(*args, **kwargs))

    return wrapper


def _finish(result):
    if isinstance(result, (list, tuple)):
        return type(result)(_finish(r) for r in result)
    if result is None:
        return None
    if isinstance(result, K.SymbolicTensor):
        return track(result)
    return as_tensor(result)
