"""``Sequential``: a linear stack of layers (Keras' ``keras.Sequential``)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import layers as layers_mod
from kerasflow.layers.base import Layer, collect_updates, get_history
from kerasflow.layers.core import InputLayer
from kerasflow.models.model import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """A model whose layers each take the previous layer's output.

    Args:
        layers: list of layers (more can be added with ``add``).
        name: model name.

    The model builds as soon as its input shape is known: from ``input_shape=``
    on the first layer (``Dense(1, input_shape=(1,))``), an ``InputLayer`` /
    ``kf.Input`` first, ``build(input_shape)``, or the first batch of data.

    Raises:
        TypeError: adding something that is not a Layer.

    Example:
        >>> model = kf.Sequential([kf.layers.Dense(10, input_shape=(784,))])
    """

    _call_takes_data_structure = False  # a one-key dict of data is its array

    def __init__(self, layers=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        object.__setattr__(self, "_stack", [])
        self._input_layer = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self):
        """The stacked layers, in order (without the input layer)."""
        return list(self._stack)

    def add(self, layer):
        """Appends a layer (an ``InputLayer`` or a ``kf.Input`` tensor sets the
        input shape)."""
        if K.is_symbolic(layer):
            hist = get_history(layer)
            layer = hist[0] if hist else None
        if not isinstance(layer, Layer):
            raise TypeError(
                f"Sequential.add() takes a Layer instance. Received: {layer!r} "
                f"(of type {type(layer).__name__})."
            )
        if isinstance(layer, InputLayer):
            if self._input_layer is not None or self._stack:
                raise ValueError(
                    f"Sequential model '{self.name}' already has "
                    f"{'an input' if self._input_layer is not None else 'layers'};"
                    f" an Input can only come first, once. Received: a second "
                    f"input of shape {layer._batch_input_shape}.")
            self._input_layer = layer
            self._maybe_build()
            return
        self._stack.append(layer)
        self._track(layer)
        self.built = False
        self._reset_steps()
        self._clear_eager_traces()
        self._maybe_build()

    def pop(self):
        """Removes the last layer."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        self._sub_layers.remove(layer)
        self.built = False
        self._reset_steps()
        self._clear_eager_traces()
        self._maybe_build()
        return layer

    def _batch_shape(self):
        if self._input_layer is not None:
            return self._input_layer._batch_input_shape, self._input_layer.dtype
        if self._stack and self._stack[0]._batch_input_shape is not None:
            return self._stack[0]._batch_input_shape, self._stack[0].dtype
        if getattr(self, "_build_shape", None) is not None:
            return self._build_shape
        return None

    def _maybe_build(self):
        spec = self._batch_shape()
        if spec is not None and self._stack:
            self.build(spec[0], spec[1])

    def build(self, input_shape=None, dtype=None):
        """Creates all weights by calling the stack on an ``Input`` of
        ``input_shape`` (batch axis included); afterwards ``inputs``,
        ``outputs`` and each layer's ``output`` are tensors of that graph."""
        if input_shape is None:
            return
        dtype = np.dtype(dtype or K.floatx()).name
        input_shape = tuple(input_shape)
        self._build_shape = (input_shape, dtype)
        layer = self._input_layer
        if layer is None or (layer._batch_input_shape, layer.dtype) != (
                input_shape, dtype):
            layer = self.__dict__.get("_auto_input")
            if layer is None or (layer._batch_input_shape, layer.dtype) != (
                    input_shape, dtype):
                layer = InputLayer(batch_shape=input_shape, dtype=dtype)
                object.__setattr__(self, "_auto_input", layer)
        x = out = layer.output
        # Updates and losses of this call belong to no step being traced; the
        # stack is called directly so each layer keeps its outputs' history.
        with collect_updates(), K.name_scope(self.name):
            for sub in self._stack:
                out = sub(out)
        object.__setattr__(self, "_io", (x, out))
        self._last_output_shape = out.shape
        self.built = True

    def _functional_io(self, what):
        io = self.__dict__.get("_io")
        if io is None or not self._stack:
            raise AttributeError(f"Sequential model '{self.name}' has no defined "
                                 f"{what} yet: give it an input shape (an Input "
                                 f"first, input_shape=, or build()).")
        return io

    @property
    def inputs(self):
        """``[input tensor]`` once the model is built (Keras 3)."""
        return [self._functional_io("inputs")[0]]

    @property
    def outputs(self):
        """``[output tensor]`` once the model is built (Keras 3)."""
        return [self._functional_io("outputs")[1]]

    @property
    def input(self):
        """The input tensor once the model is built (Keras 3)."""
        return self._functional_io("input")[0]

    @property
    def output(self):
        """The output tensor once the model is built (Keras 3)."""
        return self._functional_io("output")[1]

    def call(self, inputs, training=None):
        if self._batch_shape() is None and K.is_symbolic(inputs):
            # Built from the first data seen (Keras), on an Input of its shape,
            # so the layers' first calls form a graph from ``model.input``.
            self.build(inputs.shape, inputs.dtype.name)
        x = inputs
        for layer in self._stack:
            x = layer(x)
        return x

    def _default_input_specs(self):
        spec = self._batch_shape()
        if spec is None:
            return None
        return [(tuple(spec[0]), np.dtype(spec[1]))]

    def _output_names(self, n):
        return [self._stack[-1].name] if self._stack else ["output_1"]

    def get_config(self):
        config = {"name": self.name,
                  "layers": [_serialize(layer) for layer in self._stack]}
        spec = self._batch_shape()
        if spec is not None:
            config["build_input_shape"] = list(spec[0])
            config["input_dtype"] = spec[1]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuilds the stack (and its weights, when the input shape is known)."""
        model = cls(name=config.get("name"))
        for spec in config["layers"]:
            model._stack.append(layers_mod.deserialize(spec, custom_objects))
            model._track(model._stack[-1])
        if config.get("build_input_shape") is not None:
            model.build(tuple(config["build_input_shape"]),
                        config.get("input_dtype"))
        return model


def _serialize(layer):
    return layers_mod.serialize(layer)
