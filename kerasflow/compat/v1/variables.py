"""TF1 variables: ``Variable``, ``get_variable`` with ``variable_scope``,
``name_scope``, initializers and the variable collections.

Variables are kerasflow ``Variable`` objects (optimizers, layers and savers
take them as they are), holding a value from creation. As in TF1, running
``global_variables_initializer()`` sets every listed variable back to the value
it was created (or first listed) with, so running it right after building the
graph changes nothing, and running it again restarts training.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.dtypes import resolve
from kerasflow.compat.v1.initializers import *  # noqa: F403
from kerasflow.compat.v1.initializers import __all__ as _initializers_all
from kerasflow.compat.v1.initializers import (
    glorot_uniform_initializer,
    zeros_initializer,
)

__all__ = [
    "Variable", "get_variable", "variable_scope", "name_scope", "VariableScope",
    "get_variable_scope", "AUTO_REUSE", "global_variables", "trainable_variables",
    "local_variables", "model_variables", "all_variables",
    "global_variables_initializer", "initialize_all_variables",
    "variables_initializer", "local_variables_initializer",
    "report_uninitialized_variables", "is_variable_initialized", "assign",
    "assign_add", "assign_sub", *_initializers_all,
]


class _AutoReuse:
    def __repr__(self):
        return "tf.AUTO_REUSE"


AUTO_REUSE = _AutoReuse()
_local = threading.local()


def _state():
    if not hasattr(_local, "names"):
        _local.names = []                              # name-scope components
        _local.scopes = [VariableScope("", None, None, None)]
    return _local


class VariableScope:
    """The state of a ``variable_scope``: name, reuse, default initializer."""

    def __init__(self, name, reuse, initializer, regularizer, dtype=None):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtype
        self.original_name_scope = name + "/" if name else ""

    def reuse_variables(self) -> None:
        """From now on, ``get_variable`` in this scope returns existing ones."""
        self.reuse = True

    def set_initializer(self, initializer) -> None:
        self.initializer = initializer

    def set_regularizer(self, regularizer) -> None:
        self.regularizer = regularizer


def get_variable_scope() -> VariableScope:
    """The innermost ``variable_scope`` (the root scope has name "")."""
    return _state().scopes[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope=None, default_name=None, values=None,
                   initializer=None, regularizer=None, reuse=None, dtype=None,
                   **kwargs):
    """Prefixes ``get_variable`` names (and op names) and sets reuse.

    ``reuse`` is None (inherit), True (only existing variables), or
    ``AUTO_REUSE`` (existing if any, else new); a scope whose parent reuses
    reuses too, as in TF1. ``initializer`` and ``regularizer`` become the
    defaults of ``get_variable`` inside.

    Raises:
        TypeError: neither a name, a ``VariableScope`` nor a default_name.
    """
    st = _state()
    parent = st.scopes[-1]
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        inherit = name_or_scope
    elif isinstance(name_or_scope, str) or (name_or_scope is None and default_name):
        base = name_or_scope if name_or_scope is not None else _unique_scope(
            default_name, parent)
        full = f"{parent.name}/{base}" if parent.name else base
        inherit = parent
    else:
        raise TypeError(f"variable_scope expects a name or a VariableScope (or "
                        f"default_name). Received: {name_or_scope!r}.")
    if reuse is False:
        reuse = None
    if parent.reuse is True or inherit.reuse is True:
        reuse = True
    elif reuse is None:
        reuse = inherit.reuse
    scope = VariableScope(
        full, reuse,
        inherit.initializer if initializer is None else initializer,
        inherit.regularizer if regularizer is None else regularizer,
        inherit.dtype if dtype is None else dtype)
    st.scopes.append(scope)
    st.names.append(full.rsplit("/", 1)[-1])
    try:
        with K.name_scope(full.rsplit("/", 1)[-1]):
            yield scope
    finally:
        st.names.pop()
        st.scopes.pop()


def _unique_scope(base, parent):
    store = G.get_default_graph().var_store
    prefix = f"{parent.name}/" if parent.name else ""
    n, name = 0, base
    while any(k.startswith(f"{prefix}{name}/") for k in store):
        n += 1
        name = f"{base}_{n}"
    return name


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """Prefixes op names and ``Variable`` names (not ``get_variable`` ones)."""
    name = name or default_name
    st = _state()
    if not name:
        yield ""
        return
    st.names.append(name.rstrip("/"))
    try:
        with K.name_scope(name.rstrip("/")):
            yield "/".join(st.names) + "/"
    finally:
        st.names.pop()


def _scoped(name):
    names = _state().names
    return "/".join([*names, name]) if names else name


class Variable(K.Variable):
    """TF1's ``tf.Variable`` on kerasflow's ``Variable``.

    Args:
        initial_value: number, array, a tensor (evaluated once; it may not
            need placeholders) or a callable taking no arguments.
        trainable: listed in ``trainable_variables()`` and trained by default.
        name: prefixed by the enclosing name scopes; default "Variable".
        dtype: a TF or numpy dtype; Python floats default to float32 and
            Python ints to int32, as in TF1.
        collections: collection names to list it in (default: global, plus
            trainable when trainable).

    Raises:
        ValueError: a tensor initial value that needs a placeholder.
    """

    __slots__ = ()

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None,
                 variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if initial_value is None:
            raise ValueError("tf.Variable needs an initial_value. Received: None.")
        dtype = resolve(dtype)
        value = _evaluate(initial_value, "tf.Variable")
        if dtype is None and not isinstance(value, np.ndarray):
            value = np.asarray(value)
            if value.dtype == np.int64:
                value = value.astype(np.int32)
        super().__init__(value, trainable=trainable, name=_scoped(name or "Variable"),
                         dtype=dtype, constraint=constraint)
        G.get_default_graph().register_variable(self, collections)

    @property
    def initializer(self):
        """An op setting the variable back to its initial value."""
        return variables_initializer([self], name=f"{self.name}/Assign")

    def initialized_value(self):
        return self

    @property
    def graph(self):
        return G.get_default_graph()

    def load(self, value, session=None) -> None:
        """Sets the value (TF1 ``Variable.load``); ``session`` is not needed."""
        self.assign(np.asarray(value, dtype=self.dtype))


def _evaluate(value, who):
    if callable(value) and not isinstance(value, K.SymbolicTensor):
        value = value()
    if isinstance(value, K.SymbolicTensor):
        try:
            return K.to_numpy(K.Function([], [value], name=who)()[0])
        except ValueError as e:
            raise ValueError(f"{who}: the initial value must be computable "
                             f"without feeding placeholders. {e}") from e
    return value


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=True, collections=None, caching_device=None,
                 partitioner=None, validate_shape=True, use_resource=None,
                 custom_getter=None, constraint=None, **kwargs):
    """A variable named ``<variable_scope>/name``: new, or shared under reuse.

    Args:
        name: name within the current ``variable_scope``.
        shape: tuple of ints; omitted when ``initializer`` is a value.
        dtype: default float32 (or the scope's dtype).
        initializer: a callable ``(shape, dtype)`` (``tf.*_initializer()``,
            kerasflow initializers), or an array/number; default: the scope's
            initializer, else Glorot uniform for floats, zeros otherwise.
        regularizer: callable ``var -> scalar loss``, added to
            ``GraphKeys.REGULARIZATION_LOSSES``.

    Raises:
        ValueError: as TF1: the name exists and the scope does not reuse
            ("... already exists, disallowed. Did you mean to set reuse=True
            or reuse=tf.AUTO_REUSE in VarScope?"); the scope reuses and the
            name does not exist ("... does not exist, or was not created with
            tf.get_variable()..."); a shared variable of another shape; no shape
            for a callable initializer; a shape given with a value initializer.
    """
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    store = G.get_default_graph().var_store
    existing = store.get(full)
    reuse = scope.reuse
    if existing is not None and reuse in (True, AUTO_REUSE):
        if shape is not None and tuple(existing.shape) != tuple(shape):
            raise ValueError(f"Trying to share variable {full}, but specified "
                             f"shape {tuple(shape)} and found shape "
                             f"{tuple(existing.shape)}.")
        if dtype is not None and resolve(dtype) != existing.dtype:
            raise ValueError(f"Trying to share variable {full}, but specified "
                             f"dtype {resolve(dtype).name} and found dtype "
                             f"{existing.dtype.name}.")
        return existing
    if existing is not None:
        raise ValueError(f"Variable {full} already exists, disallowed. Did you "
                         f"mean to set reuse=True or reuse=tf.AUTO_REUSE in "
                         f"VarScope?")
    if reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created "
                         f"with tf.get_variable(). Did you mean to set "
                         f"reuse=tf.AUTO_REUSE in VarScope?")
    # (np.dtype objects are falsy: test for None explicitly.)
    dtype = resolve(dtype if dtype is not None else scope.dtype)
    dtype = np.dtype(K.floatx()) if dtype is None else dtype
    initializer = initializer if initializer is not None else scope.initializer
    if initializer is None:
        initializer = (glorot_uniform_initializer() if dtype.kind == "f"
                       else zeros_initializer())
    if callable(initializer) and not isinstance(initializer, K.SymbolicTensor):
        if shape is None:
            raise ValueError(f"Shape of a new variable ({full}) must be fully "
                             f"defined, but instead was None.")
        value = initializer(tuple(int(d) for d in shape), dtype)
    else:
        if shape is not None:
            raise ValueError(f"If initializer is a constant, do not specify shape. "
                             f"Received for {full}: shape={shape!r}.")
        value = _evaluate(initializer, "get_variable")
    var = K.Variable(np.asarray(K.to_numpy(value), dtype=dtype), trainable=trainable,
                     name=full, dtype=dtype, constraint=constraint)
    store[full] = var
    G.get_default_graph().register_variable(var, collections)
    regularizer = regularizer if regularizer is not None else scope.regularizer
    if regularizer is not None:
        loss = regularizer(var)
        if loss is not None:
            G.add_to_collection(G.GraphKeys.REGULARIZATION_LOSSES, loss)
    return var


# -- collections and initializers ---------------------------------------------------
def global_variables(scope=None) -> list:
    """Variables listed in ``GraphKeys.GLOBAL_VARIABLES`` (optimizer state too)."""
    return G.get_collection(G.GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope=None) -> list:
    return G.get_collection(G.GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list:
    return G.get_collection(G.GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None) -> list:
    return G.get_collection(G.GraphKeys.MODEL_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op setting each variable of ``var_list`` to its initial value."""
    graph = G.get_default_graph()
    ops = []
    for v in var_list:
        initial = graph.initial_values.get(v)
        if initial is not None:
            ops.append(K.assign(v, K.constant(initial)))
    return G.track(K.group(*ops, name=name) if ops else K.no_op(name))


def global_variables_initializer():
    """``variables_initializer(global_variables())``, named "init"."""
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    """Initializes ``local_variables()``; a no-op when there are none."""
    return variables_initializer(local_variables(), name="init_local")


def report_uninitialized_variables(var_list=None):
    """Always empty: kerasflow variables hold a value from creation."""
    return G.as_tensor(np.zeros((0,), dtype=np.int32))


def is_variable_initialized(variable):
    return G.as_tensor(np.asarray(True))


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return G.track(K.assign(ref, G.as_tensor(value, ref.dtype)))


def assign_add(ref, value, use_locking=None, name=None):
    return G.track(K.assign_add(ref, G.as_tensor(value, ref.dtype)))


def assign_sub(ref, value, use_locking=None, name=None):
    return G.track(K.assign_sub(ref, G.as_tensor(value, ref.dtype)))
