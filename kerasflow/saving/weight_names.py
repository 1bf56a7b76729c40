"""Names for a model's weights in files, and matching a file's weights to a model.

Each weight is saved under two keys:

* its **name**: the layer names from the model down to the layer that owns it,
  then the weight's own name (``"dense_1/kernel"``, ``"encoder/dense/bias"``),
  as ``model.load_weights(..., by_name=True)`` in tf.keras matched them;
* its **path**: the same walk with each layer named by its class in snake case
  and a counter per container (``"dense_1/kernel"`` is the second ``Dense`` of
  the model), as Keras 3's ``.weights.h5`` files, so a model rebuilt in code
  (whose automatic layer names differ) still finds its weights.

Loading is all-or-nothing: every weight of the file must find a weight of the
model and the other way round, first by name, else by path; otherwise the error
lists the unmatched names on both sides and no weight changes. Files written
before names were matched carry no paths and load by position, as they did.
"""

from __future__ import annotations

import warnings

from kerasflow.utils.serialization import to_snake_case

__all__ = ["SavedNames", "match_weights", "weight_keys"]

_SHOWN = 20  # unmatched names listed per side in an error


class SavedNames(list):
    """The weight names read from a file, with their paths (None: older file)."""

    paths: list | None = None


def _short(var, layer) -> str:
    given = layer.__dict__.get("_weight_names", {}).get(id(var))
    if given is not None:  # the name passed to add_weight
        return given
    prefix = f"{layer.name}/"
    return var.name.removeprefix(prefix)


def _walk(layer, name, path, keys, seen):
    for var in layer._trainable_weights + layer._non_trainable_weights:
        if id(var) not in keys:
            short = _short(var, layer)
            keys[id(var)] = (name + short, path + short)
    counts: dict[str, int] = {}
    for sub in layer._sub_layers:
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        base = to_snake_case(type(sub).__name__)
        n = counts.get(base, 0)
        counts[base] = n + 1
        _walk(sub, f"{name}{sub.name}/", f"{path}{base if n == 0 else f'{base}_{n}'}/",
              keys, seen)


def _unique(keys: list[str]) -> list[str]:
    # Two weights with one name inside a layer: later ones get ":1", ":2"...
    seen: dict[str, int] = {}
    out = []
    for k in keys:
        n = seen.get(k, 0)
        seen[k] = n + 1
        out.append(k if n == 0 else f"{k}:{n}")
    return out


def weight_keys(model) -> tuple[list[str], list[str]]:
    """(names, paths) of ``model.weights``, in that order, each list unique."""
    keys: dict[int, tuple[str, str]] = {}
    _walk(model, "", "", keys, {id(model)})
    pairs = [keys.get(id(v), (v.name, v.name)) for v in model.weights]
    return _unique([n for n, _ in pairs]), _unique([p for _, p in pairs])


def _order(wanted: list[str], saved: list[str]):
    """Indices into ``saved`` for each of ``wanted``, or None unless the two
    hold exactly the same keys, each once."""
    if len(set(saved)) != len(saved) or set(saved) != set(wanted):
        return None
    where = {k: i for i, k in enumerate(saved)}
    return [where[k] for k in wanted]


def _listing(keys) -> str:
    keys = sorted(keys)
    more = f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
    return f"{keys[:_SHOWN]}{more}"


def match_weights(model, saved: SavedNames, arrays: list, source) -> list:
    """The saved arrays in ``model.weights`` order, matched by name, else path.

    Args:
        model: the model to load into.
        saved: the file's weight names (with ``.paths`` for current files).
        arrays: the file's arrays, one per name.
        source: the file, for messages.

    Returns:
        One array per weight of ``model.weights``.

    Raises:
        ValueError: the file's weights and the model's differ by name and by
            path, listing the names found only in the file and only in the
            model.
    """
    names, paths = weight_keys(model)
    order = _order(names, list(saved))
    if order is None and saved.paths is not None:
        order = _order(paths, list(saved.paths))
    if order is not None:
        return [arrays[i] for i in order]
    if saved.paths is None and len(saved) == len(names):
        warnings.warn(
            f"'{source}' was written before weights were saved with their paths "
            f"and its names differ from model '{model.name}''s: loading by "
            f"position. Save it again to load by name.", stacklevel=3)
        return list(arrays)
    raise ValueError(
        f"The weights in '{source}' do not match model '{model.name}' by name or "
        f"by layer structure; nothing was loaded. In the file only: "
        f"{_listing(set(saved) - set(names))}. In the model only: "
        f"{_listing(set(names) - set(saved))}. (The file has {len(saved)} "
        f"weights, the model {len(names)}.)"
    )
