"""``kerasflow.Variable``: Keras 3's ``keras.Variable`` signature on the backend
``Variable`` (L1: it resolves initializer names through ``initializers``)."""

from __future__ import annotations

import numpy as np

from kerasflow import initializers
from kerasflow.backend import variables

__all__ = ["Variable"]


class Variable(variables.Variable):
    """A backend ``Variable`` built with Keras 3's arguments.

    Args:
        initializer: an array or number, an initializer name ("zeros",
            "glorot_uniform"...) or callable ``f(shape, dtype)`` (then ``shape``
            is required).
        shape: the shape, for a name or callable ``initializer``.
        dtype: the dtype; floatx() for float values by default.
        trainable: whether optimizers and ``gradients`` see it.
        autocast, aggregation, synchronization: accepted for Keras
            compatibility; kerasflow has one dtype policy and strategies
            reduce gradients, not variables.
        name: a readable name.
        layout: must be None (a JAX sharding layout).

    Raises:
        NotImplementedError: a ``layout``.
        ValueError: a name or callable ``initializer`` without ``shape``; an
            unknown initializer name.

    Example::

        >>> v = kerasflow.Variable(initializer="ones", shape=(2, 2), name="v")
        >>> v.numpy().sum()
        4.0
    """

    __slots__ = ()

    def __init__(self, initializer, shape=None, dtype=None, trainable=True,
                 autocast=True, aggregation="none", synchronization="auto",
                 name=None, layout=None, **kwargs):
        if layout is not None:
            raise NotImplementedError(f"Variable layouts shard JAX arrays; kerasflow "
                                      f"has strategies instead. Received: "
                                      f"layout={layout}")
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments passed to Variable: "
                            f"{sorted(kwargs)}")
        if isinstance(initializer, (str, dict)):
            initializer = initializers.get(initializer)
        if callable(initializer) and shape is None:
            raise ValueError(f"When creating a Variable from an initializer, the "
                             f"`shape` argument should be specified. Received: "
                             f"initializer={initializer} and shape={shape}")
        if dtype is None and not callable(initializer) and np.asarray(
                initializer).dtype == np.int64:
            dtype = "int32"  # Keras' default integer dtype
        super().__init__(initializer, trainable=trainable, name=name, dtype=dtype,
                         shape=shape)
