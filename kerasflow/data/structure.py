"""Element structure for ``kerasflow.data``: specs, checks, and calling user functions.

An element is a numpy array (or numpy scalar, or ``bytes``) or a tuple/dict of
elements, flattened and rebuilt with ``kerasflow.tree``. Its spec is the same
structure of ``kerasflow.backend.TensorSpec``; strings have dtype ``object``
(tf.string).
"""

from __future__ import annotations

import threading

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend import TensorSpec
from kerasflow.backend.eager import as_eager

__all__ = ["ElementFunction", "ElementSpecViews", "as_structure", "batched_spec", "call_unpacked", "check_against_spec",
           "check_leaves", "eager_elements", "leaves_like", "merged_spec", "one_structure",
           "signature", "spec_of", "stack", "to_element_leaf", "to_numpy"]


class ElementSpecViews:
    """TF 1.x's views of ``element_spec`` (``output_types``,
    ``output_shapes``), for datasets and their iterators alike."""

    @property
    def output_types(self):
        """TF 1.x: the elements' dtypes, in the element's structure."""
        return tree.map_structure(lambda s: s.dtype, self.element_spec)

    @property
    def output_shapes(self):
        """TF 1.x: the elements' shapes, in the element's structure."""
        return tree.map_structure(lambda s: s.shape, self.element_spec)


def to_numpy(value) -> np.ndarray:
    """One leaf as an array; ``bytes``/``str`` stay strings (dtype 'S')."""
    if isinstance(value, str):
        value = value.encode()
    return np.asarray(value)


def to_element_leaf(value):
    """A leaf as an element holds it: arrays and numpy scalars as they are,
    Python numbers as numpy scalars (numpy's default dtypes), strings as bytes."""
    if isinstance(value, (np.ndarray, np.generic, bytes)):
        return value
    if isinstance(value, str):
        return value.encode()
    return np.asarray(value)[()]


def signature(output_types, output_shapes=None):
    """A ``TensorSpec`` structure from TF 1's ``output_types`` and
    ``output_shapes`` (None: any shape)."""
    types = tree.flatten(output_types)
    shapes = ([None] * len(types) if output_shapes is None else
              leaves_like(output_types, output_shapes, "output_shapes"))
    return tree.pack_sequence_as(output_types, [
        TensorSpec(shape, _spec_dtype(t)) for t, shape in zip(types, shapes)])


def _spec_dtype(t) -> np.dtype:
    if t in (str, bytes) or getattr(t, "name", None) == "string":
        return np.dtype(object)
    return np.dtype(getattr(t, "as_numpy_dtype", t))


def batched_spec(spec, dim, padded_shapes=None):
    """``spec`` with a batch axis of size ``dim`` (None: unknown) in front, and
    padded components' dims from ``padded_shapes`` (None/-1: unknown)."""
    specs = tree.flatten(spec)
    shapes = padded_shapes or [None] * len(specs)
    return tree.pack_sequence_as(spec, [
        TensorSpec((dim, *(s.shape if p is None else (
            None if d is None or d == -1 else d for d in p))), s.dtype)
        for s, p in zip(specs, shapes)])


def as_structure(x):
    """``x`` with lists turned into arrays: in tf.data a list is one tensor, only
    tuples and dicts nest."""
    if isinstance(x, list):
        return to_numpy(x)
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(as_structure(v) for v in x)
    if isinstance(x, dict):
        return type(x)((k, as_structure(v)) for k, v in x.items())
    return x


def _dtype(a: np.ndarray) -> np.dtype:
    return np.dtype(object) if a.dtype.kind in "SUO" else a.dtype


def spec_of(element):
    """The ``TensorSpec`` structure describing ``element``."""
    def one(v):
        a = to_numpy(v)
        return TensorSpec(a.shape, _dtype(a))
    return tree.map_structure(one, element)


def _same_kind(a, b) -> bool:
    """True when specs ``a`` and ``b`` nest alike with equal dtypes."""
    try:
        tree.assert_same_structure(a, b)
    except ValueError:
        return False
    return all(x.dtype == y.dtype for x, y in zip(tree.flatten(a), tree.flatten(b)))


def _leaf_dtypes(element) -> list:
    out = []
    for v in tree.flatten(element):
        d = v.dtype if isinstance(v, (np.ndarray, np.generic)) else to_numpy(v).dtype
        out.append(np.dtype(object) if d.kind in "SUO" else d)
    return out


def one_structure(elements, what: str):
    """``elements`` passed through, each checked to have the first one's
    structure and dtypes (tf.data fixes both when a dataset is built; shapes
    may differ).

    Raises:
        TypeError: an element of another structure or dtype, naming both.
    """
    first = dtypes = None
    try:
        for i, element in enumerate(elements):
            if dtypes is None:
                first, dtypes = element, _leaf_dtypes(element)
            else:
                try:
                    tree.assert_same_structure(first, element)
                    same = _leaf_dtypes(element) == dtypes
                except ValueError:
                    same = False
                if not same:
                    raise TypeError(
                        f"{what}: element {i} differs in structure or dtype from "
                        f"element 0 (tf.data fixes both when the dataset is "
                        f"built). Expected: {spec_of(first)}. Received: "
                        f"{spec_of(element)}.")
            yield element
    finally:
        close = getattr(elements, "close", None)
        if close is not None:
            close()


def merged_spec(a, b, what: str):
    """One spec for the elements of specs ``a`` and ``b``: dims that differ
    become None (``concatenate``).

    Raises:
        TypeError: another structure or dtype, naming both.
    """
    if a is None or b is None:
        return b if a is None else a
    if not _same_kind(a, b):
        raise TypeError(f"{what} expects datasets with one element structure and "
                        f"dtypes. Received: {a} and {b}.")

    def relaxed(x, y):
        if x.shape is None or y.shape is None or len(x.shape) != len(y.shape):
            return TensorSpec(None, x.dtype)
        return TensorSpec(tuple(d if d == e else None
                                for d, e in zip(x.shape, y.shape)), x.dtype)
    return tree.map_structure(relaxed, a, b)


def check_leaves(structure, what: str) -> None:
    """Refuses leaves that are no tensor: a set, a dict view, any object."""
    for v in tree.flatten(structure):
        if isinstance(v, (set, frozenset)) or (
                not isinstance(v, (str, bytes, np.ndarray, np.generic))
                and to_numpy(v).dtype == object):
            raise TypeError(f"{what} expects arrays, numbers or strings, in "
                            f"tuples or dicts. Received: a {type(v).__name__} "
                            f"({v!r:.80}).")


def leaves_like(structure, values, what: str) -> list:
    """``values`` flattened to ``structure``'s leaves, where a leaf of ``values``
    may itself be a tuple (a shape); a mismatch raises ``ValueError`` naming
    ``what``."""
    if isinstance(structure, dict):
        if not isinstance(values, dict) or set(values) != set(structure):
            raise ValueError(f"{what} must be a dict with keys {sorted(structure)}. "
                             f"Received: {values!r}.")
        return [leaf for k in sorted(structure)
                for leaf in leaves_like(structure[k], values[k], what)]
    if isinstance(structure, tuple):
        if not isinstance(values, (tuple, list)) or len(values) != len(structure):
            raise ValueError(f"{what} must be a sequence of {len(structure)} items "
                             f"matching the element structure. Received: "
                             f"{values!r}.")
        return [leaf for s, v in zip(structure, values)
                for leaf in leaves_like(s, v, what)]
    return [values]


def check_against_spec(element, signature, what: str = "generator"):
    """``element`` converted to ``signature``'s dtypes after checking its
    structure, dtypes (same-kind casts only) and shapes (None matches any size).

    Raises:
        TypeError: a dtype that does not cast (e.g. float into int32).
        ValueError: a different structure or an incompatible shape.
    """
    specs = tree.flatten(signature)
    values = leaves_like(signature, as_structure(element), f"The {what}'s element")
    out = []
    for spec, v in zip(specs, values):
        a = to_numpy(v)
        if spec.dtype == np.dtype(object):
            if a.dtype.kind not in "SUO":
                raise TypeError(f"The {what} yielded a {a.dtype} value where a "
                                f"string was expected. Received: {v!r}.")
        elif a.dtype != spec.dtype:
            if not np.can_cast(a.dtype, spec.dtype, "same_kind"):
                raise TypeError(f"The {what} yielded a value of dtype {a.dtype} "
                                f"where {spec.dtype} was expected. Received: {v!r}.")
            a = a.astype(spec.dtype)
        if spec.shape is not None and (a.ndim != len(spec.shape) or any(
                d is not None and d != n for d, n in zip(spec.shape, a.shape))):
            raise ValueError(f"The {what} yielded an element of shape {a.shape} "
                             f"where an element of shape {spec.shape} was "
                             f"expected.")
        out.append(a[()] if a.ndim == 0 else a)
    return tree.pack_sequence_as(signature, out)


def call_unpacked(func, element):
    """``func(*element)`` for a tuple element, else ``func(element)`` (tf.data's
    ``map``/``filter``/``interleave`` convention); lists returned become arrays."""
    if isinstance(element, tuple) and not hasattr(element, "_fields"):
        return as_structure(func(*element))
    return as_structure(func(element))


class ElementFunction:
    """A user function over elements (``map``'s, ``filter``'s), called as
    tf.data calls it: unpacked (``call_unpacked``) on each element.

    A function of numpy or Keras ops runs eagerly per element. One that
    returns graph tensors (``compat.v1`` ops such as ``tf.cast``,
    ``tf.equal``, ``tf.image.*`` build graph nodes) is traced as TF traces a
    map function: once per element signature (each component's shape and
    dtype) into a compiled ``backend.Function`` with one placeholder per
    component, which then runs per element. A function that cannot be traced
    (numpy code mixed in, e.g. ``decode_csv`` before ``tf.equal``) runs
    eagerly per element and its graph outputs are evaluated there.
    """

    def __init__(self, func):
        self.func = func
        self._graph = None  # None: not called yet; False: eager; True: traced
        self._traces: dict = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        # Shipped to a replica (a multi-worker pipeline): traces are rebuilt there.
        return {"func": self.func}

    def __setstate__(self, state):
        self.__init__(state["func"])

    def __call__(self, element):
        if self._graph is False:
            return call_unpacked(self.func, element)
        if self._graph:
            return self._run(element)
        out = call_unpacked(self.func, element)
        if not any(K.is_symbolic(v) for v in tree.flatten(out)):
            self._graph = False
            return out
        self._graph = True
        return self._run(element)

    def _run(self, element):
        arrays = [_component(v) for v in tree.flatten(element)]
        key = tuple((a.shape, a.dtype.str) for a in arrays)
        trace = self._traces.get(key, _UNTRACED)
        if trace is _UNTRACED:
            with self._lock:
                trace = self._traces.get(key, _UNTRACED)
                if trace is _UNTRACED:
                    trace = self._traces[key] = self._trace(element, arrays)
        if trace is None:  # not traceable: eager, graph outputs evaluated
            out = call_unpacked(self.func, element)
            flat = tree.flatten(out)
            symbolic = [v for v in flat if K.is_symbolic(v)]
            values = iter(K.Function([], symbolic, name="map_eager")()
                          if symbolic else ())
            return tree.pack_sequence_as(
                out, [_leaf(next(values)) if K.is_symbolic(v) else v for v in flat])
        plan, structure, consts = trace
        values = iter(plan(*arrays))
        return tree.pack_sequence_as(structure, [
            _leaf(next(values)) if c is _FETCHED else c for c in consts])

    def _trace(self, element, arrays):
        """``(plan, output structure, constants)`` for ``arrays``' signature,
        or None when the function fails on placeholders."""
        feeds = [K.placeholder(a.dtype, a.shape, name=f"element_{i}")
                 for i, a in enumerate(arrays)]
        try:
            out = call_unpacked(self.func, tree.pack_sequence_as(element, feeds))
            flat = tree.flatten(out)
            fetched = [v for v in flat if K.is_symbolic(v)]
            plan = K.Function(feeds, fetched, name=f"map_{_name(self.func)}")
        except Exception:  # numpy code on a placeholder: run it eagerly
            return None
        return plan, out, [_FETCHED if K.is_symbolic(v) else v for v in flat]


_UNTRACED, _FETCHED = object(), object()


def _name(func) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _component(value) -> np.ndarray:
    """An element's component as the array fed to a placeholder (strings as
    object arrays of bytes, tf.string)."""
    a = to_numpy(value)
    return a.astype(object) if a.dtype.kind in "SU" else a


def _leaf(value):
    """A plan's output as an element holds it: 0-d arrays as numpy scalars."""
    a = K.to_numpy(value)
    return a[()] if a.ndim == 0 else a


def eager_elements(elements):
    """``elements`` with each leaf as TF 2's eager tensor (``as_eager``: a
    view, no copy)."""
    for element in elements:
        if isinstance(element, tuple) and not hasattr(element, "_fields"):
            yield tuple(as_eager(v) if not isinstance(v, (tuple, dict)) else
                        tree.map_structure(as_eager, v) for v in element)
        elif isinstance(element, (np.ndarray, np.generic, bytes)):
            yield as_eager(element)
        else:
            yield tree.map_structure(as_eager, element)


def stack(elements: list):
    """Elements stacked leaf by leaf along a new axis 0 (``batch``).

    Raises:
        ValueError: elements of different shapes, suggesting ``padded_batch``.
    """
    # Flattening each element once (no structure comparison per element) keeps
    # batching cheap; a dataset's elements share one structure by construction.
    leaves = [tree.flatten(e) for e in elements]
    if len({len(f) for f in leaves}) > 1:
        raise ValueError(f"Cannot batch elements of different structures. "
                         f"Received: {elements[0]!r} and another with "
                         f"{len(leaves[-1])} components.")
    out = []
    for column in zip(*leaves):
        arrays = [to_numpy(v) for v in column]
        first = arrays[0].shape
        for i, a in enumerate(arrays):
            if a.shape != first:
                raise ValueError(
                    f"Cannot batch elements of different shapes: element 0 has "
                    f"shape {first} and element {i} has shape {a.shape}. Use "
                    f"padded_batch() for ragged elements, or map() them to one "
                    f"shape first.")
        out.append(np.stack(arrays))
    return tree.pack_sequence_as(elements[0], out)
