"""Fused update ops: one stateful graph node per optimizer per variable.

Each kernel receives the ``Variable`` being trained as its first argument (the
registry's convention for stateful ops) and the optimizer's slot arrays as plain
inputs: a slot input *is* its Variable's current buffer, so the kernel updates
slots in place with ``out=`` ufuncs. Per step and variable this costs one Python
call and numpy's passes over the data; nothing is allocated except one temporary
for weight decay or Nesterov momentum.

The variable itself is double-buffered: the new value is written into a spare
buffer (the value before the previous step, reused once nothing else references
it) and then swapped in. The current value is never written, so a value fetched
in the same run stays the pre-update one (as ``Function`` promises), and arrays
handed out earlier, live views and read-only arrays (``ray.get``) never change.

Scalars (learning rate, Adam's bias-corrected step size, ``lr * weight_decay``)
arrive as 0-d arrays of the variable's dtype, computed in the graph; constant
hyper-parameters (betas, rho, epsilon) are plain attributes.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_op
from kerasflow.optimizers import device_kernels

__all__ = [
    "adam_step_size",
    "apply_adagrad",
    "apply_adam",
    "apply_gradient_descent",
    "apply_momentum",
    "apply_rmsprop",
    "set_update_target",
]

# id(Variable) -> its value before the last update, the next update's output
# buffer. Keyed by id, not by a weak key: a Variable's ``==`` and hash are
# Python methods (``==`` builds a graph op), which a WeakKeyDictionary calls
# on every lookup. A weak reference per Variable drops its entry (and frees
# the spare) when the Variable goes, before its id can be reused.
_SPARES: dict = {}
_WATCHED: dict = {}  # id(Variable) -> the weak reference that cleans up


def _forget(key):
    """The weak reference's callback: drops the entry of the Variable ``key``."""
    def drop(_ref):
        _SPARES.pop(key, None)
        _WATCHED.pop(key, None)
    return drop


def _keep_spare(var, buf):
    """Keeps ``buf`` as the next output buffer of ``var``."""
    key = id(var)
    if key not in _WATCHED:
        _WATCHED[key] = weakref.ref(var, _forget(key))
    _SPARES[key] = buf


def _probe_refcount():
    """References to an array held by nothing but one local, as counted below."""
    buf = bytearray(1)
    return sys.getrefcount(buf)


_SOLE = _probe_refcount()


def _output_buffer(xp, var):
    """A writeable array shaped like ``var`` that no one else can see."""
    buf = _SPARES.pop(id(var), None)
    # Another reference (a value fetched by a caller, a view, the plan's read
    # of this variable when it is updated twice in one run) rules reuse out.
    if buf is None or sys.getrefcount(buf) > _SOLE:
        return xp.empty_like(var.value)
    return buf


def _publish(var, new):
    """Swaps ``new`` in as the value; the old value becomes the spare."""
    old = var.value
    # Keras applies constraints after the update step.
    var.value = new if var.constraint is None else var.constraint(new)
    # Only a writeable array owning its memory can be reused: views of a view
    # would not show up in its reference count.
    if (old.base is None and getattr(old.flags, "writeable", True)
            and old.shape == new.shape and old.dtype == new.dtype):
        _keep_spare(var, old)
    return var.value


def set_update_target(var, buf) -> None:
    """Has the next out-of-place update of ``var`` write its new value into
    ``buf``, which then becomes the value (a data-parallel replica's range
    of a shared parameter array: the update lands where the other replicas
    read it, with no copy).

    Args:
        var: the Variable.
        buf: writable array of the value's shape and dtype, not the current
            value nor a view of it, and referenced by nothing but this call
            (as for the spare buffers, its reference count decides whether
            the kernel may write into it; otherwise the update allocates and
            the caller copies).
    """
    _keep_spare(var, buf)


def _check_slot(var, slot):
    """Raises when a slot buffer cannot be updated in place."""
    if getattr(slot.flags, "writeable", True):  # cupy has no such flag
        return
    try:
        slot.setflags(write=True)
    except ValueError:
        raise ValueError(
            f"An optimizer slot of variable '{var.name}' holds a read-only array "
            f"(one deserialized without a copy, e.g. by ray.get). Assign it a "
            f"writeable copy first: slot.assign(slot.numpy())."
        ) from None


def _decayed(xp, var, decay, out):
    """``var - var * decay`` (Keras 3's decoupled weight decay) written to out."""
    w = var.value
    xp.multiply(w, decay, out=out)
    xp.subtract(w, out, out=out)
    return out


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


def _finish(xp, var, wd, new, step=None, add=False):
    """Publishes ``w - step`` (``w + step`` if add) computed into ``new``.

    ``step`` defaults to ``new`` itself; ``w`` is weight-decayed if wd is given.
    """
    w = var.value
    if wd is not None:
        # The decayed value needs its own buffer: ``new`` may hold the step.
        w = _decayed(xp, var, wd, xp.empty_like(new))
    (xp.add if add else xp.subtract)(w, new if step is None else step, out=new)
    return _publish(var, new)


# -- SGD ---------------------------------------------------------------------------
@register_op("ApplyGradientDescent", _update_infer, stateful=True,
             differentiable=False)
def _apply_gradient_descent(xp, var, grad, lr, *rest, decay=False):
    wd, _ = _split_decay(rest, decay)
    new = _output_buffer(xp, var)
    xp.multiply(grad, lr, out=new)
    return _finish(xp, var, wd, new)

def apply_gradient_descent(var, grad, lr, decay=None):
    """Graph node: ``var -= lr * grad``.

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
    new = _output_buffer(xp, var)
    xp.multiply(grad, lr, out=new)          # m = momentum * m - lr * g
    m *= momentum
    m -= new
    if nesterov:                            # w + (momentum * m - lr * g)
        xp.subtract(xp.multiply(m, momentum), new, out=new)
        return _finish(xp, var, wd, new, add=True)
    return _finish(xp, var, wd, new, m, add=True)   # w + m

def apply_momentum(var, grad, lr, m, momentum, nesterov=False, decay=None):
    """Graph node: SGD with (Nesterov) momentum, Keras 3's form.

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
    new = _output_buffer(xp, var)          # scratch until it holds the step
    if xp is not np and wd is None and not amsgrad and device_kernels.adam_update(
            grad, var.value, alpha, m, v, new, beta_1, beta_2, epsilon):
        return _publish(var, new)          # one launch on the GPU
    xp.subtract(grad, m, out=new)          # m += (1 - b1) * (g - m)
    new *= 1.0 - beta_1
    m += new
    xp.multiply(grad, grad, out=new)       # v += (1 - b2) * (g^2 - v)
    new -= v
    new *= 1.0 - beta_2
    v += new
    if amsgrad:
        v_hat = slots[2]
        xp.maximum(v_hat, v, out=v_hat)
        v = v_hat
    xp.sqrt(v, out=new)                    # w - alpha * m / (sqrt(v) + eps)
    new += epsilon
    xp.divide(m, new, out=new)
    new *= alpha
    return _finish(xp, var, wd, new)

def apply_adam(var, grad, alpha, m, v, v_hat=None, *, beta_1, beta_2, epsilon,
               decay=None):
    """Graph node: one Adam step (Kingma & Ba, ICLR 2015, Alg. 1).

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


def _step_size_infer(lr, iterations, **_):
    if lr.dtype.kind != "f" or iterations.dtype.kind not in "iu":
        raise TypeError(f"adam_step_size takes a float learning rate and an integer "
                        f"step count. Received: {I.fmt(lr)}, {I.fmt(iterations)}.")
    return (), lr.dtype


@register_op("AdamStepSize", _step_size_infer, differentiable=False)
def _adam_step_size(xp, lr, iterations, beta_1, beta_2):
    # The same operations, in the same dtype and order, as the graph
    # lr * sqrt(1 - beta_2**t) / (1 - beta_1**t) built op by op: bitwise equal.
    dt = lr.dtype.type
    t = (iterations + 1).astype(lr.dtype)
    one = dt(1.0)
    c = xp.sqrt(one - xp.power(dt(beta_2), t)) / (one - xp.power(dt(beta_1), t))
    return xp.multiply(lr, c)

def adam_step_size(lr, iterations, *, beta_1, beta_2):
    """Graph node: Adam's bias-corrected step size (Kingma & Ba, ICLR 2015, §2).

    ``alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)`` with ``t =
    iterations + 1`` (the step about to run) in lr's dtype: one node for
    what is otherwise nine scalar ops per step.

    Args:
        lr: float scalar tensor, the learning rate; its dtype is the result's.
        iterations: integer scalar tensor, steps applied so far.
        beta_1, beta_2: floats in [0, 1).

    Returns:
        A scalar tensor of lr's dtype.

    Raises:
        TypeError: a non-float lr or a non-integer iterations.
    """
    return apply("AdamStepSize", lr, iterations, beta_1=float(beta_1),
                 beta_2=float(beta_2))


# -- RMSprop -----------------------------------------------------------------------
@register_op("ApplyRMSProp", _update_infer, stateful=True, differentiable=False)
def _apply_rmsprop(xp, var, grad, lr, *rest, rho, momentum, epsilon, centered,
                   decay=False):
    wd, slots = _split_decay(rest, decay)
    for s in slots:
        _check_slot(var, s)
    v = slots[0]
    new = _output_buffer(xp, var)          # scratch until it holds the step
    v *= rho                               # v = rho * v + (1 - rho) * g^2
    xp.multiply(grad, grad, out=new)
    new *= 1.0 - rho
    v += new
    if centered:
        mg = slots[-1]                     # mg = rho * mg + (1 - rho) * g
        mg *= rho
        xp.multiply(grad, 1.0 - rho, out=new)
        mg += new
        xp.multiply(mg, mg, out=new)       # denominator v - mg^2 + eps
        xp.subtract(v, new, out=new)
        new += epsilon
    else:
        xp.add(v, epsilon, out=new)
    xp.sqrt(new, out=new)                  # increment lr * g / sqrt(denominator)
    xp.divide(grad, new, out=new)
    new *= lr
    if momentum > 0:
        mom = slots[1]                     # mom = momentum * mom + increment
        mom *= momentum
        mom += new
        return _finish(xp, var, wd, new, mom)
    return _finish(xp, var, wd, new)

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
    new = _output_buffer(xp, var)          # scratch until it holds the step
    xp.multiply(grad, grad, out=new)       # acc += g^2
    acc += new
    xp.add(acc, epsilon, out=new)          # w - lr * g / sqrt(acc + eps)
    xp.sqrt(new, out=new)
    xp.divide(grad, new, out=new)
    new *= lr
    return _finish(xp, var, wd, new)

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
