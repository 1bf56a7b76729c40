"""Keras' HDF5 weight layouts: Keras 3's ``model.weights.h5`` / ``.weights.h5``
(written and read) and Keras 2's ``.h5`` (read).

Keras 3 stores each layer's own variables, in creation order, as datasets
``<path>/vars/0``, ``<path>/vars/1``...; a layer may choose its slots
(``Layer.save_own_variables`` / ``load_own_variables``, as in Keras: Dense
and EinsumDense write kernel, bias, kernel_scale and merge LoRA's update into
the kernel); ``<path>`` is the walk from the model
down to the layer: a list of layers (a model's ``layers``) names each by its
class in snake case with a counter per class (``layers/dense``,
``layers/dense_1``), an attribute holding a layer by the attribute's name
(``layers/lstm/cell``). kerasflow's recurrent layers hold their cell's
variables themselves, so theirs go under ``cell/vars``. The optimizer's
variables go under ``optimizer/vars`` (Keras' ``iterations``,
``learning_rate``, then the slots in kerasflow's order; a
``LossScaleOptimizer``'s own four, then its inner optimizer's, which also go
under ``optimizer/inner_optimizer/vars``).

Keras 2 stores a group per layer (root attribute ``layer_names``; in a whole
model file under ``model_weights``), each with a ``weight_names`` attribute
naming its datasets in the layer's weight order.

Every dataset is checked before it is read: a hard link (no external or
soft links, no external storage), a numeric dtype, a size under
``kerasflow.utils.file_io.weights_cap()``; so a file declaring a 10**12-element
dataset is refused without allocating it. Loading is all-or-nothing.
"""

from __future__ import annotations

import io

import numpy as np

from kerasflow import backend as K
from kerasflow.optimizers import LossScaleOptimizer
from kerasflow.utils import file_io
from kerasflow.utils.serialization import to_snake_case

__all__ = ["HDF5_SIGNATURE", "is_hdf5", "keras3_paths", "load_keras2_weights",
           "load_keras3_weights", "open_h5", "save_keras3_weights"]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_RNN_WITH_CELL = ("LSTM", "GRU", "SimpleRNN", "ConvLSTM1D", "ConvLSTM2D",
                  "ConvLSTM3D")
# Layers holding as their own variables what Keras 3 keeps in sub-layers:
# variable name's group (``mha/query/kernel``) -> Keras' sub-layer attribute.
_KERAS_SUBLAYER_VARS = {
    "MultiHeadAttention": {"query": "query_dense", "key": "key_dense",
                           "value": "value_dense",
                           "attention_output": "output_dense"},
}


def _h5py():
    # h5py takes ~125 ms to import (a quarter of `import kerasflow`): only
    # the first HDF5 read or write pays it.
    import h5py  # noqa: PLC0415

    return h5py


def is_hdf5(data: bytes) -> bool:
    """True when ``data`` starts with HDF5's file signature."""
    return data[:8] == HDF5_SIGNATURE


def open_h5(data: bytes, source):
    """An ``h5py.File`` reading ``data`` (bytes, kept in memory).

    Raises:
        ValueError: not a readable HDF5 file, naming ``source``.
    """
    h5py = _h5py()
    try:
        return h5py.File(io.BytesIO(data), "r")
    except (OSError, ValueError) as e:
        raise ValueError(f"'{source}' is not a readable HDF5 file (corrupt or "
                         f"truncated: {e}).") from None


# -- Keras 3 paths ---------------------------------------------------------------------
def _children(layer):
    """(path part, sub-layer) for each sub-layer: by attribute name, lists of
    layers (a model's ``layers``) by class name with a counter (Keras 3's
    ``saving_lib._walk_saveable``)."""
    if hasattr(layer, "_stack") or getattr(layer, "_is_functional", False):
        listed = layer.layers
        counts: dict[str, int] = {}
        out = []
        for s in listed:
            if type(s).__name__ == "InputLayer" and hasattr(layer, "_stack"):
                continue  # Keras' Sequential lists no InputLayer
            base = to_snake_case(type(s).__name__)
            n = counts.get(base, 0)
            counts[base] = n + 1
            out.append((f"layers/{base}" + (f"_{n}" if n else ""), s))
        return out
    subs = list(layer._sub_layers)
    attrs = {a: v for a, v in vars(layer).items() if a != "_sub_layers"}
    if getattr(layer, "_is_functional", None) is False:
        attrs["layers"] = layer.layers  # a subclassed model's list, as Keras'
    out, found = [], set()
    # Keras walks attributes sorted, private ones last; a list names its
    # layers by class with a counter that every layer in it advances.
    for attr in sorted(attrs, key=lambda a: f"~{a}" if a.startswith("_") else a):
        value = attrs[attr]
        listed = isinstance(value, (list, tuple))
        counts: dict[str, int] = {}
        for item in value if listed else [value]:
            if not any(item is s for s in subs):
                continue
            part = attr
            if listed:
                base = to_snake_case(type(item).__name__)
                n = counts.get(base, 0)
                counts[base] = n + 1
                part = f"{attr}/{base}" + (f"_{n}" if n else "")
            if id(item) not in found:
                found.add(id(item))
                out.append((part, item))
    return out


def keras3_paths(model) -> list[tuple[str, str, list, object]]:
    """(HDF5 group of the layer's ``vars``, layer name, variables of its
    slots, the layer whose ``save_own_variables`` / ``_load_assignments``
    fill them or None) per layer holding variables, in Keras 3's layout; each
    variable once. The layer is None where the slots are plain variables: a
    group split out of a layer (MultiHeadAttention's projections), or a layer
    some of whose variables an earlier layer stored."""
    out, seen = [], set()

    def walk(layer, path):
        stored = layer._stored_variables()
        own = [v for v in stored if id(v) not in seen]
        seen.update(id(v) for v in own)
        split = _KERAS_SUBLAYER_VARS.get(type(layer).__name__)
        if own and split:
            groups: dict[str, list] = {}
            for v in own:
                group = v.name.rsplit("/", 2)[-2]
                groups.setdefault(split.get(group, group), []).append(v)
            out.extend((f"{path}{sub}/vars", f"{layer.name}/{sub}", vs, None)
                       for sub, vs in groups.items())
        elif own:
            cell = type(layer).__name__ in _RNN_WITH_CELL
            out.append((f"{path}cell/vars" if cell else f"{path}vars",
                        layer.name, own, layer if len(own) == len(stored)
                        else None))
        for part, sub in _children(layer):
            walk(sub, f"{path}{part}/")

    walk(model, "")
    return out


# -- reading ---------------------------------------------------------------------------
def _dataset(h5, path, source):
    """The array at ``path``, checked before reading (see module docstring).

    Raises:
        ValueError: a link that is not a hard link, a non-numeric or too large
            dataset, or external storage; naming the file and the path.
    """
    h5py = _h5py()
    node = h5
    for part in path.split("/"):
        link = node.get(part, getlink=True)
        if link is None:
            return None
        if not isinstance(link, h5py.HardLink):
            raise ValueError(f"'{source}': '{path}' expects plain HDF5 groups "
                             f"and datasets. Received: a {type(link).__name__}.")
        node = node[part]
    if not isinstance(node, h5py.Dataset):
        raise ValueError(f"'{source}': '{path}' expects a dataset. Received: "
                         f"{type(node).__name__}.")
    if node.dtype.kind not in "biuf":
        raise ValueError(f"'{source}': '{path}' expects a numeric dataset. "
                         f"Received: dtype={node.dtype}.")
    if node.external:
        raise ValueError(f"'{source}': '{path}' stores its data in external "
                         f"files ({node.external[0][0]!r}...); refused.")
    size = int(np.prod(node.shape, dtype=object)) * node.dtype.itemsize
    if size > file_io.weights_cap():
        raise ValueError(
            f"'{source}': '{path}' declares shape {node.shape} "
            f"({size} bytes), over the weights cap of {file_io.weights_cap()} "
            f"bytes (KERASFLOW_MAX_WEIGHTS_BYTES); refused before reading.")
    try:
        return np.asarray(node[()])
    except (OSError, ValueError) as e:
        raise ValueError(f"'{source}': '{path}' is unreadable (corrupt or "
                         f"truncated: {e}).") from None


def _check_shapes(pairs, source, skip_mismatch):
    """The (variable, array) pairs whose shapes agree; a mismatch raises (or,
    with ``skip_mismatch``, is left out)."""
    keep = []
    for layer_name, v, a in pairs:
        if tuple(a.shape) == tuple(v.shape):
            keep.append((v, a))
            continue
        if skip_mismatch:
            continue
        raise ValueError(
            f"'{source}': layer '{layer_name}' expects its weight '{v.name}' of "
            f"shape {tuple(v.shape)}. Received: shape {tuple(a.shape)}; nothing "
            f"was loaded (skip_mismatch=True skips such weights).")
    return keep


def load_keras3_weights(model, h5, source, skip_mismatch=False, optimizer=None):
    """Assigns ``model``'s variables (and ``optimizer``'s, when given and the
    file has them) from Keras 3's layout in the open file ``h5``.

    Raises:
        ValueError: a layer whose variables the file lacks or whose count
            differs, or a shape mismatch (naming the layer and both shapes),
            unless ``skip_mismatch``; a file with weights for layers the model
            lacks; nothing is assigned then.
    """
    pairs, used = [], set()
    for group, layer_name, variables, layer in keras3_paths(model):
        arrays = []
        i = 0
        while True:
            a = _dataset(h5, f"{group}/{i}", source)
            if a is None:
                break
            arrays.append(a)
            i += 1
        used.add(group)
        if len(arrays) != len(variables):
            if skip_mismatch:
                continue
            raise ValueError(
                f"'{source}': layer '{layer_name}' expects {len(variables)} "
                f"variables at '{group}'. Received: {len(arrays)}; nothing was "
                f"loaded (skip_mismatch=True skips such layers).")
        assigned = (zip(variables, arrays) if layer is None
                    else layer._load_assignments(arrays))
        pairs.extend((layer_name, v, a) for v, a in assigned)
    extra = sorted(g for g in _var_groups(h5) if g not in used
                   and not g.startswith("optimizer/"))
    if extra and not skip_mismatch:
        raise ValueError(f"'{source}' holds weights for layers model "
                         f"'{model.name}' does not have: {extra[:10]}; nothing "
                         f"was loaded.")
    keep = _check_shapes(pairs, source, skip_mismatch)
    opt_pairs = _optimizer_pairs(optimizer, h5, source) if optimizer else []
    K.assign_all([v for v, _ in keep] + [v for v, _ in opt_pairs],
                 [a for _, a in keep] + [a for _, a in opt_pairs],
                 f"model '{model.name}' (from '{source}')")


def _var_groups(h5):
    h5py = _h5py()
    out = []

    def visit(name, obj):
        if isinstance(obj, h5py.Group) and name.endswith("vars") and len(obj):
            out.append(name)

    h5.visititems(visit)
    return out


def _optimizer_slots(optimizer) -> list:
    """What fills each of Keras 3's ``optimizer/vars`` slots: kerasflow's
    Variable, or a numpy value where kerasflow keeps none. A plain optimizer:
    iterations, the learning rate (a config value here), its slots; a
    ``LossScaleOptimizer``: its own iterations (0: Keras reads the inner
    one's) and learning rate (0.0), ``step_counter``, ``dynamic_scale``, then
    its inner optimizer's (Keras' ``LossScaleOptimizer.variables``)."""
    if isinstance(optimizer, LossScaleOptimizer):
        return [np.asarray(0, "int64"), np.asarray(0.0, "float32"),
                optimizer.step_counter, optimizer.dynamic_scale
                ] + _optimizer_slots(optimizer.inner_optimizer)
    ours = list(optimizer.variables)
    if not ours:
        return []
    return [ours[0], np.asarray(_learning_rate(optimizer), "float32")] + ours[1:]


def _optimizer_pairs(optimizer, h5, source):
    """(variable, array) for the optimizer's variables found in the file
    (``_optimizer_slots``); [] when it has none or they do not line up (the
    optimizer then starts afresh)."""
    arrays, i = [], 0
    while True:
        a = _dataset(h5, f"optimizer/vars/{i}", source)
        if a is None:
            break
        arrays.append(a)
        i += 1
    slots = _optimizer_slots(optimizer)
    pairs = [(v, a) for v, a in zip(slots, arrays)
             if not isinstance(v, np.ndarray)]
    if len(arrays) != len(slots) or not pairs or any(
            tuple(a.shape) != tuple(v.shape) for v, a in pairs):
        return []
    return pairs


def optimizer_learning_rate(h5, source):
    """The learning rate Keras stored with its optimizer variables, or None."""
    return _dataset(h5, "optimizer/vars/1", source)


# -- writing ---------------------------------------------------------------------------
def save_keras3_weights(model, optimizer=None) -> bytes:
    """``model``'s variables (and ``optimizer``'s) in Keras 3's layout, as the
    bytes of an HDF5 file."""
    h5py = _h5py()
    buf = io.BytesIO()
    with h5py.File(buf, "w") as h5:
        h5.create_group("vars").attrs["name"] = model.name
        for group, layer_name, variables, layer in keras3_paths(model):
            g = h5.require_group(group)
            g.attrs["name"] = layer_name
            store: dict = {}
            if layer is None:
                store.update((str(i), v.numpy()) for i, v in enumerate(variables))
            else:
                layer.save_own_variables(store)
            for i in range(len(store)):
                g.create_dataset(str(i), data=np.asarray(store[str(i)]))
        path = "optimizer"
        while optimizer is not None and _optimizer_slots(optimizer):
            # Keras also writes a LossScaleOptimizer's inner optimizer on its
            # own, as the attribute it is.
            g = h5.require_group(f"{path}/vars")
            g.attrs["name"] = getattr(optimizer, "name", "optimizer")
            for i, v in enumerate(_optimizer_slots(optimizer)):
                g.create_dataset(str(i), data=v if isinstance(v, np.ndarray)
                                 else np.asarray(v.numpy()))
            optimizer = getattr(optimizer, "inner_optimizer", None)
            path += "/inner_optimizer"
    return buf.getvalue()


def _learning_rate(optimizer):
    lr = getattr(optimizer, "learning_rate", 0.0)
    try:
        return float(lr)
    except TypeError:
        return float(np.asarray(getattr(lr, "numpy", lambda: 0.0)()))


# -- Keras 2 ---------------------------------------------------------------------------
def _attr_strings(obj, key):
    raw = obj.attrs.get(key)
    if raw is None:
        return None
    return [x.decode("utf8") if isinstance(x, bytes) else str(x) for x in raw]


def keras2_layers(h5, source) -> list[tuple[str, list]]:
    """(layer name, arrays) per layer group of a Keras 2 weights file (or of
    the ``model_weights`` group of a whole-model file), in file order."""
    root = h5["model_weights"] if "model_weights" in h5 else h5
    names = _attr_strings(root, "layer_names")
    if names is None:
        raise ValueError(f"'{source}' is HDF5 but holds no Keras weights (no "
                         f"'layer_names' attribute, no Keras 3 'vars' groups).")
    out = []
    for name in names:
        g = root.get(name)
        wnames = _attr_strings(g, "weight_names") if g is not None else None
        if wnames is None:
            raise ValueError(f"'{source}': layer group '{name}' expects a "
                             f"'weight_names' attribute. Received: none.")
        prefix = root.name.strip("/")
        out.append((name, [_dataset(h5, "/".join(p for p in (prefix, name, w)
                                                 if p), source)
                           for w in wnames]))
    return out


def load_keras2_weights(model, h5, source, by_name=False, skip_mismatch=False):
    """Assigns ``model``'s weights from Keras 2's layout, by topological
    order (layers with weights, in order) or, with ``by_name``, by layer name.

    Raises:
        ValueError: a different number of layers with weights (by order), a
            layer whose weight count or shapes differ (naming it and both
            shapes) unless ``skip_mismatch``; nothing is assigned then.
    """
    saved = [(n, a) for n, a in keras2_layers(h5, source) if a]
    layers = [layer for layer in model.layers if layer.weights]
    if by_name:
        table = dict(saved)
        matched = [(layer, table[layer.name]) for layer in layers
                   if layer.name in table]
    else:
        if len(saved) != len(layers):
            raise ValueError(
                f"'{source}' holds weights for {len(saved)} layers "
                f"({[n for n, _ in saved][:10]}); model '{model.name}' has "
                f"{len(layers)} layers with weights "
                f"({[layer.name for layer in layers][:10]}). Nothing was loaded.")
        matched = [(layer, a) for layer, (_, a) in zip(layers, saved)]
    pairs = []
    for layer, arrays in matched:
        if len(arrays) != len(layer.weights):
            if skip_mismatch:
                continue
            raise ValueError(
                f"'{source}': layer '{layer.name}' expects {len(layer.weights)} "
                f"weights. Received: {len(arrays)}; nothing was loaded.")
        pairs.extend((layer.name, v, a) for v, a in zip(layer.weights, arrays))
    keep = _check_shapes(pairs, source, skip_mismatch)
    K.assign_all([v for v, _ in keep], [a for _, a in keep],
                 f"model '{model.name}' (from '{source}')")
