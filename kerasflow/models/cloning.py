"""``clone_model``: the same architecture with new layers (Keras 3's
``keras.models.clone_model``)."""

from __future__ import annotations

from kerasflow import layers as layers_mod
from kerasflow import tree
from kerasflow.layers.core import InputLayer
from kerasflow.models import functional_config
from kerasflow.models.model import Model
from kerasflow.models.sequential import Sequential

__all__ = ["clone_model"]


def _default_clone(layer):
    return layer.__class__.from_config(layer.get_config())


def clone_model(model, input_tensors=None, clone_function=None,
                call_function=None, recursive=False, **kwargs):
    """A new model with the architecture of ``model`` and new weights.

    Each layer is rebuilt by ``clone_function(layer)`` (default:
    ``layer.__class__.from_config(layer.get_config())``, which draws fresh
    weights from the layer's initializers; return ``layer`` itself to share
    it). Input layers are always recreated. Weights are not copied: call
    ``clone.set_weights(model.get_weights())`` for that.

    Args:
        model: a ``Sequential`` or functional ``Model``.
        input_tensors: symbolic tensors (from ``kerasflow.Input``) to build the
            clone on, one per model input; new inputs by default.
        clone_function: ``layer -> layer`` applied to every non-input layer.
        call_function: not supported (raises when given).
        recursive: also clone the layers of nested Sequential/functional
            models with ``clone_function`` (by default a nested model is
            passed to ``clone_function`` whole).

    Returns:
        A model of the same class (``Sequential`` or ``Model``).

    Raises:
        ValueError: a subclassed model with ``clone_function`` or
            ``input_tensors``; a wrong number of ``input_tensors``; a
            ``clone_function`` that does not return a layer.
        NotImplementedError: ``call_function``; a subclassed model without a
            config.
    """
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments passed to clone_model: "
                        f"{sorted(kwargs)}")
    if call_function is not None:
        raise NotImplementedError("clone_model(call_function=...) is not supported "
                                  "by kerasflow; wrap layers in clone_function.")
    base = clone_function or _default_clone

    def clone(layer):
        if recursive and _is_graph_model(layer):
            new = clone_model(layer, clone_function=clone_function, recursive=True)
        else:
            new = base(layer)
        if not isinstance(new, layers_mod.Layer):
            raise ValueError(f"clone_function must return a Layer. Received: "
                             f"{new!r} for layer '{layer.name}'.")
        return new

    if input_tensors is not None:
        input_tensors = tree.flatten(input_tensors)
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone)
    if _is_graph_model(model):
        by_name = {layer.name: layer for layer in model.layers}
        return functional_config.functional_from_config(
            model.__class__, model.get_config(),
            make_layer=lambda spec: clone(by_name[spec["name"]]),
            input_tensors=input_tensors)
    if clone_function is not None or input_tensors is not None:
        raise ValueError(f"Arguments clone_function and input_tensors are only "
                         f"supported for Sequential models or Functional models. "
                         f"Received model of type '{model.__class__.__name__}', "
                         f"with clone_function={clone_function} and "
                         f"input_tensors={input_tensors}")
    return model.__class__.from_config(model.get_config())


def _is_graph_model(layer) -> bool:
    return isinstance(layer, Sequential) or (
        isinstance(layer, Model) and getattr(layer, "_is_functional", False))


def _clone_sequential(model, input_tensors, clone):
    new = Sequential(name=model.name)
    for layer in model.layers:
        if not isinstance(layer, InputLayer):
            new.add(clone(layer))
    if input_tensors is not None:
        if len(input_tensors) != 1:
            raise ValueError(f"A Sequential model has one input. Received: "
                             f"{len(input_tensors)} input_tensors.")
        new(input_tensors[0])
        return new
    spec = model._batch_shape()
    if spec is not None:
        new.build(tuple(spec[0]), spec[1])
    return new
