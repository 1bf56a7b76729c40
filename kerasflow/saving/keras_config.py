"""Keras' functional config layout (per-layer ``inbound_nodes``) read as kerasflow's.

Keras lists, for each layer, the calls made on it (``inbound_nodes``): Keras 3
as ``{"args": [...], "kwargs": {...}}`` with tensors written as
``{"class_name": "__keras_tensor__", "config": {"keras_history": [layer,
node, index]}}``, Keras 2 as ``[[layer, node, index, kwargs], ...]``.
kerasflow's config lists every call once, in an order where inputs come
first (``kerasflow.models.functional_config``). ``to_nodes`` sorts Keras' calls into that
order, so a Keras config's graph (a loop, a missing layer) is checked the same
way; the layers' own configs are read by the layer classes as they are.
"""

from __future__ import annotations

__all__ = ["has_inbound_nodes", "to_nodes"]


def has_inbound_nodes(config) -> bool:
    """True for a Keras-layout functional config (no ``nodes``, per-layer
    ``inbound_nodes``)."""
    return (isinstance(config, dict) and "nodes" not in config
            and isinstance(config.get("layers"), list)
            and any(isinstance(s, dict) and "inbound_nodes" in s
                    for s in config["layers"]))


def _name(spec):
    return spec.get("name") or (spec.get("config") or {}).get("name")


def _refs(v, out):
    """``v`` with Keras tensors replaced by ``[layer, node, index]``; each
    found reference is appended to ``out``."""
    if isinstance(v, dict):
        if v.get("class_name") == "__keras_tensor__":
            ref = list(v["config"]["keras_history"])
            out.append(ref)
            return ref
        return {k: _refs(x, out) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_refs(x, out) for x in v]
    return v


def _parse_call(node):
    """(inputs, nargs, kwargs, refs) of one Keras inbound node."""
    refs: list = []
    if isinstance(node, dict):  # Keras 3
        args = _refs(list(node.get("args", [])), refs)
        kwargs = _refs(dict(node.get("kwargs", {})), refs)
        if len(args) == 1:
            return args[0], 0, kwargs, refs
        return args, len(args), kwargs, refs
    entries = [list(e) for e in node]  # Keras 2: [[layer, node, index, kwargs]]
    kwargs = entries[0][3] if entries and len(entries[0]) > 3 else {}
    tensors = [e[:3] for e in entries]
    refs.extend(tensors)
    return (tensors[0] if len(tensors) == 1 else tensors), 0, kwargs or {}, refs


def to_nodes(config) -> dict:
    """``config`` with Keras' ``inbound_nodes`` turned into kerasflow's ``nodes``.

    Raises:
        ValueError: a call that takes the output of a layer the config does not
            have ("Missing node: ..."), or calls that depend on each other in a
            loop, naming the layers.
    """
    specs = config["layers"]
    inputs = {_name(s) for s in specs if s.get("class_name") == "InputLayer"}
    calls = {}
    for spec in specs:
        for k, node in enumerate(spec.get("inbound_nodes") or []):
            calls[(_name(spec), k)] = _parse_call(node)

    def producer(ref):
        key = (ref[0], ref[1])
        if ref[0] in inputs:
            return None
        if key not in calls:
            raise ValueError(f"Functional config expects every call it refers to "
                             f"among its layers' inbound nodes. Missing node: "
                             f"{ref[0]} (call {ref[1]}).")
        return key

    order, state = [], {}
    roots = [key for key in calls]
    for root in roots:
        stack = [(root, False)]
        while stack:
            key, done = stack.pop()
            if done:
                state[key] = "done"
                order.append(key)
                continue
            if state.get(key) == "done":
                continue
            state[key] = "open"
            stack.append((key, True))
            for ref in calls[key][3]:
                dep = producer(ref)
                if dep is None or state.get(dep) == "done":
                    continue
                if state.get(dep) == "open":
                    raise ValueError(f"Functional config expects its layer calls "
                                     f"to form no loop. Received: a loop through "
                                     f"'{key[0]}' and '{dep[0]}'.")
                stack.append((dep, False))
    pos, seen = {}, {}
    for key in order:  # Keras' node index -> kerasflow's call position
        pos[key] = seen.get(key[0], 0)
        seen[key[0]] = pos[key] + 1

    def rewrite(v):
        if isinstance(v, list) and len(v) == 3 and isinstance(v[0], str) and (
                v[0], v[1]) in pos:
            return [v[0], pos[(v[0], v[1])], v[2]]
        if isinstance(v, dict):
            return {k: rewrite(x) for k, x in v.items()}
        if isinstance(v, list):
            return [rewrite(x) for x in v]
        return v

    nodes = []
    for key in order:
        inputs_, nargs, kwargs, _ = calls[key]
        nodes.append({"layer": key[0], "inputs": rewrite(inputs_),
                      "kwargs": rewrite(kwargs), **({"nargs": nargs} if nargs
                                                   else {})})
    layers = [{k: v for k, v in s.items() if k != "inbound_nodes"} for s in specs]
    return {**config, "layers": layers, "nodes": nodes,
            "input_layers": rewrite(config.get("input_layers")),
            "output_layers": rewrite(config.get("output_layers"))}
