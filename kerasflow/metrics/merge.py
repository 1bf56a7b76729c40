"""Merging metric state across replicas by each metric's own rule.

Replicas keep identical metric state. A metric whose updates only add to its
state (``assign_add`` / ``assign_sub``, every built-in metric) merges by
summing the replicas' deltas, which the allreduce does with the gradients. A
metric that *assigns* its state (a running maximum: ``v.assign(max(v, x))``)
cannot: the sum of the replicas' ``new - old`` is not the merged state. For
those, :func:`plan_merge` traces the metric's own ``merge_state`` (Keras'
``Metric.merge_state(metrics)``) once into graph data: each replica computes
its batch's *partial* state from the metric's initial state, the partials
travel to every replica, and each replica merges them into the committed
state in rank order -- the map/merge of independent partial aggregates that
Keras' ``merge_state`` describes. A metric that assigns its state but keeps
the base class's additive ``merge_state``, or whose ``merge_state`` cannot be
traced (numpy on its state), is named in ``refused``; replica strategies then
refuse to train rather than sum wrongly, and one process runs it as it is.
"""

from __future__ import annotations

import copy

import numpy as np

from kerasflow import backend as K
from kerasflow.metrics.base import Metric
from kerasflow.metrics.state import record_assignments

__all__ = ["MergePlan", "assigned_variables", "plan_merge"]


class MergePlan:
    """What a train step needs to merge non-additive metric state.

    Attributes:
        index: positions, in the step's ``metric_variables``, of the merged
            variables.
        initial: their initial values (numpy arrays, same shapes and dtypes).
        inputs: one placeholder per merged variable: a replica's partial state.
        updates: ops merging one fed partial into the variables (the metrics'
            ``merge_state``).
        refused: names of metrics (or metric variables) that assign their
            state and have no ``merge_state`` of their own, or one that
            cannot be traced into graph ops.
    """

    def __init__(self, index=(), initial=(), inputs=(), updates=(), refused=()):
        self.index, self.initial = list(index), list(initial)
        self.inputs, self.updates = list(inputs), list(updates)
        self.refused = list(refused)


def assigned_variables(metric_updates) -> list:
    """The Variables some update in ``metric_updates`` assigns (not adds to)."""
    out = {}
    for u in metric_updates:
        if u.node.op == "Assign":
            out.setdefault(id(u.node.inputs[0]), u.node.inputs[0])
    return list(out.values())


def _proxy(metric, replace):
    # A shallow copy whose state attributes are the partial-state tensors, so
    # merge_state(self, [proxy]) reads `proxy.best` as written for metrics.
    proxy = copy.copy(metric)
    for key, value in list(vars(proxy).items()):
        if id(value) in replace:
            setattr(proxy, key, replace[id(value)])
    proxy._variables = [replace[id(v)] for v in metric.variables]
    return proxy


def plan_merge(metrics, metric_variables, metric_updates) -> MergePlan:
    """Plans how replicas merge the metrics whose updates assign their state.

    Args:
        metrics: the ``Metric`` objects whose updates are in ``metric_updates``.
        metric_variables: the step's metric Variables (delta order).
        metric_updates: the step's metric update ops.

    Returns:
        A :class:`MergePlan` (empty when every update adds).
    """
    assigned = {id(v) for v in assigned_variables(metric_updates)}
    position = {id(v): i for i, v in enumerate(metric_variables)}
    plan, covered = MergePlan(), set()
    for metric in dict.fromkeys(m for m in metrics if isinstance(m, Metric)):
        variables = metric.variables
        if not any(id(v) in assigned for v in variables):
            continue
        covered.update(id(v) for v in variables)
        if type(metric).merge_state is Metric.merge_state:
            plan.refused.append(metric.name)
            continue
        replace, inputs = {}, []
        for i, (var, init) in enumerate(zip(variables, metric._initial)):
            if id(var) in position:  # updated by the step: a partial to feed
                ph = K.placeholder(var.dtype, var.shape,
                                   name=f"{metric.name}_partial_{i}")
                replace[id(var)] = ph
                inputs.append((position[id(var)], np.array(init), ph))
            else:  # never updated: its partial is the initial value
                replace[id(var)] = K.constant(np.array(init))
        try:
            ops = record_assignments(type(metric).merge_state, metric,
                                     [_proxy(metric, replace)])
        except Exception:  # noqa: BLE001 - user code that cannot be traced
            # (numpy on its state): fine in one process, refused on replicas.
            plan.refused.append(metric.name)
            continue
        plan.index += [i for i, _, _ in inputs]
        plan.initial += [init for _, init, _ in inputs]
        plan.inputs += [ph for _, _, ph in inputs]
        plan.updates += ops
    plan.refused += [v.name for v in assigned_variables(metric_updates)
                     if id(v) not in covered]
    return plan
