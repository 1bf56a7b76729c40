"""Checks of model configs (JSON or YAML text) before any layer is built.

A model file is untrusted input: its config is parsed without aliases,
checked for nesting depth, layer count and structure, and only then turned
into layers, so a hostile or broken file gives a ``ValueError`` naming the
file, where in the config the problem is, what was expected and what was
received, instead of a hang, a ``RecursionError`` or a ``KeyError``.

The caps are module attributes, documented and overridable:

- ``MAX_LAYERS`` (100,000): layers in the whole config, nested models
  included;
- ``MAX_NESTING`` (32): models inside models;
- ``MAX_DEPTH`` (500): nesting of JSON/YAML containers (dicts and lists);
- ``MAX_UNITS`` (2**31 - 1): ``units``/``filters``-style sizes.
"""

from __future__ import annotations

import json

import yaml

from kerasflow.saving import keras_config

__all__ = ["MAX_DEPTH", "MAX_LAYERS", "MAX_NESTING", "MAX_UNITS",
           "check_model_config", "is_ref", "parse_json", "parse_yaml"]

MAX_LAYERS = 100_000
MAX_NESTING = 32
MAX_DEPTH = 500
MAX_UNITS = 2**31 - 1

_MODEL_CLASSES = ("Sequential", "Model", "Functional")
_SIZE_KEYS = ("units", "filters", "output_dim", "input_dim", "num_heads")


def _error(source, where, expected, received) -> ValueError:
    return ValueError(f"'{source}': {where} expects {expected}. Received: "
                      f"{received}.")


# -- parsing ---------------------------------------------------------------------------
def parse_json(text, source):
    """Parses JSON text, refusing nesting deeper than ``MAX_DEPTH``.

    Raises:
        ValueError: invalid JSON, or nesting too deep (naming ``source``).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise _error(source, "the config", f"nesting at most {MAX_DEPTH} deep",
                     "nesting too deep to parse") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"'{source}' holds invalid JSON: {e}") from None
    _check_depth(value, source)
    return value


class _NoAliasLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses aliases (``*ref``).

    Aliases let a 1 KB file describe 10**9 layers ("billion laughs"); model
    files written by ``to_yaml`` never contain them.
    """

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "model YAML expects no aliases (to_yaml writes none). "
                f"Received: the alias '*{event.anchor}'", event.start_mark)
        return super().compose_node(parent, index)


def parse_yaml(text, source):
    """Parses YAML with safe tags only and no aliases, depth at most ``MAX_DEPTH``.

    Raises:
        ValueError: invalid or unsafe YAML, an alias, or nesting too deep.
    """
    try:
        value = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (safe + no alias)
    except RecursionError:
        raise _error(source, "the config", f"nesting at most {MAX_DEPTH} deep",
                     "nesting too deep to parse") from None
    except yaml.YAMLError as e:
        raise ValueError(f"'{source}' holds invalid or unsafe YAML: {e}") from None
    _check_depth(value, source)
    return value


def _check_depth(value, source):
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d > MAX_DEPTH:
            raise _error(source, "the config", f"nesting at most {MAX_DEPTH} deep",
                         f"deeper nesting (> {MAX_DEPTH} levels)")
        stack.extend((c, d + 1) for c in children)


# -- structure -------------------------------------------------------------------------
def check_model_config(config, source, max_layers=None, max_nesting=None):
    """Checks a ``{"class_name", "config"}`` model/layer config before building.

    Args:
        config: the parsed config.
        source: the file (or "model_from_json input") named in errors.
        max_layers, max_nesting: caps; default ``MAX_LAYERS``, ``MAX_NESTING``.

    Raises:
        ValueError: a spec without ``class_name``/``config``, ``layers`` that is
            not a list of specs, a functional config whose nodes refer to
            unknown layers or to outputs not computed before them (a cycle),
            a size argument out of range, too many layers or too deep nesting;
            naming the file, the place in the config, the layer, what was
            expected and what was received.
    """
    max_layers = MAX_LAYERS if max_layers is None else max_layers
    max_nesting = MAX_NESTING if max_nesting is None else max_nesting
    count = 0
    stack = [(config, "config", 0)]
    while stack:
        spec, where, nesting = stack.pop()
        inner = _check_spec(spec, where, source)
        count += 1
        if count > max_layers:
            raise _error(source, "the config", f"at most {max_layers} layers "
                         f"(kerasflow.saving.config_checks.MAX_LAYERS)",
                         f"more than {max_layers}")
        name = inner.get("name", spec["class_name"])
        _check_sizes(inner, where, name, source)
        if "layers" not in inner:
            continue
        if nesting + 1 > max_nesting:
            raise _error(source, f"{where} (model '{name}')",
                         f"models nested at most {max_nesting} deep "
                         f"(kerasflow.saving.config_checks.MAX_NESTING)",
                         f"deeper nesting at {where}")
        layers = inner["layers"]
        if not isinstance(layers, list):
            raise _error(source, f"{where}.config.layers (model '{name}')",
                         "a list of layer configs",
                         f"{type(layers).__name__} {_short(layers)}")
        for i, sub in enumerate(layers):
            _check_spec(sub, f"{where}.config.layers[{i}]", source)
            stack.append((sub, f"{where}.config.layers[{i}]", nesting + 1))
        if "nodes" in inner or spec["class_name"] in ("Model", "Functional"):
            _check_functional(inner, f"{where}.config", name, source)


def _short(v, n=60):
    r = repr(v)
    return r if len(r) <= n else r[:n] + "..."


def _check_spec(spec, where, source):
    if not isinstance(spec, dict):
        raise _error(source, where, "a layer config {'class_name': ..., "
                     "'config': {...}}", f"{type(spec).__name__} {_short(spec)}")
    cls = spec.get("class_name")
    if not isinstance(cls, str):
        raise _error(source, where, "a 'class_name' string",
                     f"class_name={_short(cls)}" if "class_name" in spec
                     else f"keys {sorted(map(str, spec))}")
    if "config" not in spec:
        raise _error(source, f"{where} (class '{cls}')", "a 'config' mapping",
                     f"no 'config' key (keys: {sorted(map(str, spec))})")
    inner = spec["config"]
    if not isinstance(inner, dict):
        raise _error(source, f"{where}.config (class '{cls}')", "a mapping",
                     f"{type(inner).__name__} {_short(inner)}")
    if cls in _MODEL_CLASSES and "layers" not in inner:
        raise _error(source, f"{where}.config (model class '{cls}')",
                     "a 'layers' list", f"keys {sorted(map(str, inner))}")
    return inner


def _check_sizes(inner, where, name, source):
    for key in _SIZE_KEYS:
        if key not in inner or inner[key] is None:
            continue
        v = inner[key]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_UNITS:
            raise _error(source, f"{where} (layer '{name}')",
                         f"{key} as an integer in [1, {MAX_UNITS}]",
                         f"{key}={_short(v)}")


def is_ref(v) -> bool:
    """True for a tensor reference ``[producer name, call index, output index]``."""
    return (isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in v[1:]))


def _refs(struct):
    stack, out = [struct], []
    while stack:
        v = stack.pop()
        if is_ref(v):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def _check_functional(inner, where, model, source):
    names = []
    for spec in inner["layers"]:
        lname = spec.get("name", spec["config"].get("name"))
        if not isinstance(lname, str):
            raise _error(source, f"{where}.layers (model '{model}')",
                         "a 'name' string per layer", f"name={_short(lname)}")
        names.append(lname)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise _error(source, f"{where}.layers (model '{model}')",
                     "unique layer names", f"duplicates {dupes}")
    produced = {n: (1 if s["class_name"] == "InputLayer" else 0)
                for n, s in zip(names, inner["layers"])}
    if "nodes" not in inner and keras_config.has_inbound_nodes(inner):
        return  # Keras' layout: checked once Model.from_config converts it
    if "nodes" not in inner:
        raise _error(source, f"{where} (model '{model}')", "a 'nodes' list (the "
                     "layer calls and ops, in order)",
                     f"keys {sorted(map(str, inner))}")
    nodes = inner["nodes"]
    if not isinstance(nodes, list):
        raise _error(source, f"{where}.nodes (model '{model}')", "a list of nodes",
                     f"{type(nodes).__name__} {_short(nodes)}")
    # Ops are known by name up front, so a reference to one defined further
    # down reads as "computed later" (a cycle), not as "unknown".
    for i, node in enumerate(nodes):
        key = node.get("name") if isinstance(node, dict) and "op" in node else None
        if isinstance(key, str):
            if key in produced:
                raise _error(source, f"{where}.nodes[{i}] (model '{model}')",
                             "an op name unique among layers and ops",
                             f"name={key!r}, already used")
            produced[key] = 0
    for i, node in enumerate(nodes):
        here = f"{where}.nodes[{i}] (model '{model}')"
        if isinstance(node, dict) and "op" in node:
            _check_op_node(node, produced, here, source)
            continue
        if not isinstance(node, dict) or node.get("layer") not in produced:
            got = node.get("layer") if isinstance(node, dict) else node
            raise _error(source, here, f"a node {{'layer': one of {names[:8]}"
                         f"{'...' if len(names) > 8 else ''}, 'inputs': ...}} "
                         f"or {{'op': ..., 'name': ..., 'inputs': [...]}}",
                         _short(got))
        _check_refs([node.get("inputs"), node.get("kwargs")], produced, here,
                    f"layer '{node['layer']}'", source)
        produced[node["layer"]] += 1
    for key in ("input_layers", "output_layers"):
        if key not in inner:
            raise _error(source, f"{where} (model '{model}')", f"an '{key}' entry",
                         f"keys {sorted(map(str, inner))}")
        _check_refs(inner[key], produced, f"{where}.{key} (model '{model}')",
                    "the model", source)


def _check_op_node(node, produced, here, source):
    op, key = node.get("op"), node.get("name")
    if not isinstance(op, str) or not isinstance(key, str):
        raise _error(source, here, "an op node with 'op' and 'name' strings",
                     f"op={_short(op)}, name={_short(key)}")
    if not isinstance(node.get("inputs"), list):
        raise _error(source, here, f"op '{key}' to have an 'inputs' list",
                     _short(node.get("inputs")))
    if not isinstance(node.get("attrs", {}), dict):
        raise _error(source, here, f"op '{key}' to have an 'attrs' mapping",
                     _short(node.get("attrs")))
    _check_refs(node["inputs"], produced, here, f"op '{key}'", source)
    produced[key] = 1


def _check_refs(struct, produced, here, user, source):
    for layer, call, index in _refs(struct):
        if layer not in produced:
            raise _error(source, here, f"{user} to take outputs of known layers or ops",
                         f"a reference to unknown layer '{layer}'")
        if not 0 <= call < produced[layer] or index < 0:
            raise _error(
                source, here,
                f"{user} to take the output of layer '{layer}' call {call} "
                f"computed before it ({produced[layer]} call(s) so far)",
                "a reference to a call computed later or never: the graph has a "
                "cycle or its nodes are out of order")
