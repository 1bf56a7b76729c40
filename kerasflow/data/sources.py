"""In-memory and generator sources behind ``Dataset``'s constructors.

Each function returns ``(make_iterator, cardinality, element_spec)``, the three
things a ``Dataset`` is made of (tf.data semantics; see ``Dataset``'s
docstrings for the public contract).
"""

from __future__ import annotations

import numpy as np

from kerasflow import tree
from kerasflow.backend import SymbolicTensor, TensorSpec
from kerasflow.data import structure as st
from kerasflow.data.cardinality import UNKNOWN_CARDINALITY
from kerasflow.data.iterator import bound_value

__all__ = ["generated", "int_range", "single", "slices"]


def slices(tensors):
    """Rows of ``tensors`` along axis 0 (``from_tensor_slices``); a fourth item,
    ``row_range(start, stop)``, gives rows start..stop-1 already stacked."""
    structure = st.as_structure(tensors)
    if any(isinstance(v, SymbolicTensor) for v in tree.flatten(structure)):
        return _fed_slices(structure)
    st.check_leaves(structure, "from_tensor_slices")
    leaves = [st.to_numpy(v) for v in tree.flatten(structure)]
    if any(a.ndim == 0 for a in leaves):
        raise ValueError("from_tensor_slices needs components with a first axis "
                         "to slice. Received a scalar component.")
    sizes = [a.shape[0] for a in leaves]
    if len(set(sizes)) > 1:
        raise ValueError(f"from_tensor_slices needs components of one length on "
                         f"axis 0. Received lengths {sizes}.")
    n = sizes[0]

    def rows():
        for i in range(n):
            yield tree.pack_sequence_as(structure, [a[i] for a in leaves])

    def row_range(start, stop):  # batch()'s fast path: copies, as stacking would
        return tree.pack_sequence_as(structure, [a[start:stop].copy()
                                                 for a in leaves])

    spec = tree.pack_sequence_as(structure, [
        TensorSpec(a.shape[1:], st.spec_of(a).dtype) for a in leaves])
    return rows, n, spec, row_range


def _fed_slices(structure):
    """``from_tensor_slices`` of placeholders: rows of the values fed to them
    when an initializable iterator's initializer last ran (TF 1.x)."""
    leaves = tree.flatten(structure)
    if any(not isinstance(v, SymbolicTensor) or v.shape is None or not v.shape
           for v in leaves):
        raise ValueError("from_tensor_slices of tensors needs placeholders of "
                         "rank >= 1 for every component (fed through an "
                         "initializable iterator's initializer). Received: "
                         f"{leaves!r}.")

    def rows():
        values = [np.asarray(bound_value(v)) for v in leaves]
        return (tree.pack_sequence_as(structure, [a[i] for a in values])
                for i in range(len(values[0])))

    spec = tree.pack_sequence_as(structure, [
        TensorSpec(v.shape[1:], v.dtype) for v in leaves])
    return rows, UNKNOWN_CARDINALITY, spec


def single(tensors):
    """One element, ``tensors`` (``from_tensors``)."""
    structure = st.as_structure(tensors)
    st.check_leaves(structure, "from_tensors")
    element = tree.map_structure(lambda v: st.to_numpy(v)[()], structure)
    return (lambda: iter([element])), 1, st.spec_of(element)


def generated(generator, args, signature, output_types=None, output_shapes=None):
    """``generator(*args)``'s elements checked against ``signature``, else the
    one TF 1's ``output_types``/``output_shapes`` describe (``from_generator``)."""
    if not callable(generator):
        raise TypeError(f"`generator` must be a callable returning an iterator. "
                        f"Received: {type(generator).__name__}.")
    if signature is None and output_types is None:
        raise TypeError("from_generator needs output_signature (a structure of "
                        "TensorSpec) or output_types. Received neither.")
    if signature is None:
        signature = st.signature(output_types, output_shapes)
    call_args = tuple(args or ())

    def checked():
        for element in generator(*call_args):
            yield st.check_against_spec(element, signature)

    return checked, UNKNOWN_CARDINALITY, signature


def int_range(args, dtype):
    """``range(*args)`` as scalars of ``dtype`` (``Dataset.range``)."""
    if not 1 <= len(args) <= 3:
        raise ValueError(f"range takes 1 to 3 arguments (start, stop, step). "
                         f"Received: {len(args)}.")
    if len(args) == 3 and int(args[2]) == 0:
        raise ValueError("range's step must not be 0. Received: step=0.")
    r = range(*(int(a) for a in args))
    dt = np.dtype(dtype)
    return (lambda: (dt.type(v) for v in r)), len(r), st.spec_of(dt.type(0))
