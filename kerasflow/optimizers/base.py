"""The optimizer contract: learning rate, slots, clipping and graph updates.

An optimizer turns gradients into stateful graph nodes, TF1 style: nothing
changes until those nodes run, in a ``Function`` (as its ``updates``) or a
``Session`` (the op ``minimize`` returns). Per variable and step the update is
one fused kernel (``kernels.py``); the learning rate and step-dependent scalars
are computed once per step in the graph from ``iterations``, so changing the
learning rate or advancing a schedule never rebuilds a compiled function.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings

import numpy as np

from kerasflow import backend as K
from kerasflow.optimizers import clipping
from kerasflow.optimizers.sparse import sparse_update
from kerasflow.optimizers.schedules import LearningRateSchedule
from kerasflow.optimizers.schedules import deserialize as _deserialize_schedule
from kerasflow.optimizers.schedules import serialize as _serialize_schedule
from kerasflow.optimizers.train_op import (  # noqa: F401  (re-exported)
    LearningRateValue, TrainOp, train_op_info, trainable_variables_of,
)

__all__ = ["Optimizer", "TrainOp", "train_op_info", "trainable_variables_of"]


def _check_positive(name, value, allow_zero=False):
    if value is None:
        return None
    if (not isinstance(value, numbers.Real) or isinstance(value, bool)
            or not math.isfinite(value) or value < 0
            or (value == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"Argument `{name}` must be a float {bound} or None. "
                         f"Received: {name}={value!r}.")
    return float(value)


def _check_learning_rate(owner, value):
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"Optimizer '{owner}' expects `learning_rate` as a finite "
                         f"float >= 0. Received: learning_rate={value}.")


class Optimizer:
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

    Attributes:
        iterations: int64 scalar ``Variable``, steps applied so far.

    Raises:
        ValueError: more than one of clipnorm, clipvalue, global_clipnorm, or a
            non-positive one.
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
                 clipvalue=None, global_clipnorm=None, name=None):
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                f"Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                f"set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                f"global_clipnorm={global_clipnorm}."
            )
        self.name = name or type(self).__name__.lower()
        self.weight_decay = _check_positive("weight_decay", weight_decay, True)
        self.clipnorm = _check_positive("clipnorm", clipnorm)
        self.clipvalue = _check_positive("clipvalue", clipvalue)
        self.global_clipnorm = _check_positive("global_clipnorm", global_clipnorm)
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
            _check_learning_rate(self.name, learning_rate)
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
        _check_learning_rate(self.name, value)
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

    def apply_gradients(self, grads_and_vars) -> list:
        """Update nodes applying symbolic gradients, plus ``iterations += 1``.

        Args:
            grads_and_vars: iterable of ``(gradient, Variable)``; gradients are
                symbolic tensors of the variable's shape, or None (skipped with
                a warning: the variable is not connected to the loss).

        Returns:
            List of stateful tensors: one update per variable, then the
            iteration increment. Run them as a ``Function``'s ``updates`` or
            fetch ``group(*updates)`` in a ``Session``.

        Raises:
            ValueError: every gradient is None, or a variable appears twice.
            TypeError: a non-Variable, or a gradient that is not symbolic.
        """
        pairs = list(grads_and_vars)
        for g, v in pairs:
            if not isinstance(v, K.Variable):
                raise TypeError(f"apply_gradients takes (gradient, Variable) pairs. "
                                f"Received variable: {v!r}.")
            if g is not None and not K.is_symbolic(g):
                raise TypeError(
                    f"apply_gradients builds graph updates from symbolic "
                    f"gradients (e.g. gradients(loss, vars)). Received for "
                    f"'{v.name}': {type(g).__name__}."
                )
        if len({id(v) for _, v in pairs}) != len(pairs):
            raise ValueError(f"A variable appears twice in grads_and_vars: "
                             f"{[v.name for _, v in pairs]}.")
        if not pairs:
            raise ValueError(
                f"Optimizer '{self.name}' expects at least one (gradient, "
                f"variable) pair to apply. Received: none; the model has no "
                f"trainable weights (all layers frozen, or none with weights)."
            )
        missing = [v.name for g, v in pairs if g is None]
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: {missing}.")
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when "
                          f"minimizing the loss; they are not updated.",
                          stacklevel=2)
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
            updates.append(K.assign_add(self.iterations, 1))
        return updates

    def get_updates(self, loss, params) -> list:
        """Update nodes minimizing ``loss`` over ``params`` (Keras 2's name).

        Gradients come from ``kerasflow.backend.gradients``; see
        ``apply_gradients`` for the returned list and the errors.
        """
        params = list(params)
        return self.apply_gradients(zip(K.gradients(loss, params), params))

    def compute_gradients(self, loss, var_list=None) -> list:
        """``(gradient, variable)`` pairs of ``loss`` (TF1's ``compute_gradients``).

        Args:
            loss: scalar tensor.
            var_list: Variables; default: every trainable Variable ``loss``
                depends on, in creation order.

        Returns:
            List of ``(symbolic gradient or None, Variable)``; feed it (possibly
            transformed) to ``apply_gradients``.

        Raises:
            ValueError: no trainable variable to differentiate against.
        """
        var_list = trainable_variables_of(loss) if var_list is None else list(
            var_list)
        if not var_list:
            raise ValueError(f"Found no trainable Variable to differentiate "
                             f"against. Received: loss={loss!r}, var_list=[].")
        return list(zip(K.gradients(loss, var_list), var_list))

    def minimize(self, loss, global_step=None, var_list=None):
        """One train op that takes a step on ``loss`` (TF1's ``minimize``).

        Args:
            loss: scalar tensor (a non-scalar one is summed).
            global_step: optional int Variable incremented by each step
                (``kerasflow.train.get_or_create_global_step()``).
            var_list: Variables to train; default: every trainable Variable the
                loss depends on.

        Returns:
            A ``TrainOp``: ``sess.run(train_op, feed_dict)`` applies one step and
            returns None; ``train_op.loss/var_list/optimizer`` say what it trains.

        Raises:
            ValueError: no trainable variable to train.

        Example:
            >>> train_op = GradientDescentOptimizer(0.01).minimize(cost)
            >>> with Session() as sess:
            ...     sess.run(train_op, feed_dict={X: x, Y: y})
        """
        if isinstance(global_step, (list, tuple)) and var_list is None:
            global_step, var_list = None, global_step  # minimize(loss, var_list)
        pairs = self.compute_gradients(loss, var_list)
        updates = self.apply_gradients(pairs)
        if global_step is not None:
            updates.append(K.assign_add(global_step, 1))
        group = K.group(*updates, name=f"{self.name}/minimize")
        node = group.node
        op = TrainOp.__new__(TrainOp)
        K.SymbolicTensor.__init__(op, node, 0, (), "bool")
        node.outputs = (op,)
        op.loss, op.var_list, op.optimizer = loss, [v for _, v in pairs], self
        op.global_step = global_step
        return op

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
