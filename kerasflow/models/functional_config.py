"""A functional model's config: its layers, and the layer calls and ops between.

``get_config`` writes ``{"name", "layers", "nodes", "input_layers",
"output_layers"}``. Each entry of ``nodes`` is, in an order where every
input comes first, either a layer call ``{"layer": name, "inputs": ...,
"kwargs": {...}}`` or an op ``{"op": registered op name, "name": unique key,
"inputs": [...], "attrs": {...}}`` (Keras 3 keeps every op on a symbolic
tensor in the functional graph). A tensor is referred to as ``[producer name,
call index, output index]``; a constant operand as ``{"__constant__":
{"value": nested lists, "dtype": name}}``. Attributes are plain JSON, with
tuples, slices, dtypes and arrays tagged (``{"__tuple__": [...]}``), so a
config loads with ``json``/``yaml.safe_load`` and never with pickle; on load
only registered, stateless ops can be named.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import layers as layers_mod
from kerasflow import tree
from kerasflow.layers.base import get_history
from kerasflow.layers.core import InputLayer
from kerasflow.models.functional_graph import is_leaf, op_names
from kerasflow.saving import config_checks, keras_config

__all__ = ["functional_config", "functional_from_config", "encode_value",
           "decode_value"]


# -- plain values ----------------------------------------------------------------------
def encode_value(v, where):
    """``v`` as JSON-ready data; tuples, slices, dtypes and arrays tagged.

    Raises:
        ValueError: a value of another type (a function, an object), naming
            ``where``.
    """
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, list):
        return [encode_value(x, where) for x in v]
    if isinstance(v, tuple):
        return {"__tuple__": [encode_value(x, where) for x in v]}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"__dict__": {k: encode_value(x, where) for k, x in v.items()}}
    if isinstance(v, slice):
        return {"__slice__": [encode_value(x, where)
                              for x in (v.start, v.stop, v.step)]}
    if v is Ellipsis:
        return {"__ellipsis__": True}
    if isinstance(v, np.dtype) or (isinstance(v, type)
                                   and issubclass(v, np.generic)):
        return {"__dtype__": np.dtype(v).name}
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
        return {"__ndarray__": v.tolist(), "dtype": v.dtype.name}
    raise ValueError(f"{where} expects plain values (numbers, strings, tuples, "
                     f"slices, dtypes, numeric arrays) to save. Received: "
                     f"{type(v).__name__} {v!r:.60}.")


def decode_value(v):
    """Inverse of ``encode_value``; builds only plain values and numpy arrays."""
    if isinstance(v, list):
        return [decode_value(x) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1 and "__tuple__" in v:
        return tuple(decode_value(x) for x in v["__tuple__"])
    if len(v) == 1 and "__dict__" in v:
        return {k: decode_value(x) for k, x in v["__dict__"].items()}
    if len(v) == 1 and "__slice__" in v:
        return slice(*[decode_value(x) for x in v["__slice__"]])
    if v == {"__ellipsis__": True}:
        return Ellipsis
    if len(v) == 1 and "__dtype__" in v:
        return np.dtype(v["__dtype__"])
    if set(v) == {"__ndarray__", "dtype"}:
        return _array(v["__ndarray__"], v["dtype"])
    return {k: decode_value(x) for k, x in v.items()}


def _array(value, dtype):
    dt = np.dtype(dtype)
    if dt.kind not in "biuf":
        raise ValueError(f"A saved array expects a numeric dtype. Received: "
                         f"dtype={dtype!r}.")
    return np.asarray(value, dtype=dt)


# -- writing ---------------------------------------------------------------------------
def functional_config(model):
    """The config of functional ``model`` (see the module docstring).

    Raises:
        ValueError: an op between layers reads a Variable that belongs to no
            layer, or has an attribute that is no plain value.
    """
    refs = {}
    for t in model.inputs:
        refs[id(t)] = [get_history(t)[0].name, 0, 0]
    keys = op_names(model._graph_steps, {layer.name for layer in model.layers})
    calls: dict = {}
    nodes = []

    def operand(t, where):
        if id(t) in refs:
            return refs[id(t)]
        if is_leaf(t) and t.node.op == "Const":
            value = np.asarray(t.node.attrs["value"])
            return {"__constant__": {"value": value.tolist(),
                                     "dtype": value.dtype.name}}
        raise ValueError(
            f"Model '{model.name}' cannot be saved: {where} reads {t!r}, which "
            f"is neither a model input, a layer or op output, nor a constant "
            f"(a Variable belongs in a layer's weights).")

    for step in model._graph_steps:
        if step.node is not None:
            node = step.node
            key = keys[id(node)]
            where = f"op '{node.name}' ({node.op})"
            nodes.append({
                "op": node.op, "name": key,
                "inputs": [operand(t, where) for t in node.inputs],
                "attrs": {k: encode_value(v, f"{where} attribute '{k}'")
                          for k, v in node.attrs.items()},
            })
            for i, t in enumerate(node.outputs):
                refs[id(t)] = [key, 0, i]
            continue
        layer, record = step.layer, step.record
        where = f"the call of layer '{layer.name}'"
        nodes.append({
            "layer": layer.name,
            "inputs": tree.map_structure(
                lambda t, w=where: operand(t, w) if K.is_symbolic(t) else t,
                record.inputs),
            "kwargs": {k: tree.map_structure(
                lambda t, w=where: operand(t, w) if K.is_symbolic(t) else t, v)
                for k, v in record.kwargs.items()
                if k != "training" or v is not None},
            **({"nargs": record.nargs} if record.nargs else {}),
        })
        pos = calls.get(layer.name, 0)
        calls[layer.name] = pos + 1
        for i, t in enumerate(tree.flatten(record.outputs)):
            refs[id(t)] = [layer.name, pos, i]
    return {
        "name": model.name,
        "trainable": model.trainable,
        "layers": [{"name": layer.name, **layers_mod.serialize(layer)}
                   for layer in model.layers],
        "nodes": nodes,
        "input_layers": tree.map_structure(
            lambda t: refs[id(t)], model._inputs_struct),
        "output_layers": tree.map_structure(
            lambda t: operand(t, "an output"), model._outputs_struct),
        # JSON has no tuples: remember them so from_config returns the same.
        "output_tuple": isinstance(model._outputs_struct, tuple),
    }


# -- reading ---------------------------------------------------------------------------
def functional_from_config(cls, config, custom_objects=None, make_layer=None,
                           input_tensors=None):
    """Rebuilds a functional model of class ``cls`` from ``functional_config``
    output: the layers are deserialized, then called and the ops applied in
    the recorded order. Keras' layout (per-layer ``inbound_nodes``) is read
    too (``keras_config``).

    ``make_layer(spec)``, when given, makes each non-input layer from its
    serialized spec (``clone_model`` passes its ``clone_function``);
    ``input_tensors``, when given, replace the input layers' tensors, in
    ``input_layers`` order.

    Raises:
        ValueError: a malformed config (a missing key, a reference to an
            unknown or later node, an unknown or stateful op), naming where.
    """
    if keras_config.has_inbound_nodes(config):  # Keras' layout, per layer
        config = keras_config.to_nodes(config)
    config_checks.check_model_config({"class_name": "Model", "config": config},
                                     f"{cls.__name__}.from_config input")
    def build(spec):
        if make_layer is None or spec.get("class_name") == "InputLayer":
            return layers_mod.deserialize(spec, custom_objects)
        return make_layer(spec)

    by_name = {spec["name"]: build(spec) for spec in config["layers"]}
    outputs_of: dict = {}  # producer name -> list of output structures per call
    for name, layer in by_name.items():
        if isinstance(layer, InputLayer):
            outputs_of[name] = [layer.output]
    if input_tensors is not None:
        refs = [r for r in tree.flatten(config["input_layers"])
                if isinstance(r, str)]
        if len(refs) != len(input_tensors):
            raise ValueError(f"The model has {len(refs)} inputs. Received: "
                             f"{len(input_tensors)} input_tensors.")
        for name, tensor in zip(refs, input_tensors):
            outputs_of[name] = [tensor]

    def deref(v):
        if config_checks.is_ref(v):
            return tree.flatten(outputs_of[v[0]][v[1]])[v[2]]
        if isinstance(v, dict):
            if set(v) == {"__constant__"}:
                c = v["__constant__"]
                return K.constant(_array(c["value"], c["dtype"]))
            return {k: deref(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [deref(x) for x in v]
        return v

    for i, node in enumerate(config["nodes"]):
        if "op" in node:
            out = K.apply(_loadable_op(node["op"], i),
                          *[deref(v) for v in node["inputs"]],
                          **{k: decode_value(v)
                             for k, v in node.get("attrs", {}).items()})
            outputs_of[node["name"]] = [list(out) if isinstance(out, tuple)
                                        else out]
            continue
        layer = by_name[node["layer"]]
        args = deref(node["inputs"])
        kwargs = deref(node.get("kwargs", {}))
        out = layer(*args, **kwargs) if node.get("nargs") else layer(args, **kwargs)
        outputs_of.setdefault(node["layer"], []).append(out)
    inputs = deref(config["input_layers"])
    outputs = deref(config["output_layers"])
    if config.get("output_tuple"):
        outputs = tuple(outputs)
    model = cls(inputs, outputs, name=config.get("name"))
    if config.get("trainable") is False:
        model.trainable = False
    return model


def _loadable_op(name, i):
    try:
        opdef = K.get_op(name)
    except KeyError:
        raise ValueError(f"Functional config nodes[{i}] expects a registered op. "
                         f"Received: op={name!r}.") from None
    if opdef.stateful:
        raise ValueError(f"Functional config nodes[{i}] expects a stateless op. "
                         f"Received: op={name!r}, which assigns a Variable.")
    return name
