"""Nested structures: the one place kerasflow flattens and rebuilds them.

Keras 3's ``keras.tree`` names (``flatten``, ``pack_sequence_as``,
``map_structure``, ``assert_same_structure``, ``is_nested``). A structure is a
leaf or a ``list``, ``tuple`` (named tuples included) or ``dict`` of structures;
everything else, ``None`` and tensors included, is a leaf. Dict values are taken
in sorted-key order, as Keras (via optree) does, so two dicts with the same keys
flatten alike whatever order they were built in; keys that do not sort (mixed
types) keep insertion order.

Example::

    >>> from kerasflow import tree
    >>> tree.flatten({"b": [1, 2], "a": 3})
    [3, 1, 2]
    >>> tree.map_structure(lambda x: x * 10, (1, {"k": 2}))
    (10, {'k': 20})
"""

from __future__ import annotations

__all__ = ["assert_same_structure", "flatten", "flatten_with_path", "is_nested",
           "map_structure", "pack_sequence_as"]


def is_nested(x) -> bool:
    """True for a list, tuple or dict (a structure with children)."""
    return isinstance(x, (list, tuple, dict))


def _keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _children(x) -> list:
    return [x[k] for k in _keys(x)] if isinstance(x, dict) else list(x)


def _rebuild(x, children: list):
    if isinstance(x, dict):
        return type(x)(zip(_keys(x), children))
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a named tuple
        return type(x)(*children)
    return type(x)(children)


def flatten(structure) -> list:
    """The leaves of ``structure``, depth first, dict values by sorted key.

    Iterative, so deeply nested structures do not hit Python's recursion limit.
    """
    out, stack = [], [structure]
    while stack:
        x = stack.pop()
        if is_nested(x):
            stack.extend(reversed(_children(x)))
        else:
            out.append(x)
    return out


def flatten_with_path(structure) -> list:
    """``(path, leaf)`` pairs in ``flatten``'s order; a path is the tuple of
    keys and indices leading to the leaf (Keras 3's ``tree.flatten_with_path``).

    Example::

        >>> flatten_with_path({"b": [1, 2], "a": 3})
        [(('a',), 3), (('b', 0), 1), (('b', 1), 2)]
    """
    out, stack = [], [((), structure)]
    while stack:
        path, x = stack.pop()
        if is_nested(x):
            keys = _keys(x) if isinstance(x, dict) else range(len(x))
            stack.extend(reversed([(path + (k,), c)
                                   for k, c in zip(keys, _children(x))]))
        else:
            out.append((path, x))
    return out


def pack_sequence_as(structure, flat_sequence):
    """``structure`` rebuilt with its leaves taken in order from ``flat_sequence``.

    Raises:
        ValueError: ``flat_sequence`` has fewer or more items than ``structure``
            has leaves.
    """
    flat = list(flat_sequence)
    it = iter(flat)

    def build(x):
        if is_nested(x):
            return _rebuild(x, [build(c) for c in _children(x)])
        try:
            return next(it)
        except StopIteration:
            raise ValueError(
                f"pack_sequence_as expects as many values as the structure has "
                f"leaves ({len(flatten(structure))}). Received: {len(flat)} "
                f"values.") from None

    packed = build(structure)
    if next(it, it) is not it:
        raise ValueError(
            f"pack_sequence_as expects as many values as the structure has leaves "
            f"({len(flatten(structure))}). Received: {len(flat)} values.")
    return packed


def assert_same_structure(a, b) -> None:
    """Raises ``ValueError`` unless ``a`` and ``b`` nest alike (same container
    kinds, lengths and dict keys; leaves may differ)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if is_nested(x) != is_nested(y):
            raise ValueError(f"The two structures differ: {x!r} is "
                             f"{'' if is_nested(x) else 'not '}nested, {y!r} is "
                             f"{'' if is_nested(y) else 'not '}nested.")
        if not is_nested(x):
            continue
        if isinstance(x, dict) != isinstance(y, dict) or (
                isinstance(x, dict) and set(x) != set(y)) or len(x) != len(y):
            raise ValueError(f"The two structures differ. Received: {x!r} and "
                             f"{y!r}.")
        stack.extend(zip(_children(x), _children(y)))


def map_structure(func, *structures):
    """``func`` applied leaf by leaf across ``structures``; the result has the
    first structure's nesting.

    Raises:
        ValueError: the structures do not nest alike.
    """
    if not structures:
        raise ValueError("map_structure expects at least one structure. "
                         "Received: none.")
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    leaves = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*xs) for xs in zip(*leaves)])
