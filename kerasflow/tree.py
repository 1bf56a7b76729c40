"""Nested structures: the one place kerasflow flattens and rebuilds them.

Keras 3's ``keras.tree`` names (``flatten``, ``flatten_with_path``,
``pack_sequence_as``, ``map_structure``, ``map_structure_up_to``,
``map_shape_structure``, ``traverse``, ``lists_to_tuples``,
``assert_same_structure``, ``assert_same_paths``, ``is_nested``). A structure is a
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

__all__ = ["MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten",
           "flatten_with_path", "is_nested", "lists_to_tuples", "map_shape_structure",
           "map_structure", "map_structure_up_to", "pack_sequence_as", "traverse"]


class MAP_TO_NONE:  # noqa: N801 (Keras' name)
    """Returned by a ``traverse`` function to put None in the structure (a
    plain None means "keep going")."""


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


def map_structure_up_to(shallow_structure, func, *structures):
    """``func`` applied to the subtrees of ``structures`` found at the leaves
    of ``shallow_structure`` (Keras 3's ``tree.map_structure_up_to``); the
    result nests as ``shallow_structure``.

    Example::

        >>> map_structure_up_to((None, None), len, ([1, 2], {"a": 1}))
        (2, 1)

    Raises:
        ValueError: no structures, or a structure that does not nest as
            ``shallow_structure`` down to its leaves.
    """
    if not structures:
        raise ValueError("Must provide at least one structure")

    def walk(shallow, parts):
        if not is_nested(shallow):
            return func(*parts)
        for part in parts:
            if (not is_nested(part) or isinstance(part, dict) != isinstance(
                    shallow, dict) or len(part) != len(shallow) or (
                    isinstance(shallow, dict) and set(part) != set(shallow))):
                raise ValueError(f"Structures don't have the same nested "
                                 f"structure. Received: {shallow!r} and {part!r}.")
        children = [_children(p) for p in parts]
        return _rebuild(shallow, [walk(c, [ch[i] for ch in children])
                                  for i, c in enumerate(_children(shallow))])

    return walk(shallow_structure, list(structures))


def traverse(func, structure, top_down=True):
    """Applies ``func`` to every node, containers included (Keras 3's
    ``tree.traverse``).

    Top down, a node where ``func`` returns None is traversed further; any
    other value replaces it (``MAP_TO_NONE`` replaces it with None). Bottom up,
    children are traversed first and ``func`` sees the rebuilt node; None keeps
    it.

    Example::

        >>> traverse(lambda x: x * 2 if isinstance(x, int) else None, [1, (2,)])
        [2, (4,)]
    """
    def rebuilt(x):
        if not is_nested(x):
            return x
        return _rebuild(x, [traverse(func, c, top_down) for c in _children(x)])

    if top_down:
        ret = func(structure)
        if ret is None:
            return rebuilt(structure)
    else:
        structure = rebuilt(structure)
        ret = func(structure)
        if ret is None:
            return structure
    return None if ret is MAP_TO_NONE else ret


def lists_to_tuples(structure):
    """``structure`` with every list, at any depth, turned into a tuple."""
    return traverse(lambda x: tuple(x) if isinstance(x, list) else None,
                    structure, top_down=False)


def _is_shape(x) -> bool:
    return isinstance(x, (list, tuple)) and all(
        isinstance(e, (int, type(None))) for e in x)


def map_shape_structure(func, structure):
    """``func`` applied to each shape in ``structure``: a list or tuple of ints
    and Nones is one leaf (a shape), not a container (Keras 3's
    ``tree.map_shape_structure``)."""
    if _is_shape(structure) or not is_nested(structure):
        return func(structure)
    return _rebuild(structure, [map_shape_structure(func, c)
                                for c in _children(structure)])


def assert_same_paths(a, b) -> None:
    """Raises ``ValueError`` unless ``a`` and ``b`` have the same leaf paths
    (container kinds may differ: ``[1, 2]`` and ``(3, 4)`` match).

    Raises:
        ValueError: naming the paths each lacks.
    """
    a_paths = {p for p, _ in flatten_with_path(a)}
    b_paths = {p for p, _ in flatten_with_path(b)}
    if a_paths != b_paths:
        msg = "`a` and `b` don't have the same paths."
        if a_paths - b_paths:
            msg += f"\nPaths in `a` missing in `b`:\n{a_paths - b_paths}"
        if b_paths - a_paths:
            msg += f"\nPaths in `b` missing in `a`:\n{b_paths - a_paths}"
        raise ValueError(msg)
