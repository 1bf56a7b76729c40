"""``tf.layers``: TF1's functional layers over kerasflow's Keras layers.

``tf.layers.dense(x, units)`` builds a ``kerasflow.layers.Dense`` and calls it;
its weights join the default graph's variable collections (so ``Saver`` and
``global_variables()`` see them). A ``name`` with ``reuse=True`` (or inside a
reusing ``variable_scope``) calls the layer built before under that name,
sharing its weights, as TF1 did. ``training`` may be a Python bool or a bool
tensor (a placeholder), as in TF1.
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import layers as klayers
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1._missing import missing_attribute
from kerasflow.compat.v1.variables import AUTO_REUSE, get_variable_scope

__all__ = ["dense", "dropout", "flatten", "conv2d", "max_pooling2d",
           "average_pooling2d", "batch_normalization", "Dense", "Dropout",
           "Flatten"]

Dense, Dropout, Flatten = klayers.Dense, klayers.Dropout, klayers.Flatten


def _initializer(init):
    return "glorot_uniform" if init is None else init


def _layer(kind, name, reuse, make):
    """The layer stored under ``name`` (reuse), else a new one from ``make()``."""
    graph = G.get_default_graph()
    scope = get_variable_scope()
    key = None
    if name is not None:
        key = f"{scope.name}/{name}" if scope.name else name
    reuse = reuse if reuse is not None else scope.reuse
    if key is not None and key in graph.layer_store:
        if reuse in (True, AUTO_REUSE):
            return graph.layer_store[key], False
        raise ValueError(f"Variable {key}/kernel already exists, disallowed. Did "
                         f"you mean to set reuse=True or reuse=tf.AUTO_REUSE in "
                         f"VarScope?")
    if reuse is True and key is not None:
        raise ValueError(f"Variable {key}/kernel does not exist, or was not "
                         f"created with tf.get_variable(). Did you mean to set "
                         f"reuse=tf.AUTO_REUSE in VarScope?")
    layer = make(key)
    if key is not None:
        graph.layer_store[key] = layer
    return layer, True


def _finish(layer, out):
    graph = G.get_default_graph()
    for w in layer.weights:
        graph.register_variable(w)
    for loss in getattr(layer, "losses", []) or []:
        graph.add_to_collection(G.GraphKeys.REGULARIZATION_LOSSES, loss)
    return G.track(out)


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """``activation(inputs @ kernel + bias)`` (Glorot-uniform kernel, as TF1)."""
    layer, _ = _layer("dense", name, reuse, lambda key: klayers.Dense(
        units, activation=activation, use_bias=use_bias,
        kernel_initializer=_initializer(kernel_initializer),
        bias_initializer=bias_initializer or "zeros",
        kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        trainable=trainable, name=key))
    return _finish(layer, layer(G.as_tensor(inputs)))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False,
            name=None):
    """Drops with probability ``rate`` (note: a *drop* rate, unlike
    ``tf.nn.dropout``'s keep_prob) when ``training`` is true; ``training``
    may be a bool tensor."""
    x = G.as_tensor(inputs)
    if not K.is_symbolic(training):
        return G.track(K.dropout(x, float(rate), seed=seed, training=bool(training))
                       if training else K.identity(x))
    dropped = K.dropout(x, float(rate), seed=seed, training=True)
    return G.track(K.where(K.cast(training, "bool"), dropped, x))


def _channels_last(x, data_format, what):
    """``x`` as NHWC: a channels_first input is transposed (TF's layers do the
    same on CPU)."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"tf.layers.{what} expects data_format 'channels_last' "
                         f"or 'channels_first'. Received: "
                         f"data_format={data_format!r}.")
    if data_format == "channels_last" or x.shape is None or len(x.shape) < 3:
        return x
    rank = len(x.shape)
    return K.transpose(x, (0, *range(2, rank), 1))


def _channels_back(x, data_format):
    if data_format == "channels_last" or x.shape is None or len(x.shape) < 3:
        return x
    rank = len(x.shape)
    return K.transpose(x, (0, rank - 1, *range(1, rank - 1)))


def flatten(inputs, name=None, data_format="channels_last"):
    """(batch, ...) -> (batch, prod(...)); a channels_first input is flattened
    in channels_last order, as TF's ``Flatten``."""
    x = _channels_last(G.as_tensor(inputs), data_format, "flatten")
    return G.track(K.flatten(x))


def _keras_layer(cls_name, tf1_name):
    cls = getattr(klayers, cls_name, None)
    if cls is None:
        raise NotImplementedError(
            f"tf.layers.{tf1_name} maps onto kerasflow.layers.{cls_name}, which "
            f"this kerasflow does not have yet; use tf.nn.{tf1_name.split('_')[0]}"
            f" with tf.get_variable weights instead.")
    return cls


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None,
           use_bias=True, kernel_initializer=None, bias_initializer="zeros",
           kernel_regularizer=None, bias_regularizer=None, trainable=True,
           name=None, reuse=None, **kwargs):
    """2-D convolution layer (``kerasflow.layers.Conv2D``), NHWC or NCHW."""
    cls = _keras_layer("Conv2D", "conv2d")
    layer, _ = _layer("conv2d", name, reuse, lambda key: cls(
        filters, kernel_size, strides=strides, padding=padding,
        data_format=data_format, dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
        kernel_initializer=_initializer(kernel_initializer),
        bias_initializer=bias_initializer or "zeros",
        kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
        trainable=trainable, name=key))
    return _finish(layer, layer(G.as_tensor(inputs)))


def max_pooling2d(inputs, pool_size, strides, padding="valid",
                  data_format="channels_last", name=None):
    """Max pooling (``kerasflow.backend.max_pool2d``), NHWC or NCHW."""
    x = _channels_last(G.as_tensor(inputs), data_format, "max_pooling2d")
    return G.track(_channels_back(K.max_pool2d(x, pool_size, strides, padding),
                                  data_format))


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """Average pooling (``kerasflow.backend.avg_pool2d``), NHWC or NCHW."""
    x = _channels_last(G.as_tensor(inputs), data_format, "average_pooling2d")
    return G.track(_channels_back(K.avg_pool2d(x, pool_size, strides, padding),
                                  data_format))


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True,
                        scale=True, training=False, trainable=True, name=None,
                        reuse=None, **kwargs):
    """Batch normalization (``kerasflow.layers.BatchNormalization``)."""
    cls = _keras_layer("BatchNormalization", "batch_normalization")
    if K.is_symbolic(training):
        raise NotImplementedError("tf.layers.batch_normalization with a tensor "
                                  "`training` is not provided; pass a bool.")
    layer, _ = _layer("batch_normalization", name, reuse, lambda key: cls(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        trainable=trainable, name=key))
    return _finish(layer, layer(G.as_tensor(inputs), training=bool(training)))


__getattr__ = missing_attribute("tf.layers", globals())
