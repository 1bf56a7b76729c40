"""Steps as graph data: ``TrainStep``, ``EvalStep``, ``PredictStep``.

A step holds placeholders, the loss, gradients, the optimizer's apply graph (fed
by gradient placeholders shaped like the variables), metric and layer-state
updates, and the Variables they touch: graph data only, so it pickles (one flat
node table, each Variable's value once) and is compiled lazily where it runs, on
numpy or cupy, in this process or in a Ray actor. Compiled ``Function`` objects
are never pickled.

A training step splits as Keras 3's JAX trainer does (compute, then apply):

* ``compute_gradients(arrays, global_batch_size)``: loss and gradients as one flat
  buffer (ChainerMN's packing), plus metric-state deltas; changes no trainable
  Variable, optimizer slot or metric.
* ``apply_gradients(flat)``: clipping on the reduced gradients, schedules,
  weight decay, the update and ``iterations += 1``.
* ``run(arrays, global_batch_size)``: both fused in one compiled plan (the
  in-process path of ``DefaultStrategy``).

Loss scaling as tf.distribute does it: a replica's loss is its mean loss
(regularization included) times ``n_local / global_batch_size``, so the SUM of
the replicas' gradients is exactly the gradient of one process on the global
batch, an uneven last batch included.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph_pickle import GraphPack
from kerasflow.metrics.merge import plan_merge
from kerasflow.optimizers.base import TrainOp
from kerasflow.steps.batch import StepResult

__all__ = ["StepResult", "FlatLayout", "TrainStep", "EvalStep", "PredictStep"]


class FlatLayout:
    """Where each variable's gradient sits in one flat buffer.

    Args:
        variables: the trainable Variables, in order.

    Attributes:
        size: elements in the buffer; dtype: its dtype (the variables' common
        one); entries: (offset, shape) per variable.
    """

    def __init__(self, variables):
        self.entries, offset = [], 0
        for v in variables:
            self.entries.append((offset, tuple(v.shape)))
            offset += int(np.prod(v.shape, dtype=np.int64))
        self.size = offset
        self.dtype = np.result_type(*[v.dtype for v in variables]) if variables \
            else np.dtype(K.floatx())

    def pack(self, arrays, out=None):
        """Copies ``arrays`` (one per entry) into ``out`` or a new flat buffer;
        an array already computed into its place in ``out`` is left as is."""
        xp = K.get_xp()
        flat = xp.empty(self.size, self.dtype) if out is None else out
        for (offset, shape), a in zip(self.entries, arrays):
            n = int(np.prod(shape, dtype=np.int64))
            part = flat[offset:offset + n]
            if out is not None and a.base is not None and xp.may_share_memory(a, part):
                continue  # computed in place (``Function(..., into=...)``)
            part[...] = a.reshape(-1)
        return flat

    def unpack(self, flat) -> list:
        """Views of ``flat`` shaped like each variable (no copies)."""
        return [flat[o:o + int(np.prod(s, dtype=np.int64))].reshape(s)
                for o, s in self.entries]


def _metric_deltas(updates):
    """(metric Variables, delta tensors) from AssignAdd/Sub/Assign update ops."""
    variables, deltas = [], {}
    for u in updates:
        var, value = u.node.inputs[0], u.node.inputs[1]
        delta = {"AssignAdd": lambda: value, "AssignSub": lambda: -value,
                 "Assign": lambda: value - var}.get(u.node.op)
        if delta is None:
            raise TypeError(f"A metric update must be an assignment to a metric "
                            f"variable. Received: op {u.node.op} ({u!r}).")
        if var not in deltas:
            variables.append(var)
            deltas[var] = delta()
        else:
            deltas[var] = deltas[var] + delta()
    return variables, [deltas[v] for v in variables]


class _Step:
    """Graph-data base: named tensor lists that pickle as one GraphPack."""

    kind = ""
    _GRAPH = ()  # names of attributes holding lists of tensors

    def __getstate__(self):
        lists = [getattr(self, k) for k in self._GRAPH]
        flat = [t for lst in lists for t in lst]
        plain = {k: v for k, v in self.__dict__.items()
                 if k not in self._GRAPH and k != "_fns"}
        return {"pack": GraphPack(flat), "sizes": [len(x) for x in lists],
                "plain": plain}

    def __setstate__(self, state):
        flat = state["pack"].unpack()
        self.__dict__.update(state["plain"])
        pos = 0
        for k, n in zip(self._GRAPH, state["sizes"]):
            setattr(self, k, flat[pos:pos + n])
            pos += n
        self._fns = {}

    def _fn(self, key, build):
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = build()
            pending = getattr(self, "_rng_pending", {}).pop(key, None)
            if pending is not None:
                fn.set_rng_state(pending)
        return fn

    def rng_state(self):
        """The random streams (dropout masks) of the compiled functions, as a
        picklable ``{function: states}``, or None when none draws."""
        state = {k: fn.rng_state() for k, fn in self._fns.items() if fn.rngs}
        return state or None

    def set_rng_state(self, state) -> None:
        """Restores :meth:`rng_state` (functions not compiled yet take it when
        they are): the next steps draw what the saved step drew next."""
        self._rng_pending = dict(state or {})
        for key in list(self._rng_pending):
            if key in self._fns:
                self._fns[key].set_rng_state(self._rng_pending.pop(key))

    def _feed(self, arrays, global_batch_size):
        n = len(arrays[0]) if arrays else 0
        scale = np.asarray(n / global_batch_size, self.inputs[-1].dtype)
        return list(arrays) + [scale], n

    def _result(self, out, n, grads=None, deltas=()):
        return StepResult(float(out[0]), n, grads, list(deltas),
                          [float(v) for v in out[1:self.num_outputs]]
                          if self.num_outputs > 1 else [])

    # Metric state merged by the metrics' own merge_state (metrics/merge.py):
    # positions in metric_variables, initial values, partial-state placeholders,
    # merge ops; names of metrics that assign state but cannot be merged.
    merge_index = merge_initial = merge_inputs = merge_updates = ()
    merge_refused = merge_own = ()  # merge_own: the merged variables' updates

    def add_metric_deltas(self, deltas) -> None:
        """Adds summed metric-state deltas to ``metric_variables`` (except the
        variables in ``merge_index``, merged by :meth:`merge_partials`)."""
        skip = set(self.merge_index)
        for i, (var, d) in enumerate(zip(self.metric_variables, deltas)):
            if i not in skip:
                var.assign_add(np.broadcast_to(np.asarray(d), var.shape))

    def merge_partials(self, partials) -> None:
        """Merges partial metric states into the ``merge_index`` variables, in
        order, with the metrics' ``merge_state``.

        Args:
            partials: one list per replica (rank order) of arrays shaped like
                the ``merge_index`` variables: that replica's batch state,
                accumulated from the initial values.
        """
        fn = self._fn("merge", lambda: K.Function(
            self.merge_inputs, [], updates=self.merge_updates,
            name="merge_metric_state"))
        for part in partials:
            fn(*[np.asarray(a, v.dtype).reshape(v.shape)
                 for a, v in zip(part, self.merge_inputs)])

    def _plan_metric_merge(self, metrics, metric_updates):
        plan = plan_merge(metrics, self.metric_variables, metric_updates)
        self.merge_index, self.merge_initial = plan.index, plan.initial
        self.merge_inputs, self.merge_updates = plan.inputs, plan.updates
        self.merge_refused = plan.refused
        merged = {id(self.metric_variables[i]) for i in plan.index}
        self.merge_own = [u for u in metric_updates
                          if id(u.node.inputs[0]) in merged]

    def _from_initial(self, run):
        """``(run(), partial states)``: ``run`` (a compiled function that also
        runs ``merge_own``) with the ``merge_index`` variables at their
        initial values, their values read back afterwards -- the batch's
        partial state -- then restored. Read back, not initial + delta: that
        rounds (a running maximum's -1e6 start leaves a float32 7.3 as
        7.3125)."""
        if not self.merge_index:
            return run(), []
        merged = [self.metric_variables[i] for i in self.merge_index]
        saved = [v.numpy() for v in merged]
        K.assign_all(merged, self.merge_initial, "metric merge")
        try:
            out = run()
            return out, [v.numpy() for v in merged]
        finally:
            K.assign_all(merged, saved, "metric merge")

    def get_state(self) -> list:
        """Values of ``variables`` as numpy arrays (copies), in order."""
        return [v.numpy() for v in self.variables]

    def set_state(self, values) -> None:
        """Sets ``variables`` from ``get_state()``-ordered arrays (all or nothing)."""
        K.assign_all(self.variables, values, f"{type(self).__name__}")


class TrainStep(_Step):
    """One training step: compute -> (reduce) -> apply, as picklable graph data.

    Args:
        inputs: placeholders fed per batch, in batch-array order (model inputs,
            targets, sample weights).
        loss: scalar tensor: the batch's mean loss, regularization included.
        optimizer: the ``Optimizer``; only its update graph travels.
        var_list: trainable Variables to differentiate against and update.
        output_losses: per-output mean-loss tensors to report ([] for one).
        metric_updates: metric update ops (assignments to metric Variables).
        state_updates: layer state updates (BatchNormalization's moving
            statistics), run on each replica with the forward pass.
        extra_updates: more ops run once per applied step (a ``global_step``
            increment).

    Raises:
        ValueError: no trainable variable, or no gradient reaches any variable.
    """

    kind = "train"
    _GRAPH = ("inputs", "grad_phs", "outputs", "grads", "deltas",
              "apply_updates", "run_updates", "state_updates", "variables",
              "trainable_variables", "metric_variables", "merge_inputs",
              "merge_updates", "merge_own")

    def __init__(self, inputs, loss, optimizer, var_list, output_losses=(),
                 metric_updates=(), state_updates=(), extra_updates=(), metrics=()):
        var_list = list(var_list)
        if not var_list:
            raise ValueError(
                "The model has no trainable weights: there is nothing to train. "
                "Received: trainable_weights=[]. Make layers trainable or call "
                "evaluate()/predict() instead of fit().")
        scale = K.placeholder(K.floatx(), (), name="loss_scale")
        self.inputs = list(inputs) + [scale]
        scaled = loss * scale
        self.outputs = [scaled] + [o * scale for o in output_losses]
        # A LossScaleOptimizer differentiates the loss times its dynamic scale
        # (Keras 3's trainers call ``optimizer.scale_loss``).
        scale_loss = getattr(optimizer, "scale_loss", None)
        grads = K.gradients(scaled if scale_loss is None else scale_loss(scaled),
                            var_list)
        pairs = [(g, v) for g, v in zip(grads, var_list) if g is not None]
        if not pairs:
            raise ValueError(f"No gradient reaches any trainable variable. "
                             f"Received: variables {[v.name for v in var_list]}.")
        self.trainable_variables = [v for _, v in pairs]
        self.grads = [g for g, _ in pairs]
        self.layout = FlatLayout(self.trainable_variables)
        self.grad_phs = [K.placeholder(v.dtype, v.shape, name=f"grad_{i}")
                         for i, v in enumerate(self.trainable_variables)]
        extra = list(extra_updates)
        self.apply_updates = list(optimizer.apply_gradients(
            zip(self.grad_phs, self.trainable_variables))) + extra
        self.metric_variables, self.deltas = _metric_deltas(metric_updates)
        self._plan_metric_merge(metrics, metric_updates)
        self.state_updates = list(state_updates)
        self.run_updates = (list(optimizer.apply_gradients(pairs)) + extra
                            + list(metric_updates) + self.state_updates)
        self.variables = K.reachable_variables(
            self.outputs + self.grads + self.apply_updates + self.run_updates
            + self.merge_updates)
        self.num_outputs = len(self.outputs)
        self._fns = {}

    @classmethod
    def from_train_op(cls, train_op, inputs, output_losses=(), metric_updates=(),
                      state_updates=()):
        """The step of ``optimizer.minimize(loss, global_step)``'s train op.

        Args:
            train_op: a ``TrainOp`` (what ``minimize`` returns).
            inputs: the placeholders the loss needs, in batch-array order.

        Raises:
            TypeError: ``train_op`` is not a ``TrainOp``.
        """
        if not isinstance(train_op, TrainOp):
            raise TypeError(f"from_train_op needs the op optimizer.minimize() "
                            f"returns. Received: {train_op!r}.")
        extra = [] if train_op.global_step is None else [
            K.assign_add(train_op.global_step, 1)]
        return cls(inputs, train_op.loss, train_op.optimizer, train_op.var_list,
                   output_losses, metric_updates, state_updates, extra)

    def compute_gradients(self, arrays, global_batch_size, out=None) -> StepResult:
        """Loss, flat gradients and metric deltas of one replica's batch.

        Args:
            arrays: this replica's batch, one array per input placeholder.
            global_batch_size: int, samples in the global batch (all replicas).
            out: optional (layout.size,) buffer of ``layout.dtype`` the
                gradients are packed into (a replica's collective buffer:
                one copy fewer); ``grads`` is then that buffer.

        Returns:
            ``StepResult`` with ``grads`` of shape (layout.size,); its
            ``metric_deltas`` hold, at the ``merge_index`` positions, the
            batch's partial state (from the initial values) instead.
        """
        fn = self._fn("compute", lambda: K.Function(
            self.inputs, self.outputs + self.grads + self.deltas,
            updates=self.state_updates + list(self.merge_own),
            name="compute_gradients"))
        feed, n = self._feed(arrays, global_batch_size)
        k, m = self.num_outputs, len(self.grads)
        into = None
        if out is not None:  # the gradient MatMuls write into ``out`` itself
            views = [v if v.dtype == g.dtype else None
                     for v, g in zip(self.layout.unpack(out), self.grads)]
            into = [None] * k + views + [None] * len(self.deltas)
        res, partial = self._from_initial(lambda: fn(*feed, into=into))
        flat = self.layout.pack(res[k:k + m], out)
        deltas = [K.to_numpy(d) for d in res[k + m:]]
        for i, state in zip(self.merge_index, partial):
            deltas[i] = state  # the batch's partial state
        return self._result(res, n, flat, deltas)

    def apply_gradients(self, flat_grads) -> None:
        """Applies the (reduced) flat gradient buffer: one optimizer step."""
        fn = self._fn("apply", lambda: K.Function(
            self.grad_phs, [], updates=self.apply_updates, name="apply_gradients"))
        fn(*self.layout.unpack(flat_grads))

    def run(self, arrays, global_batch_size) -> StepResult:
        """Compute and apply fused in one plan (metrics updated in place)."""
        fn = self._fn("run", lambda: K.Function(
            self.inputs, self.outputs, updates=self.run_updates, name="train_step"))
        feed, n = self._feed(arrays, global_batch_size)
        return self._result(fn(*feed), n)


class EvalStep(_Step):
    """Loss and metric updates of one batch; changes no weight.

    Args:
        inputs, loss, output_losses, metric_updates: as for ``TrainStep``.
        state_updates: layer state updates that run with each batch in
            process (a stateful RNN's kept states, as Keras' ``evaluate``).
        metrics: the ``Metric`` objects updated (their ``merge_state`` merges
            replicas' partial states of metrics that assign their state).
    """

    kind = "eval"
    _GRAPH = ("inputs", "outputs", "deltas", "metric_updates", "state_updates",
              "variables", "metric_variables", "merge_inputs", "merge_updates",
              "merge_own")

    def __init__(self, inputs, loss, output_losses=(), metric_updates=(),
                 state_updates=(), metrics=()):
        scale = K.placeholder(K.floatx(), (), name="loss_scale")
        self.inputs = list(inputs) + [scale]
        self.outputs = [loss * scale] + [o * scale for o in output_losses]
        self.metric_updates = list(metric_updates)
        self.state_updates = list(state_updates)
        self.metric_variables, self.deltas = _metric_deltas(self.metric_updates)
        self._plan_metric_merge(metrics, self.metric_updates)
        self.variables = K.reachable_variables(self.outputs + self.metric_updates
                                               + self.state_updates
                                               + list(self.merge_updates))
        self.num_outputs = len(self.outputs)
        self._fns = {}

    def compute(self, arrays, global_batch_size) -> StepResult:
        """Scaled loss and metric deltas of one replica's batch (its rows of a
        global batch of ``global_batch_size``); changes no variable.

        Returns:
            ``StepResult`` (``grads`` None) whose ``metric_deltas`` hold, at
            the ``merge_index`` positions, the batch's partial state (from
            the initial values) instead, as ``TrainStep.compute_gradients``.
        """
        fn = self._fn("compute", lambda: K.Function(
            self.inputs, self.outputs + self.deltas, updates=list(self.merge_own),
            name="eval_compute"))
        feed, n = self._feed(arrays, global_batch_size)
        out, partial = self._from_initial(lambda: fn(*feed))
        deltas = [K.to_numpy(d) for d in out[self.num_outputs:]]
        for i, state in zip(self.merge_index, partial):
            deltas[i] = state  # the batch's partial state
        return self._result(out, n, None, deltas)

    def run(self, arrays, global_batch_size) -> StepResult:
        """Loss of the batch; metric variables updated in place."""
        fn = self._fn("run", lambda: K.Function(
            self.inputs, self.outputs,
            updates=self.metric_updates + self.state_updates, name="eval_step"))
        feed, n = self._feed(arrays, global_batch_size)
        return self._result(fn(*feed), n)


class PredictStep(_Step):
    """Model outputs of one batch.

    Args:
        inputs: input placeholders; outputs: output tensors, in order.
        updates: layer state updates that run with every batch (a stateful
            RNN's kept states, which Keras carries through ``predict`` too).
    """

    kind = "predict"
    _GRAPH = ("inputs", "outputs", "updates", "variables")

    def __init__(self, inputs, outputs, updates=()):
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.updates = list(updates)
        self.variables = K.reachable_variables(self.outputs + self.updates)
        self._fns = {}

    def run(self, arrays) -> list:
        """The outputs for ``arrays`` (one per input), as device arrays."""
        fn = self._fn("run", lambda: K.Function(self.inputs, self.outputs,
                                                updates=self.updates,
                                                name="predict_step"))
        return list(fn(*arrays))
