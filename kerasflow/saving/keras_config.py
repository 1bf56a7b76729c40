"""Keras' config schema (Keras 3's ``config.json``, Keras 2's ``model_config``)
translated to kerasflow's and back.

``from_keras`` reads a Keras spec tree into one kerasflow's layers accept:
``DTypePolicy`` dicts become dtype names, the default
``Int8QuantizationConfig`` of an int8 layer becomes None, Keras-only
arguments left at their inert defaults (``quantization_config=None``,
``sparse=False``, ...) are
dropped and any other argument kerasflow lacks is named in the error; a
class is looked up only in kerasflow's registries and ``custom_objects``
(never imported by module name), so a spec naming any other module is
refused; a ``Lambda`` holding Python bytecode is refused unless
``safe_mode=False``. ``to_keras`` writes kerasflow's specs as Keras 3 writes
them (``module``, ``registered_name``, ``Functional`` with per-layer
``inbound_nodes``, a ``Sequential`` led by its ``InputLayer``).

The functional layout:

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

import base64
import inspect
import marshal
import types

from kerasflow import constraints, initializers, regularizers
from kerasflow.utils import serialization

__all__ = ["from_keras", "has_inbound_nodes", "to_inbound_nodes", "to_keras",
           "to_nodes"]


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


def to_inbound_nodes(config, tensor_specs=None) -> dict:
    """kerasflow's functional ``config`` (``nodes``) in Keras 3's layout:
    each layer with its ``inbound_nodes``, tensors as ``__keras_tensor__``
    with their (shape, dtype) from ``tensor_specs`` ({(layer, call, index):
    (shape, dtype)}).

    Raises:
        NotImplementedError: an op between layers (``a + b`` on tensors),
            which Keras writes as a layer of its own; naming it.
    """
    def tensor(v):
        if isinstance(v, list) and len(v) == 3 and isinstance(v[0], str) \
                and isinstance(v[1], int) and isinstance(v[2], int):
            shape, dtype = (tensor_specs or {}).get(tuple(v), (None, "float32"))
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": shape, "dtype": dtype,
                               "keras_history": list(v)}}
        if isinstance(v, dict):
            return {k: tensor(x) for k, x in v.items()}
        if isinstance(v, list):
            return [tensor(x) for x in v]
        return v

    calls: dict[str, list] = {}
    for node in config["nodes"]:
        if "op" in node:
            raise NotImplementedError(
                f"Model '{config.get('name')}' applies the op '{node['op']}' "
                f"('{node.get('name')}') between layers; Keras' file format "
                f"holds layers only. Wrap it in a layer (e.g. "
                f"kf.layers.Add for a + b) to save the model as .keras.")
        nargs = node.get("nargs", 0)
        args = list(node["inputs"]) if nargs else [node["inputs"]]
        calls.setdefault(node["layer"], []).append(
            {"args": tensor(args), "kwargs": tensor(node.get("kwargs") or {})})
    layers = []
    for spec in config["layers"]:
        spec = dict(spec)
        spec["inbound_nodes"] = calls.get(spec["name"], [])
        layers.append(spec)
    out = {k: v for k, v in config.items() if k not in ("nodes", "output_tuple")}
    out["layers"] = layers
    return out


# -- Keras -> kerasflow ---------------------------------------------------------------
_MODELS = ("Sequential", "Functional", "Model")
# Keras-only arguments whose value has no effect when left as here.
_INERT = {"quantization_config": (None,), "sparse": (False,), "ragged": (False,),
          "optional": (False,), "lora_rank": (None,), "lora_alpha": (None,),
          "noise_shape": (None,), "renorm": (False,), "renorm_clipping": (None,),
          "renorm_momentum": None, "implementation": None, "use_cudnn": None,
          "time_major": (False,), "input_axes": (None,), "output_axes": (None,),
          "autocast": (True,), "activity_regularizer": (None,), "seed": (None,),
          "synchronized": (False,), "rms_scaling": (False,), "weights": (None,),
          "zero_output_for_mask": None}
_OBJECT_MODULES = {"keras.initializers": initializers,
                   "keras.regularizers": regularizers,
                   "keras.constraints": constraints}
_LAMBDA_REFUSED = (
    "Requested the deserialization of a `Lambda` layer whose `function` is a "
    "Python lambda. This carries a potential risk of arbitrary code execution "
    "and thus it is disallowed by default. If you trust the source of the "
    "artifact, you can override this error by passing `safe_mode=False` to the "
    "loading function.")


def _params(cls) -> set | None:
    """The keyword arguments ``cls`` takes (through ``**kwargs`` chains), or
    None when it takes any."""
    names: set = set()
    for klass in cls.__mro__:
        if klass.__name__ == "Layer" and klass.__module__ == "kerasflow.layers.base":
            accepted = inspect.signature(klass.__init__).parameters
            return names | {p for p in accepted if p not in ("self", "kwargs")}
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            return None
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD,
                                                           p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def _clean(cls, inner):
    """``inner`` without the Keras-only arguments ``cls`` does not declare,
    left at values that have no effect (``_INERT``); the class itself refuses
    any other argument it lacks."""
    accepted = _params(cls) or set()
    out = {}
    for key, value in inner.items():
        inert = _INERT.get(key, ())
        if key not in accepted and key in _INERT and (inert is None
                                                      or value in inert):
            continue
        out[key] = value
    return out


def _resolve(spec, custom_objects, where, source):
    name = spec["class_name"]
    custom = {**serialization.get_custom_objects(), **(custom_objects or {})}
    reg = spec.get("registered_name")
    if reg and reg in custom:
        return custom[reg]
    if name in custom:
        return custom[name]
    module = spec.get("module")
    table = serialization.registry("layer")
    if name == "Functional":
        name = "Model"
    if name in table and (module is None or str(module).split(".")[0]
                          in ("keras", "kerasflow", "tf_keras")):
        return table[name]
    if module is not None and str(module).split(".")[0] not in (
            "keras", "kerasflow", "tf_keras"):
        raise ValueError(
            f"'{source}': {where} names class '{name}' of module '{module}', "
            f"which is neither a Keras nor a kerasflow module; kerasflow imports "
            f"nothing named by a file. Pass the class in custom_objects= or "
            f"register it with kf.saving.register_keras_serializable.")
    return None  # unknown: layers.deserialize names it and how to provide it


def _lambda_function(fn, safe_mode, where, source):
    if not (isinstance(fn, dict) and fn.get("class_name") == "__lambda__"):
        return fn
    if safe_mode:
        raise ValueError(f"'{source}': {where}: {_LAMBDA_REFUSED}")
    code = marshal.loads(base64.b64decode(fn["config"]["code"]))  # noqa: S302
    return types.FunctionType(code, {})


def _objects(value):
    """Nested initializer/regularizer/constraint specs cleaned of the Keras-only
    arguments their kerasflow class lacks (left at inert values)."""
    if isinstance(value, list):
        return [_objects(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "class_name" in value and isinstance(value.get("config"), dict):
        mod = _OBJECT_MODULES.get(value.get("module"))
        cls = getattr(mod, value["class_name"], None) if mod else None
        inner = value["config"]
        if inspect.isclass(cls):
            accepted = _params(cls)
            if accepted is not None:
                inner = {k: v for k, v in inner.items()
                         if k in accepted or v is not None}
        return {**value, "config": inner}
    return value


def _default_int8_config(value) -> bool:
    """True for Keras 3's ``Int8QuantizationConfig`` with its default
    quantizers, as ``quantize("int8")`` writes it: kerasflow's int8 layers
    use exactly those, so it reads as ``quantization_config=None``."""
    if not (isinstance(value, dict)
            and value.get("class_name") == "Int8QuantizationConfig"):
        return False
    inner = value.get("config") or {}
    act = inner.get("activation_quantizer") or {}
    return (inner.get("weight_quantizer") is None
            and act.get("class_name") == "AbsMaxQuantizer"
            and act.get("config") == {"value_range": [-127, 127],
                                      "epsilon": 1e-07, "output_dtype": "int8"})


def _dtype(value):
    if isinstance(value, dict) and value.get("class_name") in (
            "DTypePolicy", "Policy", "FloatDTypePolicy"):
        return (value.get("config") or {}).get("name")
    return value


def from_keras(spec, custom_objects=None, safe_mode=True, source="config",
               where="config"):
    """A Keras (3 or 2) layer/model spec as one kerasflow's ``deserialize`` reads.

    Raises:
        ValueError: a class of no known module or unknown to kerasflow, a
            Keras-only argument kerasflow cannot honour, a Lambda with bytecode
            under ``safe_mode``; naming the file and the place in the config.
    """
    if not isinstance(spec, dict) or not isinstance(spec.get("class_name"), str) \
            or not isinstance(spec.get("config"), dict):
        raise ValueError(f"'{source}': {where} expects a layer config "
                         f"{{'class_name': ..., 'config': {{...}}}}. Received: "
                         f"{str(spec)[:80]}.")
    cls = _resolve(spec, custom_objects, where, source)
    inner = dict(spec["config"])
    if "dtype" in inner:
        inner["dtype"] = _dtype(inner["dtype"])
    if _default_int8_config(inner.get("quantization_config")):
        inner["quantization_config"] = None
    name = spec["class_name"]
    if name in _MODELS and isinstance(inner.get("layers"), list):
        layers = []
        for i, sub in enumerate(inner["layers"]):
            out = from_keras(sub, custom_objects, safe_mode, source,
                             f"{where}.layers[{i}]")
            if isinstance(sub, dict) and "inbound_nodes" in sub:
                out["inbound_nodes"] = sub["inbound_nodes"]
            if isinstance(sub, dict) and name != "Sequential":
                out["name"] = sub.get("name", out["config"].get("name"))
            layers.append(out)
        inner["layers"] = layers
        if name == "Sequential" and layers and layers[0]["class_name"] == "InputLayer":
            # kerasflow's Sequential takes its input spec as build_input_shape.
            first = layers.pop(0)["config"]
            inner["build_input_shape"] = first.get("batch_shape")
            inner["input_dtype"] = first.get("dtype")
        keep = ("name", "trainable", "layers", "input_layers", "output_layers",
                "build_input_shape", "input_dtype", "nodes", "output_tuple")
        inner = {k: v for k, v in inner.items() if k in keep}
        return {"class_name": "Model" if name == "Functional" else name,
                "config": inner}
    if name == "Lambda":
        inner["function"] = _lambda_function(inner.get("function"), safe_mode,
                                             where, source)
    if "batch_input_shape" in inner and "batch_shape" not in inner \
            and name == "InputLayer":
        inner["batch_shape"] = inner.pop("batch_input_shape")
    if cls is not None and cls.__module__.startswith("kerasflow."):
        inner = _clean(cls, {k: _objects(v) for k, v in inner.items()})
        # Wrappers (Bidirectional, TimeDistributed) hold a layer spec.
        for key in ("layer", "backward_layer", "cell"):
            if isinstance(inner.get(key), dict) and "class_name" in inner[key]:
                inner[key] = from_keras(inner[key], custom_objects, safe_mode,
                                        source, f"{where}.config.{key}")
    out = {"class_name": spec["class_name"], "config": inner}
    if spec.get("registered_name"):
        out["registered_name"] = spec["registered_name"]
    return out


# -- kerasflow -> Keras ---------------------------------------------------------------
# kerasflow-only arguments, dropped when at these (default) values.
_OURS = {"moving_mean_regularizer": None, "moving_mean_constraint": None,
         "moving_variance_regularizer": None, "moving_variance_constraint": None}
_SUFFIX_MODULES = (("_initializer", "keras.initializers"),
                   ("_regularizer", "keras.regularizers"),
                   ("_constraint", "keras.constraints"))


def _keras_object(key, value):
    if not (isinstance(value, dict) and "class_name" in value):
        return value
    for suffix, module in _SUFFIX_MODULES:
        if key.endswith(suffix):
            return {"module": module, "class_name": value["class_name"],
                    "config": value.get("config", {}),
                    "registered_name": value.get("registered_name")}
    return value


def _keras_module(class_name, registered_name):
    cls = serialization.registry("layer").get(class_name)
    if registered_name or cls is None or not cls.__module__.startswith("kerasflow."):
        return None
    return "keras" if class_name in _MODELS else "keras.layers"


def to_keras(spec, build_shape=None, tensor_specs=None):
    """kerasflow's ``layers.serialize`` output as Keras 3 writes it.

    Args:
        spec: ``{"class_name", "config"}`` of a layer or model.
        build_shape: the model's input shape, for Keras' ``build_config``.
        tensor_specs: {model name: {(layer, call, index): (shape, dtype)}}
            of the functional models inside, for Keras' tensor entries.

    Raises:
        NotImplementedError: a functional model with ops between layers.
    """
    name, inner = spec["class_name"], dict(spec["config"])
    reg = spec.get("registered_name")
    if name in _MODELS and isinstance(inner.get("layers"), list):
        if name == "Sequential":
            layers = [to_keras(s, None, tensor_specs) for s in inner["layers"]]
            shape = inner.pop("build_input_shape", None)
            dtype = inner.pop("input_dtype", None) or "float32"
            if shape is not None and not any(
                    s["class_name"] == "InputLayer" for s in layers):
                layers.insert(0, {"module": "keras.layers",
                                  "class_name": "InputLayer",
                                  "config": {"batch_shape": shape, "dtype": dtype,
                                             "sparse": False,
                                             "name": f"{inner['name']}_input"},
                                  "registered_name": None})
            inner["layers"] = layers
            if shape is not None:
                inner["build_input_shape"] = shape
            out_name = "Sequential"
        else:
            # Ops between layers (a + b on tensors) have no Keras layer to
            # stand for them: such a model keeps kerasflow's node list, which
            # kerasflow reads back and Keras does not.
            ops = any("op" in n for n in inner.get("nodes", []))
            if not ops:
                inner = to_inbound_nodes(inner,
                                         (tensor_specs or {}).get(inner["name"]))
            layers = []
            for s in inner["layers"]:
                k = to_keras(s, None, tensor_specs)
                k["name"] = s["name"]
                if not ops:
                    k["inbound_nodes"] = s["inbound_nodes"]
                layers.append(k)
            inner["layers"] = layers
            out_name = "Functional" if name == "Model" else name
        if reg:
            module = None
        elif out_name == "Functional":  # where Keras 3 writes it from
            module, reg = "keras.src.models.functional", "Functional"
        else:
            module = "keras"
        out = {"module": module, "class_name": out_name, "config": inner,
               "registered_name": reg}
        if build_shape is not None:
            out["build_config"] = {"input_shape": build_shape}
        return out
    for key, default in _OURS.items():
        if key in inner and inner[key] == default:
            del inner[key]
    inner = {k: _keras_object(k, v) for k, v in inner.items()}
    for key in ("layer", "backward_layer", "cell"):
        if isinstance(inner.get(key), dict) and "class_name" in inner[key]:
            inner[key] = to_keras(inner[key])
    out = {"module": _keras_module(name, reg), "class_name": name,
           "config": inner, "registered_name": reg}
    if build_shape is not None:  # a subclassed model
        out["build_config"] = {"input_shape": build_shape}
    return out
