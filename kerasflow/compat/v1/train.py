"""``tf.train``: TF1 optimizer classes, the global step, decays and ``Saver``.

Each ``tf.train.*Optimizer`` is the kerasflow optimizer with the same update
rule, under TF1's name, constructor arguments and methods:
``minimize(loss, global_step=None, var_list=None)``,
``compute_gradients(loss, var_list=None) -> [(grad, var)]`` and
``apply_gradients(grads_and_vars, global_step=None)``; a ``global_step``
Variable is incremented by each step's op. The learning rate may be a float
or a scalar tensor (``tf.train.exponential_decay(...)``, a placeholder).
"""

from __future__ import annotations

import importlib

from kerasflow import backend as K
from kerasflow import optimizers as kopt
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1._missing import missing_attribute
from kerasflow.compat.v1.saver import Saver, checkpoint_exists, latest_checkpoint
from kerasflow.optimizers.schedules import ExponentialDecay, LearningRateSchedule
from kerasflow.train_checkpoint import Checkpoint, CheckpointManager

# TF1 clusters (``ClusterSpec``, ``Server``, ``replica_device_setter``,
# ``Supervisor``): loaded on first use by ``__getattr__`` below, so the optimizers
# import no cluster code (``supervisor`` and ``monitored_session`` import this
# module). Listed once, here; ``__all__`` takes its names from this table.
_LAZY = {"ClusterSpec": "kerasflow.distribute.cluster_resolver",
         "Server": "kerasflow.distribute.tf1.server",
         "replica_device_setter": "kerasflow.compat.v1.device_setter",
         "GreedyLoadBalancingStrategy": "kerasflow.compat.v1.device_setter",
         "byte_size_load_fn": "kerasflow.compat.v1.device_setter",
         "Supervisor": "kerasflow.compat.v1.supervisor",
         "SyncReplicasOptimizer": "kerasflow.compat.v1.sync_replicas",
         **{n: "kerasflow.compat.v1.monitored_session" for n in (
             "MonitoredTrainingSession", "MonitoredSession", "Scaffold",
             "SessionRunHook", "SessionRunArgs", "SessionRunContext",
             "SessionRunValues", "StopAtStepHook")}}

__all__ = [
    "ApplyOp", "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer",
    "AdamOptimizer", "AdagradOptimizer", "RMSPropOptimizer", "get_or_create_global_step",
    "get_global_step", "create_global_step", "global_step", "exponential_decay",
    "Saver", "latest_checkpoint", "checkpoint_exists", "Checkpoint",
    "CheckpointManager", *_LAZY,
]


class _TensorRate(LearningRateSchedule):
    """A learning rate given as a scalar graph tensor (TF1 allowed tensors)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __call__(self, step):
        if K.is_symbolic(step):
            return self.tensor
        return K.Function([], [self.tensor], name="learning_rate")()[0]

    def get_config(self):
        raise TypeError("A learning rate given as a tensor cannot be serialized.")


def _rate(learning_rate):
    if K.is_symbolic(learning_rate):
        return _TensorRate(K.cast(learning_rate, K.floatx()))
    return learning_rate


class ApplyOp(K.SymbolicTensor):
    """What TF1's ``apply_gradients`` returns: one fetchable op running every
    update, which also iterates over those updates, so kerasflow code expecting
    the update list (``TrainStep``) takes it as well."""

    __slots__ = ("updates", "grads_and_vars", "optimizer", "global_step")

    def __iter__(self):
        return iter(self.updates)

    def __len__(self):
        return len(self.updates)


def _apply_op(updates, name, grads_and_vars=(), optimizer=None, global_step=None):
    node = K.group(*updates, name=name).node
    op = ApplyOp.__new__(ApplyOp)
    K.SymbolicTensor.__init__(op, node, 0, (), "bool")
    node.outputs = (op,)
    op.updates = list(updates)
    # What it applies, so a cluster session can apply it on the ps instead.
    op.grads_and_vars, op.optimizer = list(grads_and_vars), optimizer
    op.global_step = global_step
    return op


class Optimizer:
    """TF1's optimizer methods, mixed into the kerasflow optimizers."""

    def compute_gradients(self, loss, var_list=None, gate_gradients=1,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """``[(gradient or None, variable)]`` of ``loss`` (summed if not scalar).

        Args:
            var_list: Variables; default: the trainable ones ``loss`` reaches.

        Raises:
            ValueError: no variable to differentiate.
        """
        if var_list is None:
            var_list = kopt.trainable_variables_of(loss)
        var_list = list(var_list)
        if not var_list:
            raise ValueError(f"No variables to optimize. Received: loss={loss!r}.")
        grads = K.gradients(loss, var_list)
        return list(zip(grads, var_list))

    def get_updates(self, loss, params) -> list:
        # The kerasflow optimizer's own update list: TF1's apply_gradients below
        # returns one op instead, so internal callers must not reach it.
        params = list(params)
        return kopt.Optimizer.apply_gradients(
            self, zip(K.gradients(loss, params), params))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One op applying the gradients (and ``global_step += 1``); iterating
        over it gives the update ops (kerasflow's ``apply_gradients`` list)."""
        grads_and_vars = list(grads_and_vars)
        updates = kopt.Optimizer.apply_gradients(self, grads_and_vars)
        if getattr(self, "_in_minimize", False):
            return updates  # kerasflow's minimize appends to the list
        if global_step is not None:
            updates.append(K.assign_add(global_step, K.cast(1, global_step.dtype)))
        self._register()
        return G.track(_apply_op(updates, name or f"{self.name}/update",
                                 grads_and_vars, self, global_step))

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False,
                 name=None, grad_loss=None):
        """The train op: one step on ``loss``; increments ``global_step``.

        Args:
            loss: scalar tensor (a non-scalar one is summed).
            global_step: optional integer Variable, +1 per run of the op.
            var_list: Variables to train; default: the trainable ones the loss
                depends on.

        Returns:
            A fetchable op; ``sess.run(train_op, feed_dict)`` returns None.

        Raises:
            ValueError: no trainable variable to train.
        """
        self._in_minimize = True
        try:
            op = super().minimize(loss, global_step=global_step, var_list=var_list)
        finally:
            self._in_minimize = False
        self._register()
        G.add_to_collection(G.GraphKeys.TRAIN_OP, op)
        return G.track(op)

    def _register(self):
        graph = G.get_default_graph()
        for v in self.variables:
            graph.register_variable(v, [G.GraphKeys.GLOBAL_VARIABLES])

    def get_name(self):
        return self.name


class GradientDescentOptimizer(Optimizer, kopt.SGD):
    """``var -= learning_rate * grad``."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate=_rate(learning_rate), name=name)


class MomentumOptimizer(Optimizer, kopt.SGD):
    """TF1 momentum: ``accum = momentum * accum + grad; var -= lr * accum``
    (Keras' velocity form, identical for a constant rate)."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(learning_rate=_rate(learning_rate), momentum=momentum,
                         nesterov=use_nesterov, name=name)


class AdamOptimizer(Optimizer, kopt.Adam):
    """Adam (Kingma & Ba, 2015) with TF1's defaults (epsilon 1e-8, "epsilon
    hat" as in TF1)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate=_rate(learning_rate), beta_1=beta1,
                         beta_2=beta2, epsilon=epsilon, name=name)


class AdagradOptimizer(Optimizer, kopt.Adagrad):
    """TF1 Adagrad: ``acc += g**2; var -= lr * g / sqrt(acc)`` (no epsilon).

    Raises:
        ValueError: ``initial_accumulator_value`` <= 0 (TF1 required > 0).
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 use_locking=False, name="Adagrad"):
        if initial_accumulator_value <= 0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(learning_rate=_rate(learning_rate),
                         initial_accumulator_value=initial_accumulator_value,
                         epsilon=0.0, name=name)


class RMSPropOptimizer(Optimizer, kopt.RMSprop):
    """TF1 RMSProp: mean square starts at 1 (TF1's slot init), ``decay`` is
    Keras' ``rho``, epsilon 1e-10 inside the square root."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(learning_rate=_rate(learning_rate), rho=decay,
                         momentum=momentum, epsilon=epsilon, centered=centered,
                         name=name)

    def _create_slots(self, var):
        self.add_slot(var, "velocity", 1.0)
        super()._create_slots(var)


# -- global step ----------------------------------------------------------------------
def get_global_step(graph=None):
    """The graph's global step Variable, or None: the GLOBAL_STEP collection's,
    else (as TF 1.x) a global variable named "global_step" (e.g. made with
    ``tf.get_variable("global_step", ...)``).

    Raises:
        TypeError: that variable is not an integer scalar.
    """
    graph = graph or G.get_default_graph()
    steps = graph.get_collection(G.GraphKeys.GLOBAL_STEP)
    if steps:
        return steps[0]
    named = [v for v in graph.get_collection(G.GraphKeys.GLOBAL_VARIABLES)
             if str(getattr(v, "name", "")).split(":")[0] == "global_step"]
    if not named:
        return None
    step = named[0]
    if tuple(step.shape) != () or not str(step.dtype).startswith("int"):
        raise TypeError(f"The global step must be an integer scalar. Received: "
                        f"'global_step' of shape {tuple(step.shape)} and dtype "
                        f"{step.dtype}.")
    return step


def create_global_step(graph=None):
    """Creates the int64 scalar "global_step" (not trainable).

    Raises:
        ValueError: the graph already has one.
    """
    graph = graph or G.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    step = K.Variable(0, trainable=False, name="global_step", dtype="int64")
    graph.var_store.setdefault("global_step", step)
    graph.register_variable(step, [G.GraphKeys.GLOBAL_VARIABLES,
                                   G.GraphKeys.GLOBAL_STEP])
    return step


def get_or_create_global_step(graph=None):
    """The graph's global step, created (value 0) if missing."""
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The value of the global step as a Python int."""
    return int(sess.run(global_step_tensor))


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase=False, name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` as a tensor
    (floored exponent with ``staircase``); pass it to an optimizer.

    Raises:
        ValueError: ``global_step`` is None (TF1's message).
    """
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    schedule = ExponentialDecay(learning_rate, decay_steps, decay_rate, staircase)
    return G.track(schedule(global_step))


_missing = missing_attribute("tf.train", globals())


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    return _missing(name)
