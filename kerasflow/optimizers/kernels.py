"""Fused, in-place update ops: one stateful graph node per optimizer per variable.

Each kernel receives the ``Variable`` being trained as its first argument (the
registry's convention for stateful ops) and the optimizer's slot arrays as plain
inputs: a slot input *is* its Variable's current buffer, so the kernel updates
the slot by writing into it with ``out=`` ufuncs. Per step and variable this costs
one Python call and one scratch array, as a hand-written numpy loop does.

The trained variable's buffer is written in place only when nothing else can
observe it (see ``_writable_value``); otherwise it is copied once first, so a
value fetched earlier, a live view or a read-only array (``ray.get``) never
changes under the caller.

Scalars (learning rate, Adam's bias-corrected step size, ``lr * weight_decay``)
arrive as 0-d arrays of the variable's dtype, computed in the graph; constant
hyper-parameters (betas, rho, epsilon) are plain attributes.
"""

from __future__ import annotations

import sys

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_op

__all__ = [
    "apply_gradient_descent", "apply_momentum", "apply_adam", "apply_rmsprop",
    "apply_adagrad",
]


class _Probe:
    __slots__ = ("value",)


def _probe_refcount():
    """Refcount of an array held only by a slot attribute, seen as in the kernels."""
    p = _Probe()
    p.value = np.empty(1)
    a = p.value
    return sys.getrefcount(a)


_SOLE = _probe_refcount()


def _writable_value(var):
    """``var.value``, first replaced by a private copy unless safe to overwrite."""
    a = var.value
    # Safe means: no reference besides the Variable's (a value handed out by
    # Session.run, or a view of it, adds one), owns its memory (not a view of
    # something else) and writeable (arrays from ray.get are read-only). cupy
    # arrays have no ``writeable`` flag and are always writeable.
    if (sys.getrefcount(a) > _SOLE or a.base is not None
            or not getattr(a.flags, "writeable", True)):
        a = a.copy()
        var.value = a
    return a


def _check_slot(var, slot):
    """Raises when a slot buffer cannot be updated in place."""
    if getattr(slot.flags, "writeable", True):
        return
    try:
        slot.setflags(write=True)
    except ValueError:
        raise ValueError(
            f"An optimizer slot of variable '{var.name}' holds a read-only array "
            f"(one deserialized without a copy, e.g. by ray.get). Assign it a "
            f"writeable copy first: slot.assign(slot.numpy())."
        ) from None


def _finish(var, w):
    # Keras applies constraints after the update step.
    if var.constraint is not None:
        var.value = var.constraint(w)
    return var.value


def _decay(xp, w, decay, tmp):
    # Decoupled weight decay as Keras 3 applies it: w <- w - w * (wd * lr).
    xp.multiply(w, decay, out=tmp)
    w -= tmp


def _update_infer(var, grad, *rest, **_):
    """Gradient and slots shaped like the variable, scalars of shape ()."""
    if var.dtype.kind != "f":
        raise TypeError(f"optimizers update float variables. Received: {I.fmt(var)}.")
    for spec in (grad, *rest):
        if spec.shape is None or spec.shape == ():
            continue
        if len(spec.shape) != len(var.shape) or any(
            d is not None and d != v for d, v in zip(spec.shape, var.shape)
        ):
            raise ValueError(
                f"expects a gradient and slots of the variable's shape "
                f"{var.shape}. Received: {I.fmt(spec)}."
            )
    return var.shape, var.dtype


def _split_decay(rest, decay):
    return (rest[0], rest[1:]) if decay else (None, rest)


def _update(op, var, grad, scalars, slots, decay, attrs):
    inputs = [var, grad, *scalars]
    if decay is not None:
        inputs.append(decay)
    return apply(op, *inputs, *slots, decay=decay is not None, **attrs)


# -- SGD ---------------------------------------------------------------------------
@register_op("ApplyGradientDescent", _update_infer, stateful=True,
             differentiable=False)
def _apply_gradient_descent(xp, var, grad, lr, *rest, decay=False):
    wd, _ = _split_decay(rest, decay)
    w = _writable_value(var)
    tmp = xp.empty_like(w)
    if decay:
        _decay(xp, w, wd, tmp)
    xp.multiply(grad, lr, out=tmp)
    w -= tmp
    return _finish(var, w)


def apply_gradient_descent(var, grad, lr, decay=None):
    """Graph node: ``var -= lr * grad`` in place.

    Args:
        var: the float ``Variable`` to update.
        grad: tensor of var's shape and dtype.
        lr: scalar tensor of var's dtype, the learning rate.
        decay: optional scalar tensor ``lr * weight_decay``; when given the
            variable is first shrunk by ``var -= var * decay``.

    Returns:
        A stateful tensor evaluating to the updated value.
    """
    return _update("ApplyGradientDescent", var, grad, [lr], [], decay, {})


@register_op("ApplyMomentum", _update_infer, stateful=True, differentiable=False)
def _apply_momentum(xp, var, grad, lr, *rest, momentum, nesterov, decay=False):
    wd, (m,) = _split_decay(rest, decay)
    _check_slot(var, m)
    w = _writable_value(var)
    tmp = xp.empty_like(w)
    if decay:
        _decay(xp, w, wd, tmp)
    xp.multiply(grad, lr, out=tmp)
    m *= momentum
    m -= tmp
    if nesterov:
        w -= tmp
        xp.multiply(m, momentum, out=tmp)
        w += tmp
    else:
        w += m
    return _finish(var, w)


def apply_momentum(var, grad, lr, m, momentum, nesterov=False, decay=None):
    """Graph node: SGD with (Nesterov) momentum, Keras 3's form, in place.

    ``m = momentum * m - lr * grad``; then ``var += m``, or with Nesterov
    ``var += momentum * m - lr * grad``.

    Args:
        var, grad, lr, decay: as in ``apply_gradient_descent``.
        m: the momentum slot ``Variable`` (read as its buffer and updated).
        momentum: float in [0, 1].
        nesterov: bool.
    """
    return _update("ApplyMomentum", var, grad, [lr], [m], decay,
                   {"momentum": float(momentum), "nesterov": bool(nesterov)})


# -- Adam / AdamW ------------------------------------------------------------------
@register_op("ApplyAdam", _update_infer, stateful=True, differentiable=False)
def _apply_adam(xp, var, grad, alpha, *rest, beta_1, beta_2, epsilon, amsgrad,
                decay=False):
    wd, slots = _split_decay(rest, decay)
    m, v = slots[0], slots[1]
    for s in slots:
        _check_slot(var, s)
    w = _writable_value(var)
    tmp = xp.empty_like(w)
    if decay:
        _decay(xp, w, wd, tmp)
    xp.subtract(grad, m, out=tmp)          # m += (1 - b1) * (g - m)
    tmp *= 1.0 - beta_1
    m += tmp
    xp.multiply(grad, grad, out=tmp)       # v += (1 - b2) * (g^2 - v)
    tmp -= v
    tmp *= 1.0 - beta_2
    v += tmp
    if amsgrad:
        v_hat = slots[2]
        xp.maximum(v_hat, v, out=v_hat)
        v = v_hat
    xp.sqrt(v, out=tmp)                    # w -= alpha * m / (sqrt(v) + eps)
    tmp += epsilon
    xp.divide(m, tmp, out=tmp)
    tmp *= alpha
    w -= tmp
    return _finish(var, w)


def apply_adam(var, grad, alpha, m, v, v_hat=None, *, beta_1, beta_2, epsilon,
               decay=None):
    """Graph node: one Adam step (Kingma & Ba, ICLR 2015, Alg. 1), in place.

    ``m += (1 - beta_1) * (grad - m)``, ``v += (1 - beta_2) * (grad**2 - v)``,
    with AMSGrad ``v_hat = max(v_hat, v)`` used for ``v``; then
    ``var -= alpha * m / (sqrt(v) + epsilon)``.

    Args:
        var, grad, decay: as in ``apply_gradient_descent``.
        alpha: scalar tensor, ``lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)``.
        m, v: first and second moment slot Variables; ``v_hat`` for AMSGrad.
        beta_1, beta_2, epsilon: floats.
    """
    slots = [m, v] if v_hat is None else [m, v, v_hat]
    return _update("ApplyAdam", var, grad, [alpha], slots, decay, {
        "beta_1": float(beta_1), "beta_2": float(beta_2),
        "epsilon": float(epsilon), "amsgrad": v_hat is not None,
    })


# -- RMSprop -----------------------------------------------------------------------
@register_op("ApplyRMSProp", _update_infer, stateful=True, differentiable=False)
def _apply_rmsprop(xp, var, grad, lr, *rest, rho, momentum, epsilon, centered,
                   decay=False):
    wd, slots = _split_decay(rest, decay)
    for s in slots:
        _check_slot(var, s)
    v = slots[0]
    w = _writable_value(var)
    tmp = xp.empty_like(w)
    if decay:
        _decay(xp, w, wd, tmp)
    v *= rho                                # v = rho * v + (1 - rho) * g^2
    xp.multiply(grad, grad, out=tmp)
    tmp *= 1.0 - rho
    v += tmp
    if centered:
        mg = slots[-1]                      # mg = rho * mg + (1 - rho) * g
        mg *= rho
        xp.multiply(grad, 1.0 - rho, out=tmp)
        mg += tmp
        xp.multiply(mg, mg, out=tmp)        # denominator v - mg^2 + eps
        xp.subtract(v, tmp, out=tmp)
        tmp += epsilon
    else:
        xp.add(v, epsilon, out=tmp)
    xp.sqrt(tmp, out=tmp)                   # increment lr * g / sqrt(denominator)
    xp.divide(grad, tmp, out=tmp)
    tmp *= lr
    if momentum > 0:
        mom = slots[1]
        mom *= momentum
        mom += tmp
        w -= mom
    else:
        w -= tmp
    return _finish(var, w)


def apply_rmsprop(var, grad, lr, v, mom=None, mg=None, *, rho, momentum, epsilon,
                  decay=None):
    """Graph node: one RMSprop step (Tieleman & Hinton 2012), Keras 3's form.

    ``v = rho * v + (1 - rho) * grad**2``; centered: ``mg = rho * mg +
    (1 - rho) * grad`` and ``denom = v - mg**2 + epsilon``, else ``denom = v +
    epsilon``; ``inc = lr * grad / sqrt(denom)``; with momentum ``mom = momentum
    * mom + inc; var -= mom``, else ``var -= inc``.

    Args:
        var, grad, lr, decay: as in ``apply_gradient_descent``.
        v: the mean-square slot; ``mom`` (needed when momentum > 0) and ``mg``
            (the mean-gradient slot; given means centered) are slot Variables.
        rho, momentum, epsilon: floats.
    """
    if (momentum > 0) != (mom is not None):
        raise ValueError(
            f"apply_rmsprop needs a momentum slot exactly when momentum > 0. "
            f"Received: momentum={momentum}, mom={mom!r}."
        )
    slots = [v] + ([mom] if mom is not None else []) + ([mg] if mg is not None
                                                           else [])
    return _update("ApplyRMSProp", var, grad, [lr], slots, decay, {
        "rho": float(rho), "momentum": float(momentum), "epsilon": float(epsilon),
        "centered": mg is not None,
    })


# -- Adagrad -----------------------------------------------------------------------
@register_op("ApplyAdagrad", _update_infer, stateful=True, differentiable=False)
def _apply_adagrad(xp, var, grad, lr, *rest, epsilon, decay=False):
    wd, (acc,) = _split_decay(rest, decay)
    _check_slot(var, acc)
    w = _writable_value(var)
    tmp = xp.empty_like(w)
    if decay:
        _decay(xp, w, wd, tmp)
    xp.multiply(grad, grad, out=tmp)        # acc += g^2
    acc += tmp
    xp.add(acc, epsilon, out=tmp)           # w -= lr * g / sqrt(acc + eps)
    xp.sqrt(tmp, out=tmp)
    xp.divide(grad, tmp, out=tmp)
    tmp *= lr
    w -= tmp
    return _finish(var, w)


def apply_adagrad(var, grad, lr, acc, *, epsilon, decay=None):
    """Graph node: one Adagrad step (Duchi et al., JMLR 2011), Keras 3's form.

    ``acc += grad**2; var -= lr * grad / sqrt(acc + epsilon)``.

    Args:
        var, grad, lr, decay: as in ``apply_gradient_descent``.
        acc: the accumulator slot Variable.
        epsilon: float.
    """
    return _update("ApplyAdagrad", var, grad, [lr], [acc], decay,
                   {"epsilon": float(epsilon)})
