"""``Model``: functional graphs of layers and ops, or subclasses with their own
``call``.

``Model(inputs, outputs)`` keeps everything between ``inputs`` and ``outputs``:
layer calls and the raw ops applied to symbolic tensors between them
(``functional_graph``). Calling the model on new tensors replays them (with
the ``training`` flag of that call), which is how training and inference
graphs are traced and how models nest inside models (Keras 3's functional
API); ``functional_config`` saves and rebuilds them.
"""

from __future__ import annotations

import re
import warnings

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers import base as layer_base
from kerasflow.layers.base import Layer, training_context
from kerasflow.layers.core import InputLayer
from kerasflow.layers.layer_helpers import MISSING, call_params, pop_first_argument
from kerasflow.models import functional_config, functional_graph
from kerasflow.models.layer_table import summary_text
from kerasflow.models.training import Trainer
from kerasflow.saving import onnx_export, saving_lib
from kerasflow.utils.serialization import to_snake_case

__all__ = ["Model"]


class Model(Trainer, Layer):
    """A trainable graph of layers (``compile``/``fit``/``evaluate``/``predict``).

    Functional: ``Model(inputs, outputs, name=None)`` where ``inputs`` is a
    tensor from ``kf.Input`` (or a list, dict or nesting of them) and
    ``outputs`` tensors computed from them by layer calls and ops
    (``a + b``, ``kf.ops.concatenate``, ``x[:, 0]``), as in Keras 3. Inputs may
    also be intermediate tensors: the graph after them is then replayed from
    new ``Input``s (a sub-model that shares the layers). Called with a dict,
    inputs are matched by key (or by ``Input`` name); extra keys are ignored
    with a warning; ranks differing by a trailing axis of size 1 are squeezed
    or expanded and values cast to each ``Input``'s dtype, as Keras does.
    Subclassed: override ``__init__`` (create layers) and
    ``call(inputs, training=None)``.

    Raises:
        ValueError: inputs or outputs that are not symbolic tensors; outputs
            that depend on a tensor which is neither a model input, a constant
            nor computed from them ("graph disconnected"), naming it; on a
            call, missing inputs, a None for an input that is not optional, or
            an incompatible shape.

    Example:
        >>> a, b = kf.Input((784,)), kf.Input((784,))
        >>> h = kf.layers.Dense(64, activation="relu")((a + b) * 0.5)
        >>> model = kf.Model([a, b], kf.layers.Dense(10)(h))
    """

    _builds_in_call = True
    # Each layer casts its own float inputs (Keras 3's Functional does not).
    _convert_input_args = False

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

    def __setattr__(self, name, value):
        if name == "layers":
            raise AttributeError("`Model.layers` attribute is reserved and should "
                                 "not be used. Please use another name.")
        super().__setattr__(name, value)

    # -- functional graph --------------------------------------------------------------
    def _init_graph(self, inputs, outputs):
        _check_tensors(inputs, "inputs")
        _check_tensors(outputs, "outputs")
        if not all(_is_input(t) for t in tree.flatten(inputs)):
            inputs, outputs = _slice_at(inputs, outputs)
        self._inputs_struct = inputs
        self._outputs_struct = outputs
        self.inputs = tree.flatten(inputs)
        self.outputs = tree.flatten(outputs)
        names = [t.name for t in self.inputs]
        self._graph_steps = functional_graph.trace(self.inputs, self.outputs, names)
        layers = [layer_base.get_history(t)[0] for t in self.inputs]
        for step in self._graph_steps:
            if step.layer is not None and all(step.layer is not x for x in layers):
                layers.append(step.layer)
        object.__setattr__(self, "_layers", layers)
        for layer in layers:
            self._track(layer)
        self.built = True

    @property
    def input(self):
        """The model's symbolic input(s), in the structure given to ``Model``."""
        if not self._is_functional:
            return Layer.input.fget(self)
        return self._inputs_struct

    @property
    def input_shape(self):
        """Shape(s) of ``input``, batch axis included (Keras)."""
        return tree.map_structure(lambda t: t.shape, self.input)

    @property
    def output(self):
        """The model's symbolic output(s), in the structure given to ``Model``."""
        if not self._is_functional:
            return Layer.output.fget(self)
        return self._outputs_struct

    @property
    def layers(self):
        """The model's layers (input layers first for functional models)."""
        return list(getattr(self, "_layers", self._sub_layers))

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
                         f"{[layer.name for layer in layers]}.")

    def _replay(self, inputs, training):
        return functional_graph.replay(self._graph_steps, self.inputs,
                                       self._match_inputs(inputs),
                                       self._outputs_struct, training)

    def _match_inputs(self, inputs):
        """``inputs`` as a flat list in the order of ``self.inputs``, ranks
        standardized (Keras 3's ``Functional._standardize_inputs``)."""
        struct, mismatch = self._inputs_struct, False
        names = [layer_base.get_history(t)[0].name for t in self.inputs]
        if isinstance(inputs, dict):
            keys = (tree.flatten({k: k for k in struct})
                    if isinstance(struct, dict) else names)
            missing = [k for k in keys if k not in inputs]
            if missing:
                raise ValueError(
                    f"Model '{self.name}' expects named input(s) with keys "
                    f"{keys}. Received keys: {sorted(map(str, inputs))}.")
            mismatch = len(inputs) > len(keys)
            flat = (tree.flatten({k: inputs[k] for k in struct})
                    if isinstance(struct, dict) else [inputs[k] for k in keys])
        else:
            flat = tree.flatten(inputs)
            if isinstance(struct, dict) and len(flat) == len(self.inputs):
                if list(struct) != sorted(struct):
                    raise ValueError(
                        f"The structure of `inputs` doesn't match the expected "
                        f"structure. Expected: a dict with keys {list(struct)} "
                        f"(not in sorted order, so a list is ambiguous). "
                        f"Received: inputs={_describe(inputs)}.")
                mismatch = True
        if len(flat) != len(self.inputs):
            raise ValueError(
                f"Model '{self.name}' expects {len(self.inputs)} input(s). "
                f"Received: {len(flat)}."
            )
        if mismatch:
            warnings.warn(
                f"The structure of `inputs` doesn't match the expected structure."
                f"\nExpected: {tree.map_structure(lambda t: t.name, struct)}"
                f"\nReceived: inputs={_describe(inputs)}", stacklevel=3)
        return [self._standardize_rank(i, x, names) for i, x in enumerate(flat)]

    def _standardize_rank(self, i, x, names):
        ref = self.inputs[i]
        if x is None:
            if not getattr(layer_base.get_history(ref)[0], "optional", False):
                raise ValueError(f"Model '{self.name}' input '{names[i]}' is not "
                                 f"optional. Received: None.")
            return None
        if not K.is_symbolic(x) or x.shape is None or ref.shape is None:
            return x
        rank, want = len(x.shape), len(ref.shape)
        if rank == want + 1 and x.shape[-1] == 1:
            return K.squeeze(x, axis=-1)
        if rank == want - 1 and ref.shape[-1] == 1:
            return K.expand_dims(x, axis=-1)
        if rank != want:
            raise ValueError(
                f"Invalid input shape for input with name '{names[i]}' and path "
                f"'{_path(self._inputs_struct, i)}'. Expected shape {ref.shape}, "
                f"but input has incompatible shape {x.shape}.")
        if any(a is not None and b is not None and a != b
               for a, b in zip(ref.shape[1:], x.shape[1:])):
            raise ValueError(
                f"Input {i} of layer '{self.name}' is incompatible with the "
                f"layer: expected shape={ref.shape}, found shape={x.shape}.")
        # Values take the dtype of their Input, as Keras converts them.
        return x if x.dtype == ref.dtype else K.cast(x, ref.dtype)

    def call(self, inputs, training=None):
        """Replays the functional graph; subclassed models override this."""
        if not self._is_functional:
            raise NotImplementedError(
                f"Model '{self.name}' has no call(): pass inputs and outputs to "
                f"Model(...) or override call() in a subclass."
            )
        return self._replay(inputs, training)

    def __call__(self, inputs=MISSING, *args, training=None, **kwargs):
        if inputs is MISSING:
            inputs = pop_first_argument(self, kwargs)
        if training is None:  # a nested model inherits its caller's mode
            training = getattr(layer_base._ctx, "training", None)
        if "training" in call_params(type(self)):
            kwargs["training"] = training
        with training_context(training):
            return Layer.__call__(self, inputs, *args, **kwargs)

    # -- inspection and saving ---------------------------------------------------------
    def summary(self, print_fn=None, line_length=80):
        """Prints a table of layers, output shapes and parameter counts."""
        text = summary_text(self, line_length)
        (print_fn or print)(text)

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """Quantizes the weights of every layer that can (Keras 3's
        ``Model.quantize``): each leaf layer's ``quantize(mode)`` runs; a layer
        without one is skipped with a warning carrying its message. ``Dense``
        and ``EinsumDense`` implement "int8".

        Args:
            mode: "int8".
            config: only None (Keras' default int8 quantizers).
            filters: a regex (or list of them) matched against layer names, or
                a callable ``f(layer) -> bool``: only those layers quantize.
            type_check: (keyword) False lets subclasses of Dense/EinsumDense
                quantize too.

        Raises:
            ValueError: no mode, or an unknown one, naming the supported ones;
                unknown keyword arguments; ``filters`` of another type.
            NotImplementedError: a Keras 3 mode other than "int8" (Keras'
                "int4", "float8", "gptq", "awq"), or a ``config``, before any
                layer changes.

        Example:
            >>> model = kf.Sequential([kf.Input((10,)), kf.layers.Dense(4)])
            >>> model.quantize("int8")
            >>> model.layers[0].kernel.dtype
            dtype('int8')
        """
        type_check = kwargs.pop("type_check", True)
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments passed to "
                             f"{type(self).__name__}: {kwargs}")
        if filters is not None and not isinstance(filters, (str, list, tuple)) \
                and not callable(filters):
            raise ValueError(f"The `filters` argument must be a regex string, a "
                             f"list of regex strings, or a callable. Received: "
                             f"{type(filters)}")
        layer_base.check_quantize_request(mode, config)
        changed = False
        for layer in self._flatten_layers():
            if not _matches(layer, filters) or len(layer._flatten_layers()) != 1:
                continue
            try:
                layer.quantize(mode, type_check=type_check, config=config)
                changed = True
            except NotImplementedError as e:
                warnings.warn(str(e), stacklevel=2)
        if changed:  # steps traced with float kernels are stale
            self._reset_steps()
            self._clear_eager_traces()
            live = {id(v) for v in self.weights}
            if self._trained_weights is not None:
                self._trained_weights = [v for v in self._trained_weights
                                         if id(v) in live]

    def save(self, filepath, overwrite=True):
        """Writes Keras 3's ``.keras`` file (config, weights, compile state and
        optimizer variables; atomic), which Keras 3 loads too."""
        saving_lib.save_model(self, filepath, overwrite=overwrite)

    def save_weights(self, filepath, overwrite=True):
        """Writes the weights (atomic): a ``.weights.h5`` name in Keras 3's
        layout, any other name as one checkpoint file recorded in its folder's
        ``checkpoint`` index (``utils.checkpoint``)."""
        saving_lib.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, by_name=False):
        """Loads weights from ``save_weights`` files, Keras 3 ``.weights.h5`` /
        ``.keras`` files or Keras 2 ``.h5`` files (``by_name`` for Keras 2)."""
        saving_lib.load_weights(self, filepath, skip_mismatch=skip_mismatch,
                                by_name=by_name)

    def export(self, filepath, format="onnx", verbose=None, **kwargs):
        """Writes the inference graph for serving (Keras 3's ``Model.export``).

        Args:
            filepath: path of the file to write (e.g. "model.onnx").
            format: "onnx" (opset 17 by default, dynamic batch dimension; see
                ``kerasflow.saving.export_onnx``), the one format supported.
            verbose: print the written path.
            **kwargs: passed to the exporter (``opset_version``).

        Raises:
            ValueError: another format.
            NotImplementedError: an op with no ONNX equivalent, naming it and
                its layer.
        """
        if format != "onnx":
            raise ValueError(f"Model.export supports format='onnx'. "
                             f"Received: format={format!r}.")
        return onnx_export.export_onnx(self, filepath, verbose=bool(verbose),
                                       **kwargs)

    def to_json(self, **kwargs):
        """The architecture as a JSON string (``model_from_json`` rebuilds it)."""
        return saving_lib.to_json(self, **kwargs)

    def to_yaml(self, **kwargs):
        """The architecture as YAML (``model_from_yaml`` rebuilds it)."""
        return saving_lib.to_yaml(self, **kwargs)

    # -- config ------------------------------------------------------------------------
    def get_config(self):
        """Functional models: layers, and the layer calls and ops connecting them
        (``kerasflow.models.functional_config``).

        Raises:
            NotImplementedError: for subclassed models that do not override
                get_config (save their weights instead).
            ValueError: an op between layers that cannot be saved (it reads a
                Variable of no layer, or has a non-plain attribute).
        """
        if not self._is_functional:
            if type(self).get_config is not Model.get_config:
                # A subclass with its own get_config (Keras' contract): the
                # base entries here, its __init__ arguments added there.
                return Layer.get_config(self)
            raise NotImplementedError(
                f"Subclassed model '{self.name}' has no config: use save_weights() "
                f"and rebuild it in code, or build it with the functional API."
            )
        return functional_config.functional_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuilds a functional model from ``get_config()`` output by calling
        the deserialized layers and applying the ops in the recorded order.

        Raises:
            ValueError: a malformed config, naming the missing key or the bad
                node.
        """
        if cls is not Model and "layers" not in config:
            return cls(**config)  # a subclassed model's own get_config
        return functional_config.functional_from_config(cls, config,
                                                        custom_objects)

    def _input_names(self):
        struct = self._inputs_struct
        if self._is_functional and isinstance(struct, dict) and any(
                tree.is_nested(v) for v in struct.values()):
            # Nested dicts of inputs: data is keyed by dotted path ("others.2").
            return [_path(struct, i) for i in range(len(self.inputs))]
        return super()._input_names()

    def _default_input_specs(self):
        """(shape, dtype) per model input, or None when unknown before data."""
        if self._is_functional:
            return [(t.shape, t.dtype) for t in self.inputs]
        return None

    def _output_names(self, n):
        struct = self._outputs_struct
        if self._is_functional and isinstance(struct, dict):
            # Dict outputs are named by their keys (Keras 3), in flatten order.
            return [_path(struct, i) for i in range(len(self.outputs))]
        if self._is_functional:
            names = []
            for t in self.outputs:
                hist = layer_base.get_history(t)
                # An op's output is named after the op, as Keras 3 names it.
                base = hist[0].name if hist else to_snake_case(t.node.op)
                name, k = base, 1
                while name in names:
                    name, k = f"{base}_{k}", k + 1
                names.append(name)
            return names
        return [f"output_{i + 1}" for i in range(n)]


def _matches(layer, filters):
    """Whether ``filters`` (None, regex, list of them or callable) selects
    ``layer`` (Keras 3's ``should_quantize_layer``)."""
    if filters is None:
        return True
    if isinstance(filters, str):
        return bool(re.search(filters, layer.name))
    if isinstance(filters, (list, tuple)):
        return any(re.search(f, layer.name) for f in filters)
    return bool(filters(layer))


def _describe(x):
    return tree.map_structure(
        lambda v: v.name if K.is_symbolic(v) else None if v is None
        else f"array{tuple(getattr(v, 'shape', ()))}", x)


def _path(struct, i):
    """Keras' dotted path ('0.foo') of the ``i``-th leaf of ``struct``."""
    return ".".join(str(p) for p in tree.flatten_with_path(struct)[i][0])


def _check_tensors(struct, what):
    for t in tree.flatten(struct):
        if not K.is_symbolic(t):
            raise ValueError(f"All `{what}` values must be KerasTensors (symbolic "
                             f"tensors from kf.Input and layers). Received: "
                             f"{what}={struct!r:.200}, including {t!r:.60}.")


def _is_input(t):
    hist = layer_base.get_history(t)
    return hist is not None and isinstance(hist[0], InputLayer)


def _slice_at(inputs, outputs):
    """Inputs that are intermediate tensors get an ``InputLayer`` each, and the
    graph between them and ``outputs`` is replayed from those (Keras 3's
    functional slicing: ``Model(x2, outputs)`` reuses the layers after x2)."""
    flat = tree.flatten(inputs)
    new = [t if _is_input(t) else InputLayer(batch_shape=t.shape, dtype=t.dtype,
                                              name=None).output for t in flat]
    steps = functional_graph.trace(flat, tree.flatten(outputs),
                                   [t.name for t in flat])
    outputs = functional_graph.replay(steps, flat, new, outputs, None)
    return tree.pack_sequence_as(inputs, new), outputs
