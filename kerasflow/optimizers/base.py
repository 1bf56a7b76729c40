"""The optimizer contract: learning rate, slots, clipping and graph updates.

An optimizer turns gradients into stateful graph nodes, TF1 style: nothing
changes until those nodes run, in a ``Function`` (as its ``updates``) or a
``Session`` (the op ``minimize`` returns). Per variable and step the update is
one fused kernel (``kernels.py``); the learning rate and step-dependent scalars
are computed once per step in the graph from ``iterations``, so changing the
learning rate or advancing a schedule never rebuilds a compiled function.
"""

from __future__ import annotations

import numbers
import re

import numpy as np

from kerasflow import backend as K
from kerasflow.optimizers import clipping
from kerasflow.optimizers.apply_log import log_apply
from kerasflow.optimizers.checks import (
    check_learning_rate, check_positive, checked_pairs,
)
from kerasflow.optimizers.eager import EagerApply
from kerasflow.optimizers.ema import MovingAverageMixin, check_ema_args, ema_updates
from kerasflow.optimizers.sparse import sparse_update
from kerasflow.optimizers.schedules import LearningRateSchedule
from kerasflow.optimizers.schedules import deserialize as _deserialize_schedule
from kerasflow.optimizers.schedules import serialize as _serialize_schedule
from kerasflow.optimizers.tf1_api import TF1OptimizerMixin
from kerasflow.optimizers.train_op import (  # noqa: F401  (re-exported)
    LearningRateValue, TrainOp, train_op_info, trainable_variables_of,
)

__all__ = ["Optimizer", "TrainOp", "train_op_info", "trainable_variables_of"]


class Optimizer(TF1OptimizerMixin, MovingAverageMixin):
    """Base class of optimizers: the Keras 3 interface on TF1-style graph updates.

    Subclasses define ``_create_slots(var)`` (calling ``add_slot``), optionally
    ``_coefficients(dtype, lr)`` (step-dependent scalars, built once per step
    and dtype) and ``_apply_dense(grad, var, coefficients, decay)`` returning
    one stateful tensor.

    Args:
        learning_rate: float, or a ``schedules.LearningRateSchedule`` evaluated
            at ``iterations`` every step.
        weight_decay: float or None; if set, each step first shrinks every
            variable by ``var -= var * weight_decay * lr`` (decoupled, as Keras 3
            does; see ``exclude_from_weight_decay``).
        clipnorm: float or None; each gradient is rescaled to L2 norm at most
            ``clipnorm``.
        clipvalue: float or None; each gradient element is clipped to
            ``[-clipvalue, clipvalue]``.
        global_clipnorm: float or None; all gradients are rescaled together so
            their joint L2 norm is at most ``global_clipnorm``.
        name: prefix of the optimizer's variable names.
        use_ema: keep an exponential moving average of the trained weights
            (Keras 3): at the first step it is the updated value, then
            ``average = ema_momentum * average + (1 - ema_momentum) * value``.
        ema_momentum: float in [0, 1], used with ``use_ema``.
        ema_overwrite_frequency: int >= 1 or None; with ``use_ema``, every that
            many steps the weights are overwritten by their averages.
            ``finalize_variable_values`` (called at the end of ``fit``) does it
            once at the end.

    Attributes:
        iterations: int64 scalar ``Variable``, steps applied so far.

    Raises:
        ValueError: more than one of clipnorm, clipvalue, global_clipnorm, or a
            non-positive one; an ema_momentum outside [0, 1] or a bad
            ema_overwrite_frequency.
        TypeError: a learning rate that is neither a number nor a schedule.
        ValueError: a NaN, infinite or negative learning rate (here, when set,
            or, from a schedule, at the step that produces it).

    Example:
        >>> x = K.placeholder("float32", (None, 3))
        >>> y = K.placeholder("float32", (None, 1))
        >>> w = K.Variable(np.zeros((3, 1), "float32"))
        >>> loss = K.mean(K.square(K.matmul(x, w) - y))
        >>> train = K.Function([x, y], [loss], SGD(0.1).get_updates(loss, [w]))
    """

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None):
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                f"Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                f"set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                f"global_clipnorm={global_clipnorm}."
            )
        self.name = name or type(self).__name__.lower()
        self.weight_decay = check_positive("weight_decay", weight_decay, True)
        self.clipnorm = check_positive("clipnorm", clipnorm)
        self.clipvalue = check_positive("clipvalue", clipvalue)
        self.global_clipnorm = check_positive("global_clipnorm", global_clipnorm)
        self.use_ema, self.ema_momentum, self.ema_overwrite_frequency = \
            check_ema_args(self.name, use_ema, ema_momentum,
                           ema_overwrite_frequency)
        self._eager_apply = EagerApply()
        with K.name_scope(self.name):
            self.iterations = K.Variable(0, trainable=False, name="iteration",
                                         dtype="int64")
            self._learning_rate = self._build_learning_rate(learning_rate)
        self._slots: dict = {}  # var -> {slot name: Variable}, creation order
        self._exclude_ids: set = set()
        self._exclude_pattern = None
        self._graph_built = False

    def _build_learning_rate(self, learning_rate):
        if isinstance(learning_rate, LearningRateSchedule):
            return learning_rate
        if isinstance(learning_rate, numbers.Real) and not isinstance(
                learning_rate, bool):
            check_learning_rate(self.name, learning_rate)
            return K.Variable(float(learning_rate), trainable=False,
                              name="learning_rate", dtype=K.floatx())
        raise TypeError(
            f"Argument `learning_rate` should be a float or a "
            f"LearningRateSchedule. Received: learning_rate={learning_rate!r}."
        )

    # -- learning rate ----------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The learning rate of the next step (a schedule is evaluated eagerly).

        Setting a float takes effect at the next step of already built graphs.

        Raises:
            TypeError: setting a float on an optimizer built with a schedule, or
                a schedule once update graphs have been built.
        """
        if isinstance(self._learning_rate, LearningRateSchedule):
            return float(K.to_numpy(self._learning_rate(self.iterations.value)))
        return LearningRateValue(float(self._learning_rate.numpy()),
                                 self._learning_rate)

    lr = learning_rate  # Keras 2's name

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, LearningRateSchedule):
            if self._graph_built:
                raise TypeError(
                    f"Optimizer '{self.name}' has built update graphs with its "
                    f"current learning rate; a schedule set now would not reach "
                    f"them. Create a new optimizer with learning_rate={value!r}."
                )
            self._learning_rate = value
            return
        if isinstance(self._learning_rate, LearningRateSchedule):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object "
                "as its `learning_rate` constructor argument, hence its learning "
                "rate is not settable. If you need the learning rate to be "
                "settable, you should instantiate the optimizer with a float "
                f"`learning_rate` argument. Received: learning_rate={value!r}."
            )
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"learning_rate must be a float. Received: {value!r}.")
        check_learning_rate(self.name, value)
        self._learning_rate.assign(float(value))

    def _lr_tensor(self):
        """The learning rate of the current step as a scalar graph tensor."""
        if isinstance(self._learning_rate, LearningRateSchedule):
            # Checked each step: a NaN or negative rate must stop training, not
            # silently corrupt every weight.
            return K.check_numerics(
                self._learning_rate(self.iterations),
                f"Optimizer '{self.name}': learning-rate schedule "
                f"{type(self._learning_rate).__name__} expects to produce a "
                f"finite rate >= 0.", minimum=0.0)
        return self._learning_rate

    # -- slots ------------------------------------------------------------------
    def add_slot(self, var, name: str, initial_value: float = 0.0):
        """Creates (once) the slot ``name`` of ``var``: a Variable of its shape.

        Args:
            var: the trained Variable.
            name: slot name ("momentum", "velocity", ...).
            initial_value: float every element starts at.

        Returns:
            The slot ``Variable`` (not trainable), of var's shape and dtype.
        """
        slots = self._slots.setdefault(var, {})
        if name not in slots:
            base = var.name.replace("/", "_").replace(":", "_")
            value = np.full(var.shape, initial_value, dtype=var.dtype)
            with K.name_scope(self.name):
                slots[name] = K.Variable(value, trainable=False, dtype=var.dtype,
                                         name=f"{base}_{name}")
        return slots[name]

    def get_slot(self, var, name: str):
        """The slot ``name`` of ``var`` (TF1's ``Optimizer.get_slot``).

        Raises:
            KeyError: no such slot, naming the ones that exist.
        """
        slots = self._slots.get(var, {})
        if name not in slots:
            raise KeyError(f"Optimizer '{self.name}' has no slot '{name}' for "
                           f"variable '{var.name}'. Slots: {sorted(slots)}.")
        return slots[name]

    def build(self, var_list):
        """Creates the slots of every variable in ``var_list`` not seen before."""
        for var in var_list:
            if var not in self._slots:
                self._slots[var] = {}
                self._create_slots(var)
                if self.use_ema:
                    self.add_slot(var, "average")

    def _create_slots(self, var):
        """Adds the slots ``var`` needs (none by default)."""

    @property
    def variables(self) -> list:
        """``iterations`` then every slot, in creation order (the saved state)."""
        return [self.iterations] + [s for slots in self._slots.values()
                                    for s in slots.values()]

    def get_weights(self) -> list:
        """The values of ``variables`` as numpy arrays (copies)."""
        return [v.numpy() for v in self.variables]

    def set_weights(self, weights):
        """Sets ``variables`` from ``get_weights()``-ordered arrays.

        Raises:
            ValueError: a count or shape mismatch (build the optimizer on the
                same variables first: ``optimizer.build(var_list)``).
        """
        K.assign_all(self.variables, weights,
                     f"Optimizer '{self.name}' (iterations and slots; call "
                     f"build(var_list) on the same variables first)")

    # -- weight decay ---------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exempts variables (or those whose name contains any of ``var_names``).

        Raises:
            ValueError: called after update graphs were built.
        """
        if self._graph_built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured "
                             "before the optimizer builds update graphs.")
        self._exclude_ids = {id(v) for v in var_list or ()}
        self._exclude_pattern = (re.compile("|".join(map(re.escape, var_names)))
                                 if var_names else None)

    def _use_weight_decay(self, var) -> bool:
        if not self.weight_decay or id(var) in self._exclude_ids:
            return False
        return not (self._exclude_pattern is not None
                    and self._exclude_pattern.search(var.name))

    # -- building updates ---------------------------------------------------------
    @staticmethod
    def _cast(x, dtype):
        return x if x.dtype == dtype else K.cast(x, dtype)

    def _coefficients(self, dtype, lr) -> dict:
        """Per-step scalars in ``dtype``; subclasses add theirs to {'lr': ...}."""
        return {"lr": self._cast(lr, dtype)}

    def _apply_dense(self, grad, var, coefficients, decay):
        raise NotImplementedError(
            f"Optimizer '{type(self).__name__}' must implement _apply_dense."
        )

    def _clip_gradients(self, grads):
        if self.clipnorm:
            return [clipping.clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return clipping.clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue:
            return [clipping.clip_by_value(g, self.clipvalue) for g in grads]
        return grads

    def apply_gradients(self, grads_and_vars):
        """Applies gradients: graph updates for symbolic ones, at once for arrays.

        Symbolic gradients (``gradients(loss, vars)``, a ``GradientTape`` in a
        traced ``train_step``) give update nodes; inside a trace they also join
        the step being traced, so a ``train_step`` that ignores the return value
        (Keras style) still updates. Arrays (a loop written from scratch, Keras
        3's eager use) update the variables now, through an update graph
        compiled once per signature.

        Args:
            grads_and_vars: iterable of ``(gradient, Variable)``; gradients are
                symbolic tensors or arrays of the variable's shape, or None
                (skipped with a warning: the variable is not connected to the
                loss).

        Returns:
            Symbolic gradients: list of stateful tensors, one update per
            variable (then EMA updates with ``use_ema``), then the iteration
            increment; run them as a ``Function``'s ``updates`` or fetch
            ``group(*updates)`` in a ``Session``. Arrays: ``iterations``
            (Keras 3's return value), already advanced.

        Raises:
            ValueError: every gradient is None, a variable appears twice, or an
                array gradient of another shape than its variable.
            TypeError: a non-Variable, or symbolic and array gradients mixed.
        """
        pairs = checked_pairs(self.name, grads_and_vars)
        given = [g for g, _ in pairs if g is not None]
        symbolic = [K.is_symbolic(g) for g in given]
        if all(symbolic):
            updates = self.build_updates(pairs)
            if K.in_tracing():  # a traced train_step: the step runs them
                for u in updates:
                    K.record_stateful(u)
                log_apply(self, pairs, updates)
            return updates
        if any(symbolic):
            raise TypeError(
                f"apply_gradients takes all-symbolic or all-array gradients. "
                f"Received: {[type(g).__name__ for g in given]}.")
        self._eager_apply(self, [(g, v) for g, v in pairs if g is not None])
        return self.iterations

    def apply(self, grads, trainable_variables=None):
        """Keras 3's ``apply``: ``apply_gradients(zip(grads, variables))``.

        Args:
            grads: list of gradients (arrays or symbolic tensors, or None).
            trainable_variables: the Variables, in the order of ``grads``;
                default: those the optimizer was built with.

        Returns:
            What ``apply_gradients`` returns.

        Raises:
            ValueError: no variables given and the optimizer is not built, or
                a count mismatch.
        """
        grads = list(grads)
        if trainable_variables is None:
            trainable_variables = list(self._slots)
            if not trainable_variables:
                raise ValueError(
                    "When passing `grads` without `variables`, the optimizer "
                    "must already be built on a list of variables. Call "
                    "`optimizer.build(trainable_variables)` first. Received: "
                    "trainable_variables=None.")
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(
                f"Expected one gradient per variable: {len(trainable_variables)}"
                f" variables. Received: {len(grads)} gradients.")
        return self.apply_gradients(zip(grads, trainable_variables))

    def build_updates(self, grads_and_vars) -> list:
        """Update nodes of one step for symbolic ``(gradient, Variable)`` pairs
        (None gradients skipped): clipping, weight decay, the update, EMA and
        ``iterations += 1``. ``apply_gradients`` without the checks."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        var_list = [v for _, v in pairs]
        grads = [self._cast(g, v.dtype) for g, v in pairs]
        self.build(var_list)
        self._graph_built = True
        with K.name_scope(self.name):
            grads = self._clip_gradients(grads)
            lr = self._lr_tensor()
            coefficients: dict = {}
            updates = []
            for g, v in zip(grads, var_list):
                if v.dtype not in coefficients:
                    c = self._coefficients(v.dtype, lr)
                    if self.weight_decay:
                        c["decay"] = K.multiply(c["lr"], self.weight_decay)
                    coefficients[v.dtype] = c
                c = coefficients[v.dtype]
                decay = c.get("decay") if self._use_weight_decay(v) else None
                # An embedding's sparse gradient updates only its rows (lazy).
                updates.append(sparse_update(self._apply_dense(g, v, c, decay), g))
            if self.use_ema:
                updates += ema_updates(self, var_list, updates)
            updates.append(K.assign_add(self.iterations, 1))
        return updates

    # -- config -----------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor's arguments; ``cls(**config)`` rebuilds (no state)."""
        if isinstance(self._learning_rate, LearningRateSchedule):
            lr = _serialize_schedule(self._learning_rate)
        else:
            lr = float(self.learning_rate)
        return {
            "name": self.name,
            "learning_rate": lr,
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue,
            "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
        }

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """Rebuilds an optimizer from ``get_config()`` (schedules included)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = _deserialize_schedule(
                config["learning_rate"], custom_objects)
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name='{self.name}'>"
