"""``Model``: functional graphs of layers, or subclasses with their own ``call``.

``Model(inputs, outputs)`` walks back from ``outputs`` through the recorded layer
calls to ``inputs`` and keeps those calls in topological order. Calling the model
on new tensors replays them (with the ``training`` flag of that call), which is
how training and inference graphs are traced and how models nest inside models
(Keras' functional API).
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import layers as layers_mod
from kerasflow import tree
from kerasflow.layers import base as layer_base
from kerasflow.layers.base import Layer, training_context
from kerasflow.layers.core import InputLayer
from kerasflow.models import saving
from kerasflow.models.layer_table import summary_text
from kerasflow.models.training import Trainer

__all__ = ["Model"]


class Model(Trainer, Layer):
    """A trainable graph of layers (``compile``/``fit``/``evaluate``/``predict``).

    Functional: ``Model(inputs, outputs, name=None)`` where ``inputs`` is a tensor
    from ``kf.Input`` (or a list/dict of them) and ``outputs`` a tensor or list of
    tensors computed from them by layer calls. Subclassed: override ``__init__``
    (create layers) and ``call(inputs, training=None)``.

    Raises:
        ValueError: outputs that depend on a tensor which is neither a model input
            nor produced by a layer ("graph disconnected"), naming it.

    Example:
        >>> x = kf.Input((784,))
        >>> h = kf.layers.Dense(64, activation="relu")(x)
        >>> model = kf.Model(x, kf.layers.Dense(10)(h))
    """

    _builds_in_call = True

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if len(args) >= 2:
            inputs, outputs = args[0], args[1]
        elif len(args) == 1:
            inputs = args[0]
        Layer.__init__(self, **kwargs)
        Trainer.__init__(self)
        self._is_functional = inputs is not None and outputs is not None
        self._inputs_struct = self._outputs_struct = None
        if self._is_functional:
            self._init_graph(inputs, outputs)

    # -- functional graph ----------------------------------------------------------------
    def _init_graph(self, inputs, outputs):
        self._inputs_struct = inputs
        self._outputs_struct = outputs
        self.inputs = tree.flatten(inputs)
        self.outputs = tree.flatten(outputs)
        input_ids = {id(t) for t in self.inputs}
        for t in self.inputs:
            hist = layer_base.get_history(t)
            if hist is None or not isinstance(hist[0], InputLayer):
                raise ValueError(
                    f"Model inputs must come from kf.Input(). Received: {t!r}."
                )
        order, seen = [], set()

        def visit(t, path):
            if id(t) in input_ids:
                return
            hist = layer_base.get_history(t)
            if hist is None:
                raise ValueError(
                    f"Graph disconnected: cannot reach tensor {t!r} from the model "
                    f"inputs {[i.name for i in self.inputs]}. Every output must be "
                    f"computed by layer calls from the inputs."
                )
            layer, record, _ = hist
            key = (id(layer), record.index)
            if key in seen:
                return
            if isinstance(layer, InputLayer):
                raise ValueError(
                    f"Graph disconnected: the outputs depend on input '{layer.name}', "
                    f"which is not among the model's inputs."
                )
            for u in tree.flatten(record.inputs):
                if K.is_symbolic(u):
                    visit(u, path + [layer.name])
            seen.add(key)
            order.append((layer, record))

        for t in self.outputs:
            visit(t, [])
        self._graph_nodes = order
        input_layers = [layer_base.get_history(t)[0] for t in self.inputs]
        layers = list(input_layers)
        for layer, _ in order:
            if all(layer is not x for x in layers):
                layers.append(layer)
        object.__setattr__(self, "_layers", layers)
        for layer in layers:
            self._track(layer)
        self.built = True

    @property
    def layers(self):
        """The model's layers (input layers first for functional models)."""
        return list(getattr(self, "_layers", [l for l in self._sub_layers]))

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or at position ``index``.

        Raises:
            ValueError: no such layer, listing the names there are.
        """
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Model has {len(layers)} layers. Received: "
                                 f"index={index}.")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: '{name}'. Existing layers are: "
                         f"{[l.name for l in layers]}.")

    def _replay(self, inputs, training):
        mapping = {}
        new_flat = self._match_inputs(inputs)
        for old, new in zip(self.inputs, new_flat):
            mapping[id(old)] = new
        for layer, record in self._graph_nodes:
            new_in = tree.map_structure(
                lambda t: mapping[id(t)] if K.is_symbolic(t) else t, record.inputs)
            kwargs = dict(record.kwargs)
            if "training" in kwargs and record.kwargs.get("training") is None:
                kwargs["training"] = training
            out = layer(*new_in, **kwargs) if record.nargs else layer(new_in,
                                                                     **kwargs)
            for o, n in zip(tree.flatten(record.outputs), tree.flatten(out)):
                mapping[id(o)] = n
        return tree.map_structure(lambda t: mapping[id(t)], self._outputs_struct)

    def _match_inputs(self, inputs):
        if isinstance(self._inputs_struct, dict) and isinstance(inputs, dict):
            missing = set(self._inputs_struct) - set(inputs)
            if missing:
                raise ValueError(f"Model '{self.name}' is missing inputs "
                                 f"{sorted(missing)}.")
            return tree.flatten({k: inputs[k] for k in self._inputs_struct})
        if isinstance(inputs, dict):
            names = [layer_base.get_history(t)[0].name for t in self.inputs]
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError(f"Model '{self.name}' expects inputs named {names}. "
                                 f"Received keys: {sorted(inputs)}.")
            return [inputs[n] for n in names]
        flat = tree.flatten(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(
                f"Model '{self.name}' expects {len(self.inputs)} input(s). "
                f"Received: {len(flat)}."
            )
        return flat

    def call(self, inputs, training=None):
        """Replays the functional graph; subclassed models override this."""
        if not self._is_functional:
            raise NotImplementedError(
                f"Model '{self.name}' has no call(): pass inputs and outputs to "
                f"Model(...) or override call() in a subclass."
            )
        return self._replay(inputs, training)

    def __call__(self, inputs, *args, training=None, **kwargs):
        if training is None:  # a nested model inherits its caller's mode
            training = getattr(layer_base._ctx, "training", None)
        if "training" in layer_base._call_params(type(self)):
            kwargs["training"] = training
        with training_context(training):
            return Layer.__call__(self, inputs, *args, **kwargs)

    # -- inspection and saving ------------------------------------------------------------------
    def summary(self, print_fn=None, line_length=80):
        """Prints a table of layers, output shapes and parameter counts."""
        text = summary_text(self, line_length)
        (print_fn or print)(text)

    def save(self, filepath, overwrite=True):
        """Writes one zip file: architecture JSON + weights .npz (atomic)."""
        saving.save_model(self, filepath, overwrite=overwrite)

    def save_weights(self, filepath, overwrite=True):
        """Writes the weights as one checkpoint file (atomic) and records it in
        its folder's ``checkpoint`` index (``utils.checkpoint``)."""
        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        """Loads weights written by ``save_weights`` (or a model file)."""
        saving.load_weights(self, filepath)

    def to_json(self, **kwargs):
        """The architecture as a JSON string (``model_from_json`` rebuilds it)."""
        return saving.to_json(self, **kwargs)

    def to_yaml(self, **kwargs):
        """The architecture as YAML (``model_from_yaml`` rebuilds it)."""
        return saving.to_yaml(self, **kwargs)

    # -- config ----------------------------------------------------------------------------
    def get_config(self):
        """Functional models: layers with the calls connecting them.

        Raises:
            NotImplementedError: for subclassed models (save their weights instead).
        """
        if not self._is_functional:
            raise NotImplementedError(
                f"Subclassed model '{self.name}' has no config: use save_weights() "
                f"and rebuild it in code, or build it with the functional API."
            )
        def ref(t):
            layer, record, i = layer_base.get_history(t)
            return [layer.name, self._record_pos(layer, record), i]

        node_list = []
        for layer, record in self._graph_nodes:
            node_list.append({
                "layer": layer.name,
                "inputs": tree.map_structure(lambda t: ref(t) if K.is_symbolic(t) else t,
                                     record.inputs),
                "kwargs": {k: v for k, v in record.kwargs.items()
                           if k != "training" or v is not None},
                **({"nargs": record.nargs} if record.nargs else {}),
            })
        return {
            "name": self.name,
            "layers": [{"name": l.name, **layers_mod.serialize(l)}
                       for l in self._layers],
            "nodes": node_list,
            "input_layers": tree.map_structure(ref, self._inputs_struct),
            "output_layers": tree.map_structure(ref, self._outputs_struct),
            # JSON has no tuples: remember them so from_config returns the same.
            "output_tuple": isinstance(self._outputs_struct, tuple),
        }

    def _record_pos(self, layer, record):
        if isinstance(layer, InputLayer):
            return 0
        mine = [r for l, r in self._graph_nodes if l is layer]
        return next(i for i, r in enumerate(mine) if r is record)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuilds a functional model from ``get_config()`` output by calling
        the deserialized layers on each other in the recorded order."""
        by_name = {}
        for spec in config["layers"]:
            by_name[spec["name"]] = layers_mod.deserialize(spec, custom_objects)
        outputs_of: dict = {}  # layer name -> list of output structures per call
        for name, layer in by_name.items():
            if isinstance(layer, InputLayer):
                outputs_of[name] = [layer.output]

        def resolve(r):
            return tree.flatten(outputs_of[r[0]][r[1]])[r[2]]

        def is_ref(v):
            return isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)

        def deref(struct):
            if is_ref(struct):
                return resolve(struct)
            if isinstance(struct, dict):
                return {k: deref(v) for k, v in struct.items()}
            if isinstance(struct, (list, tuple)):
                return [deref(v) for v in struct]
            return struct

        for node in config["nodes"]:
            layer = by_name[node["layer"]]
            args = deref(node["inputs"])
            out = (layer(*args, **node.get("kwargs", {})) if node.get("nargs")
                   else layer(args, **node.get("kwargs", {})))
            outputs_of.setdefault(node["layer"], []).append(out)
        inputs = deref(config["input_layers"])
        outputs = deref(config["output_layers"])
        if config.get("output_tuple"):
            outputs = tuple(outputs)
        return cls(inputs, outputs, name=config.get("name"))

    def _default_input_specs(self):
        """(shape, dtype) per model input, or None when unknown before data."""
        if self._is_functional:
            return [(t.shape, t.dtype) for t in self.inputs]
        return None

    def _output_names(self, n):
        if self._is_functional:
            return [layer_base.get_history(t)[0].name for t in self.outputs]
        return [f"output_{i + 1}" for i in range(n)]
