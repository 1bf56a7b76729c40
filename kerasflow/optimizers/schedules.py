"""Learning-rate schedules: the learning rate as a function of the optimizer step.

A schedule is called with the step, a symbolic tensor (the optimizer's
``iterations``, inside a training graph) or a number/array (eagerly), and builds
the learning rate from backend ops, so the same code serves both: a scalar
tensor in the graph, a 0-d array eagerly. Names, arguments and formulas follow
``keras.optimizers.schedules`` (Keras 3).
"""

from __future__ import annotations

import contextlib
import inspect
import math

from kerasflow import backend as K
from kerasflow.utils.serialization import deserialize_object

__all__ = [
    "CosineDecay",
    "CosineDecayRestarts",
    "ExponentialDecay",
    "InverseTimeDecay",
    "LearningRateSchedule",
    "PiecewiseConstantDecay",
    "PolynomialDecay",
    "deserialize",
    "serialize",
]


def _float_step(step):
    """The step as a floatx scalar (tensor or array)."""
    dtype = K.floatx()
    if K.is_symbolic(step) and step.dtype == dtype:
        return step
    return K.cast(step, dtype)


def _scope(schedule, step):
    """A name scope for graph building; none eagerly (no nodes are made)."""
    return K.name_scope(schedule.name) if K.is_symbolic(step) else \
        contextlib.nullcontext()


def _check_positive(name, value):
    if not value > 0:
        raise ValueError(f"Argument `{name}` must be > 0. Received: {name}={value}.")


def _check_finite(name, value, minimum=None):
    """A finite real (>= ``minimum``): a NaN rate would poison every weight."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not (
            hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
        raise TypeError(f"Argument `{name}` must be a float. Received: "
                        f"{name}={value!r}.")
    if not math.isfinite(float(value)) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ValueError(f"Argument `{name}` must be a finite float{bound}. "
                         f"Received: {name}={value}.")


def _check_decay(initial_learning_rate, decay_steps):
    """Checks the two arguments every decaying schedule takes."""
    _check_positive("decay_steps", decay_steps)
    _check_finite("initial_learning_rate", initial_learning_rate, 0)
    _check_finite("decay_steps", decay_steps)


class LearningRateSchedule:
    """Base class: ``schedule(step)`` returns the learning rate at ``step``.

    Subclasses implement ``__call__(step)`` with backend ops, so it works on a
    symbolic step (building graph nodes) and on a number or array (computing at
    once), and ``get_config()`` returning the constructor's arguments.

    Example:
        >>> class Halving(LearningRateSchedule):
        ...     def __init__(self, lr):
        ...         self.lr = lr
        ...     def __call__(self, step):
        ...         return self.lr * K.power(0.5, K.cast(step, "float32"))
        ...     def get_config(self):
        ...         return {"lr": self.lr}
    """

    name = "LearningRateSchedule"

    def __call__(self, step):
        raise NotImplementedError(
            f"Learning rate schedule '{type(self).__name__}' must override "
            f"`__call__(self, step)`."
        )

    def get_config(self) -> dict:
        raise NotImplementedError(
            f"Learning rate schedule '{type(self).__name__}' must override "
            f"`get_config()` to be serializable."
        )

    @classmethod
    def from_config(cls, config: dict):
        """Rebuilds a schedule from ``get_config()``'s output."""
        return cls(**config)


class _BuiltinSchedule(LearningRateSchedule):
    """Keeps every ``__init__`` argument under its own name, so ``get_config``
    returns exactly what ``__init__`` takes."""

    @classmethod
    def _arg_names(cls) -> list:
        return [n for n in inspect.signature(cls.__init__).parameters if n != "self"]

    def _keep(self, args: dict) -> None:
        """Stores the ``__init__`` arguments in ``args``, the ``locals()`` taken
        first thing in ``__init__`` (a subclass stores its own extra ones)."""
        for name in self._arg_names():
            if name in args:
                setattr(self, name, args[name])

    def get_config(self):
        return {name: getattr(self, name) for name in self._arg_names()}


class ExponentialDecay(_BuiltinSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``.

    With ``staircase=True`` the exponent is ``floor(step / decay_steps)``, so the
    rate drops at discrete intervals.

    Args:
        initial_learning_rate: float, the rate at step 0.
        decay_steps: positive int, steps per factor of ``decay_rate``.
        decay_rate: float, e.g. 0.96.
        staircase: bool, integer division of the step.
        name: name scope of the graph nodes.

    Raises:
        ValueError: ``decay_steps <= 0``.

    Example:
        >>> s = ExponentialDecay(1.0, decay_steps=10, decay_rate=0.5)
        >>> float(s(20))
        0.25
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name="ExponentialDecay"):
        self._keep(locals())
        _check_decay(initial_learning_rate, decay_steps)
        _check_finite("decay_rate", decay_rate, 0)

    def __call__(self, step):
        with _scope(self, step):
            return K.multiply(float(self.initial_learning_rate),
                              K.power(float(self.decay_rate), self._ratio(step)))

    def _ratio(self, step):
        """step / decay_steps, floored with ``staircase``."""
        p = K.divide(_float_step(step), float(self.decay_steps))
        return K.floor(p) if self.staircase else p



class PiecewiseConstantDecay(_BuiltinSchedule):
    """A constant rate per interval of steps.

    The rate is ``values[0]`` for ``step <= boundaries[0]``, ``values[i]`` for
    ``boundaries[i-1] < step <= boundaries[i]`` and ``values[-1]`` for
    ``step > boundaries[-1]``.

    Args:
        boundaries: increasing list of step numbers.
        values: list of floats, one longer than ``boundaries``.
        name: name scope of the graph nodes.

    Raises:
        ValueError: ``len(values) != len(boundaries) + 1``.

    Example:
        >>> s = PiecewiseConstantDecay([100, 200], [1.0, 0.5, 0.25])
        >>> [float(s(k)) for k in (100, 101, 201)]
        [1.0, 0.5, 0.25]
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if not boundaries or len(boundaries) != len(values) - 1:
            raise ValueError(
                f"boundaries must be non-empty and 1 shorter than values. "
                f"Received: boundaries={boundaries} of length {len(boundaries)}, "
                f"and values={values} of length {len(values)}."
            )
        for i, v in enumerate(values):
            _check_finite(f"values[{i}]", v, 0)
        for i, b in enumerate(boundaries):
            _check_finite(f"boundaries[{i}]", b)
        if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
            raise ValueError(f"boundaries must be strictly increasing. Received: "
                             f"boundaries={list(boundaries)}.")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step):
        with _scope(self, step):
            step = _float_step(step)
            rate = K.where(K.greater(step, float(self.boundaries[-1])),
                           float(self.values[-1]), float(self.values[-2]))
            # Walk down from the last interval: each earlier boundary overrides.
            for b, v in zip(reversed(self.boundaries[:-1]),
                            reversed(self.values[:-2])):
                rate = K.where(K.less_equal(step, float(b)), float(v), rate)
            return rate


class CosineDecay(_BuiltinSchedule):
    """Cosine decay (Loshchilov & Hutter, SGDR, ICLR 2017), optional linear warmup.

    Without warmup: with ``s = min(step, decay_steps)``,
    ``lr = initial_learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * s /
    decay_steps)) + alpha)``. With ``warmup_target``, the rate first rises
    linearly from ``initial_learning_rate`` to ``warmup_target`` over
    ``warmup_steps`` steps (Goyal et al. 2017), then decays from
    ``warmup_target`` as above, over the next ``decay_steps`` steps.

    Args:
        initial_learning_rate: float.
        decay_steps: positive int, steps to decay over.
        alpha: float, the final rate as a fraction of the starting one.
        name: name scope of the graph nodes.
        warmup_target: float or None (no warmup).
        warmup_steps: int, steps of warmup.

    Raises:
        ValueError: ``decay_steps <= 0``.

    Example:
        >>> s = CosineDecay(1.0, decay_steps=100)
        >>> float(s(100))
        0.0
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0,
                 name="CosineDecay", warmup_target=None, warmup_steps=0):
        self._keep(locals())
        _check_decay(initial_learning_rate, decay_steps)
        _check_finite("alpha", alpha)
        if warmup_target is not None:
            _check_finite("warmup_target", warmup_target, 0)
        _check_finite("warmup_steps", warmup_steps, 0)

    def _decay(self, step, start_lr):
        fraction = K.divide(step, float(self.decay_steps))
        cosine = K.multiply(0.5, K.add(1.0, K.cos(K.multiply(math.pi, fraction))))
        decayed = K.add(K.multiply(1.0 - self.alpha, cosine), float(self.alpha))
        return K.multiply(float(start_lr), decayed)

    def __call__(self, step):
        with _scope(self, step):
            step = _float_step(step)
            if self.warmup_target is None:
                return self._decay(K.minimum(step, float(self.decay_steps)),
                                   self.initial_learning_rate)
            warmup = float(self.warmup_steps)
            step = K.minimum(step, float(self.decay_steps) + warmup)
            delta = float(self.warmup_target) - float(self.initial_learning_rate)
            rising = K.add(K.multiply(delta, K.divide(step, max(warmup, 1.0))),
                           float(self.initial_learning_rate))
            decaying = self._decay(K.maximum(K.subtract(step, warmup), 0.0),
                                   self.warmup_target)
            return K.where(K.less(step, warmup), rising, decaying)




class CosineDecayRestarts(_BuiltinSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter, ICLR 2017):
    period i lasts ``first_decay_steps * t_mul**i`` steps and starts at
    ``initial_learning_rate * m_mul**i``; within it the rate follows
    ``CosineDecay``'s curve down to ``alpha`` times its start.

    Args:
        initial_learning_rate: float. first_decay_steps: positive int.
        t_mul: float, each period's length relative to the previous one.
        m_mul: float, each period's starting rate relative to the previous one.
        alpha: float, the floor as a fraction of the starting rate.
        name: name scope of the graph nodes.

    Raises:
        ValueError: ``first_decay_steps <= 0``.

    Example:
        >>> s = CosineDecayRestarts(1.0, first_decay_steps=10)
        >>> float(s(10)), float(s(20))
        (1.0, 0.5)
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0,
                 m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        self._keep(locals())
        if not first_decay_steps > 0:
            raise ValueError(f"Argument `first_decay_steps` must be > 0. Received: "
                             f"first_decay_steps={first_decay_steps}")
        _check_decay(initial_learning_rate, first_decay_steps)
        for arg, value in (("t_mul", t_mul), ("m_mul", m_mul), ("alpha", alpha)):
            _check_finite(arg, value)

    def __call__(self, step):
        with _scope(self, step):
            fraction = K.divide(_float_step(step), float(self.first_decay_steps))
            t_mul = float(self.t_mul)
            if t_mul == 1.0:
                i_restart = K.floor(fraction)
                fraction = K.subtract(fraction, i_restart)
            else:  # periods grow geometrically: invert their partial sums
                i_restart = K.floor(K.divide(
                    K.log(K.subtract(1.0, K.multiply(fraction, 1.0 - t_mul))),
                    math.log(t_mul)))
                t_pow = K.power(t_mul, i_restart)
                done = K.divide(K.subtract(1.0, t_pow), 1.0 - t_mul)
                fraction = K.divide(K.subtract(fraction, done), t_pow)
            m_fac = K.power(float(self.m_mul), i_restart)
            cosine = K.multiply(K.multiply(0.5, m_fac), K.add(
                1.0, K.cos(K.multiply(math.pi, fraction))))
            decayed = K.add(K.multiply(1.0 - self.alpha, cosine), float(self.alpha))
            return K.multiply(float(self.initial_learning_rate), decayed)

class PolynomialDecay(_BuiltinSchedule):
    """Polynomial decay from ``initial_learning_rate`` to ``end_learning_rate``.

    ``(initial - end) * (1 - s / decay_steps) ** power + end`` with
    ``s = min(step, decay_steps)``; with ``cycle=True`` the horizon grows to
    the next multiple of ``decay_steps`` instead (Keras' ``PolynomialDecay``).

    Args:
        initial_learning_rate: float, the rate at step 0.
        decay_steps: positive int, steps to reach ``end_learning_rate``.
        end_learning_rate: float, the final rate (default 1e-4).
        power: float, the polynomial's power (1.0: linear).
        cycle: bool, restart the decay every ``decay_steps``.
        name: name scope of the graph nodes.

    Raises:
        ValueError: ``decay_steps <= 0``.

    Example:
        >>> s = PolynomialDecay(1.0, decay_steps=10, end_learning_rate=0.0)
        >>> float(s(5))
        0.5
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=1e-4,
                 power=1.0, cycle=False, name="PolynomialDecay"):
        self._keep(locals())
        _check_decay(initial_learning_rate, decay_steps)

    def __call__(self, step):
        with _scope(self, step):
            s = _float_step(step)
            steps = float(self.decay_steps)
            if self.cycle:
                # ceil(s / steps), at least 1: the horizon of the current cycle.
                n = K.maximum(-K.floor(K.divide(K.negative(s), steps)), 1.0)
                horizon = K.multiply(n, steps)
            else:
                s = K.minimum(s, steps)
                horizon = steps
            frac = K.subtract(1.0, K.divide(s, horizon))
            span = float(self.initial_learning_rate) - float(self.end_learning_rate)
            return K.add(K.multiply(span, K.power(frac, float(self.power))),
                         float(self.end_learning_rate))



class InverseTimeDecay(ExponentialDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``.

    With ``staircase=True`` the ratio ``step / decay_steps`` is floored.
    Arguments and errors as ``ExponentialDecay``.

    Example:
        >>> s = InverseTimeDecay(1.0, decay_steps=1, decay_rate=0.5)
        >>> float(s(2))
        0.5
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name="InverseTimeDecay"):
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase,
                         name)

    def __call__(self, step):
        with _scope(self, step):
            denom = K.add(1.0, K.multiply(float(self.decay_rate), self._ratio(step)))
            return K.divide(float(self.initial_learning_rate), denom)


_SCHEDULES = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay,
                                       PolynomialDecay,
                                      CosineDecay, CosineDecayRestarts,
                                      InverseTimeDecay)}


def serialize(schedule: LearningRateSchedule) -> dict:
    """A JSON-compatible ``{"class_name": ..., "config": ...}`` dict (Keras' form).

    Raises:
        TypeError: ``schedule`` is not a ``LearningRateSchedule``.
    """
    if not isinstance(schedule, LearningRateSchedule):
        raise TypeError(
            f"serialize expects a LearningRateSchedule. Received: {schedule!r}."
        )
    return {"module": "kerasflow.optimizers.schedules",
            "class_name": type(schedule).__name__,
            "config": schedule.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None):
    """Rebuilds a schedule from ``serialize()``'s output.

    Args:
        config: ``{"class_name": ..., "config": ...}``.
        custom_objects: extra ``{class_name: class}`` for user schedules.

    Raises:
        ValueError: an unknown ``class_name`` or a malformed dict.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(
            f"deserialize expects a dict with 'class_name' and 'config'. "
            f"Received: {config!r}."
        )
    return deserialize_object(config, _SCHEDULES, "learning rate schedule",
                              custom_objects)
