"""Gradient clipping as Keras 3 optimizers apply it: by value, norm, global norm."""

from __future__ import annotations

from kerasflow import backend as K

__all__ = ["clip_by_global_norm", "clip_by_norm", "clip_by_value", "global_norm"]


def clip_by_value(grad, clipvalue: float):
    """Each element clipped to ``[-clipvalue, clipvalue]``."""
    return K.clip(grad, -float(clipvalue), float(clipvalue))


def clip_by_norm(grad, clipnorm: float):
    """``grad * clipnorm / max(||grad||_2, clipnorm)``: L2 norm at most clipnorm.

    A zero gradient stays zero (no division by its zero norm).
    """
    norm = K.sqrt(K.sum(K.square(grad)))
    return K.divide(K.multiply(grad, float(clipnorm)),
                    K.maximum(norm, float(clipnorm)))


def global_norm(grads):
    """``sqrt(sum of squared elements over all grads)``; None entries skipped."""
    return K.sqrt(K.add_n([K.sum(K.square(g)) for g in grads if g is not None]))


def clip_by_global_norm(grads, clipnorm: float):
    """All grads scaled by ``clipnorm / max(global_norm, clipnorm)`` (one factor).

    As ``tf.clip_by_global_norm`` (Pascanu et al., ICML 2013): the direction of
    the joint gradient is kept; None entries stay None. Grads of several float
    dtypes share the factor computed in the first one's dtype.
    """
    kept = [g for g in grads if g is not None]
    if not kept:
        return list(grads)
    dtype = kept[0].dtype
    norm = global_norm([g if g.dtype == dtype else K.cast(g, dtype) for g in kept])
    scale = K.divide(float(clipnorm), K.maximum(norm, float(clipnorm)))
    return [None if g is None else
            K.multiply(g, scale if g.dtype == dtype else K.cast(scale, g.dtype))
            for g in grads]
