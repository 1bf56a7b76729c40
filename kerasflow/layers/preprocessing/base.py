"""Shared machinery of the preprocessing layers: image layouts, eager-only
(numpy) layers, and the batches ``adapt`` reads.

How values flow: numeric preprocessing layers (``Normalization``,
``Rescaling``, the image layers, ``CategoryEncoding``, ``Discretization``) are
graph layers like any other: called on symbolic tensors they add ops, called on
arrays they run through the layer's cached eager trace. The graph backend
carries numeric tensors only, so the layers that read strings or need a hash
table (``StringLookup``, ``IntegerLookup``, ``Hashing``, ``TextVectorization``)
run eagerly on numpy arrays (``EagerArrayLayer``): call them on arrays, or inside
``kerasflow.data.Dataset.map``, as Keras' own docs advise for these layers
(``dataset.map(lambda x, y: (vectorizer(x), y))``); called on a symbolic tensor
they raise a ``TypeError`` that says so.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers.base import Layer
from kerasflow.layers.layer_helpers import MISSING, pop_first_argument
from kerasflow.utils.py_dataset import PyDataset

__all__ = ["EagerArrayLayer", "ImageLayer", "adapt_batches", "check_adaptable",
           "check_numeric", "training_flag"]


def check_numeric(layer, x):
    """Raises TypeError naming the layer unless ``x`` has a numeric dtype."""
    if np.dtype(x.dtype).kind not in "biuf":
        raise TypeError(f"Layer '{layer.name}' ({type(layer).__name__}) expects "
                        f"numeric inputs. Received: dtype={np.dtype(x.dtype)}.")


def training_flag(training) -> bool:
    """Keras' image layers default ``training`` to True: only an explicit
    False (or 0) turns augmentation off (``predict``/``evaluate`` pass it)."""
    return training is None or bool(training)


class ImageLayer(Layer):
    """Base of the image layers: ``data_format``, the height/width axes, and a
    check that inputs are single images (rank 3) or batches (rank 4).

    A rank-3 array called eagerly is run as a batch of one and squeezed back
    (the eager trace leaves the first axis unknown, and image layers need the
    height and width).
    """

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = K.standardize_data_format(data_format)

    @property
    def _hw_axes(self):
        return (-2, -1) if self.data_format == "channels_first" else (-3, -2)

    def _check_images(self, x):
        rank = len(x.shape)
        if rank not in (3, 4):
            raise ValueError(
                f"Layer '{self.name}' ({type(self).__name__}) expects images of "
                f"rank 3 (one image) or 4 (a batch). Received: "
                f"inputs.shape={tuple(x.shape)}")
        return rank

    def _hw(self, x):
        h_ax, w_ax = self._hw_axes
        return x.shape[h_ax], x.shape[w_ax]

    def _known_hw(self, x):
        """``_hw(x)``, which a crop needs known; Keras' ValueError if not."""
        h, w = self._hw(x)
        if h is None or w is None:
            raise ValueError(f"{type(self).__name__} requires the input to have a "
                             f"fully defined height and width. Received: "
                             f"images.shape={x.shape}")
        return h, w

    # Resizing gives integer images back in their dtype (rounded, saturated),
    # as Keras does; the other layers compute in the layer's float dtype.
    _keeps_int_dtype = False

    def __call__(self, inputs=MISSING, *args, **kwargs):
        if inputs is MISSING:
            inputs = pop_first_argument(self, kwargs)
        if not K.is_symbolic(inputs) and not isinstance(inputs, (dict, list)):
            x = np.asarray(inputs)
            self._check_images(x)
            if x.ndim == 3:
                out = super().__call__(x[None], *args, **kwargs)[0]
            else:
                out = super().__call__(x, *args, **kwargs)
            if self._keeps_int_dtype and x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                out = np.clip(np.round(out), info.min, info.max).astype(x.dtype)
            return out
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None):
        check_numeric(self, inputs)
        rank = self._check_images(inputs)
        if rank == 3:
            return K.squeeze(self._call_batch(K.expand_dims(inputs, 0), training), 0)
        return self._call_batch(inputs, training)

    def _call_batch(self, images, training):
        raise NotImplementedError

    def _float(self, images):
        return images if images.dtype == np.dtype(self.dtype) else K.cast(
            images, self.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class EagerArrayLayer(Layer):
    """A layer computed in numpy, on arrays only (strings, hash tables).

    Subclasses implement ``_call_numpy(array, **kwargs)``. The graph backend
    carries numeric tensors only, so a symbolic input raises ``TypeError``.
    """

    _accepts = "arrays"

    def __call__(self, inputs=MISSING, *args, **kwargs):
        if inputs is MISSING:
            inputs = pop_first_argument(self, kwargs)
        if K.is_symbolic(inputs) or any(K.is_symbolic(a) for a in args):
            raise TypeError(
                f"Layer '{self.name}' ({type(self).__name__}) runs eagerly on "
                f"numpy arrays (kerasflow's graphs carry no strings or hash "
                f"tables): call it on arrays, or in a kerasflow.data pipeline "
                f"(`dataset.map(lambda x, y: (layer(x), y))`), and feed the "
                f"model its numeric output. Received: a symbolic tensor "
                f"{inputs!r}.")
        kwargs.pop("training", None)
        self.built = True
        return self._call_numpy(inputs, *args, **kwargs)

    def _call_numpy(self, inputs, **kwargs):
        raise NotImplementedError


def _first(batch):
    return batch[0] if isinstance(batch, tuple) else batch


def check_adaptable(layer) -> None:
    """Raises Keras' ValueError when ``layer`` was given a vocabulary (adapting
    would replace it)."""
    if layer._has_input_vocabulary:
        raise ValueError(f"Cannot adapt layer '{layer.name}' after setting a "
                         f"static vocabulary via `vocabulary` argument or "
                         f"`set_vocabulary()` method.")


def adapt_batches(data, steps=None, name="adapt"):
    """The batches of ``data`` as numpy arrays: an array (or tensor, or list
    of values) is one batch; a ``PyDataset``, a ``kerasflow.data.Dataset``, a
    list of arrays or any other iterable yields its batches (of an ``(x, y)``
    or ``(x, y, sample_weight)`` element, ``x``), as Keras 3's ``adapt``.

    Raises:
        TypeError: ``data`` is none of these.
        ValueError: an empty iterable.
    """
    if isinstance(data, list) and all(
            np.ndim(b[0] if isinstance(b, tuple) and b else b) >= 1
            and not isinstance(b, (list, str)) for b in data):
        data = iter(data)  # Keras 3: a list of arrays is a list of batches
    elif isinstance(data, (np.ndarray, list, tuple, str, bytes, int, float)) or (
            hasattr(data, "shape") and hasattr(data, "dtype")):
        return [np.asarray(K.to_numpy(data) if not isinstance(
            data, (list, tuple, str, bytes)) else data)]
    if isinstance(data, PyDataset):  # indexed by batch; may never IndexError
        data = map(data.__getitem__, range(len(data)))
    if not hasattr(data, "__iter__"):
        raise TypeError(
            f"`{name}` expects an array, a PyDataset, a kerasflow.data.Dataset "
            f"or an iterable of batches. Received: data of type "
            f"{type(data).__name__}.")
    out = []
    for i, batch in enumerate(data):
        if steps is not None and i >= steps:
            break
        out.append(np.asarray(_first(batch)))
    if not out:
        raise ValueError(f"`{name}` received no batches (an empty dataset or "
                         f"an empty iterable). Expected at least one batch.")
    return out
