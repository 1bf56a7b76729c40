"""Layers (L2): the ``Layer`` base class and one module per family.

``serialize``/``deserialize`` turn a layer into ``{"class_name", "config"}`` and
back; classes outside this package are found through ``custom_objects``.
"""

from __future__ import annotations

from kerasflow.layers.base import InputSpec, Layer
from kerasflow.layers.core import (
    Activation,
    Dense,
    Dropout,
    Flatten,
    Input,
    InputLayer,
    Lambda,
    Reshape,
)
from kerasflow.utils.serialization import deserialize_object, serialize_object
from kerasflow.layers import activation as _activation
from kerasflow.layers import attention as _attention
from kerasflow.layers import convolutional as _convolutional
from kerasflow.layers import embedding as _embedding
from kerasflow.layers import merging as _merging
from kerasflow.layers import normalization as _normalization
from kerasflow.layers import noise as _noise
from kerasflow.layers import pooling as _pooling
from kerasflow.layers import recurrent as _recurrent
from kerasflow.layers import reshaping as _reshaping
from kerasflow.layers import wrappers as _wrappers
from kerasflow.layers.activation import *  # noqa: F403
from kerasflow.layers.attention import *  # noqa: F403
from kerasflow.layers.convolutional import *  # noqa: F403
from kerasflow.layers.embedding import *  # noqa: F403
from kerasflow.layers.merging import *  # noqa: F403
from kerasflow.layers.normalization import *  # noqa: F403
from kerasflow.layers.noise import *  # noqa: F403
from kerasflow.layers.pooling import *  # noqa: F403
from kerasflow.layers.recurrent import *  # noqa: F403
from kerasflow.layers.reshaping import *  # noqa: F403
from kerasflow.layers.wrappers import *  # noqa: F403

# -- preprocessing layers (issue 25) --
from kerasflow.layers import preprocessing as _preprocessing
from kerasflow.layers.preprocessing import *  # noqa: F403

_FAMILIES = (_activation, _attention, _convolutional, _pooling, _normalization, _embedding,
             _recurrent, _wrappers, _reshaping, _merging, _noise)

__all__ = ["Layer", "InputSpec", "InputLayer", "Input", "Dense", "Activation",
           "Dropout", "Flatten", "Reshape", "Lambda", "serialize", "deserialize",
           *(n for m in _FAMILIES for n in m.__all__),
           # -- preprocessing layers (issue 25) --
           *_preprocessing.__all__]

# -- Keras 3 names of issue 25: attention scores, EinsumDense, Conv1DTranspose
# -- and the cell-based RNN API (one block, one import per module).
from kerasflow.layers import attention_score as _attention_score  # noqa: E402
from kerasflow.layers import conv_lstm as _conv_lstm  # noqa: E402
from kerasflow.layers import conv_transpose as _conv_transpose  # noqa: E402
from kerasflow.layers import einsum_dense as _einsum_dense  # noqa: E402
from kerasflow.layers import rnn_cells as _rnn_cells  # noqa: E402
from kerasflow.layers import rnn_layer as _rnn_layer  # noqa: E402
from kerasflow.layers.attention_score import *  # noqa: E402,F403
from kerasflow.layers.conv_lstm import *  # noqa: E402,F403
from kerasflow.layers.conv_transpose import *  # noqa: E402,F403
from kerasflow.layers.einsum_dense import *  # noqa: E402,F403
from kerasflow.layers.rnn_cells import *  # noqa: E402,F403
from kerasflow.layers.rnn_layer import *  # noqa: E402,F403

_FAMILIES_25 = (_attention_score, _conv_lstm, _conv_transpose, _einsum_dense,
                _rnn_cells, _rnn_layer)
__all__ += [n for m in _FAMILIES_25 for n in m.__all__]


def serialize(layer) -> dict:
    """``{"class_name": ..., "config": layer.get_config()}``."""
    return serialize_object(layer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """Rebuilds a layer (or a model, which is a layer) from ``serialize``'s output.

    Classes are looked up in ``custom_objects``, then in the "layer" registry
    every kerasflow layer and model class joins when defined.

    Raises:
        ValueError: a malformed config, or an unknown class name, naming it
            and how to provide it.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"A layer config is a dict with 'class_name' and "
                         f"'config'. Received: {config!r}.")
    if config["class_name"] == "Functional" and "Functional" not in (
            custom_objects or {}):  # Keras' class name for functional networks
        config = {**config, "class_name": "Model"}
    return deserialize_object(config, "layer", "layer", custom_objects)


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    from kerasflow.utils.keras_surface import missing_attribute

    raise missing_attribute("layers", name)
