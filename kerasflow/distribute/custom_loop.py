"""``strategy.run(fn, args)``: tf.distribute's custom training loops.

    dist_ds = strategy.experimental_distribute_dataset(ds)   # global batches
    for x, y in dist_ds:                                     # PerReplica values
        per_replica_loss = strategy.run(train_step, args=(x, y))
        loss = strategy.reduce(ReduceOp.SUM, per_replica_loss, axis=None)

* **One replica** (the default strategy, or a strategy of one replica):
  ``fn`` runs eagerly in this process, as in TF's eager mode.
* **Replica strategies** (``MirroredStrategy``, ``MultiWorkerMirroredStrategy``):
  ``fn`` is traced once per input signature (``tf.function``'s rule: the
  structure, and each array's dtype and shape after the batch axis) on
  placeholders; its ``GradientTape`` gradients, ``optimizer.apply_gradients``
  and metric updates become the step's graph, which runs **on each replica
  actor** on that replica's values. As in tf.distribute, the gradients handed
  to ``apply_gradients`` are **summed** across replicas (the user scales the
  loss, e.g. ``compute_average_loss(..., global_batch_size=...)``), metric
  updates are merged, and each replica's return values come back as
  ``PerReplica`` values, one per replica. ``fn`` must apply its gradients
  with ``optimizer.apply_gradients`` (each variable once) and return scalars.

``get_replica_context()`` gives ``num_replicas_in_sync`` inside ``fn``;
``compute_average_loss`` scales a per-example loss by the global batch.
Source: TF 2.x ``tf.distribute.Strategy.run`` / ``reduce`` and the "Custom
training with tf.distribute.Strategy" guide.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.distribute import context, graph_loop
from kerasflow.distribute.values import (
    PerReplica,
    ReduceOp,
    SymbolicPerReplica,
    shard_bounds,
)
from kerasflow.steps.batch import BatchRef
from kerasflow.steps.replica_fn import trace_replica_fn

__all__ = ["ReplicaContext", "compute_average_loss", "gather", "get_replica_context",
           "local_results", "reduce", "run"]

class ReplicaContext:
    """What ``fn`` sees of its replica (tf.distribute's ``ReplicaContext``).

    Attributes:
        strategy: the strategy running ``fn``.
        num_replicas_in_sync: replicas running it together.
    """

    def __init__(self, strategy, replica_id=0, traced=False):
        self.strategy = strategy
        self.num_replicas_in_sync = int(strategy.num_replicas_in_sync)
        self._id, self._traced = replica_id, traced
        self.id_placeholder = None

    @property
    def replica_id_in_sync_group(self):
        """This replica's index: an int (0) in one process; inside a ``fn``
        traced for replicas, an int32 scalar tensor each replica feeds with
        its rank (one graph serves every replica)."""
        if self._traced:
            if self.id_placeholder is None:
                self.id_placeholder = K.placeholder("int32", (), name="replica_id")
            return self.id_placeholder
        return self._id

    def all_reduce(self, reduce_op, value):
        """Sums (or averages) ``value`` over the replicas: the identity with
        one replica.

        Raises:
            NotImplementedError: inside a ``fn`` traced for replicas (gradients
                are reduced by ``apply_gradients``; reduce results with
                ``strategy.reduce`` outside ``run``).
        """
        if self._traced:
            raise NotImplementedError(
                "ReplicaContext.all_reduce inside a step traced for replicas is not "
                "provided; apply_gradients sums gradients across replicas, and "
                "strategy.reduce combines the values fn returns.")
        return value


def get_replica_context():
    """The ``ReplicaContext`` of the ``fn`` running now, else (cross-replica
    context, as in TF) None outside ``strategy.run`` under a strategy's scope,
    and the default replica context outside any scope."""
    ctx = context.current("replica")
    if ctx is not None:
        return ctx
    return None if context.has_strategy() else ReplicaContext(context.get_strategy())


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """``sum(per_example_loss * sample_weight) / global_batch_size`` (TF's
    ``tf.nn.compute_average_loss``): summed over the replicas, the mean over
    the global batch.

    Args:
        per_example_loss: tensor or array (batch, ...); extra axes are averaged
            per example first, as TF does.
        sample_weight: None, a scalar or (batch,) weights.
        global_batch_size: int; default: this replica's batch size times
            ``num_replicas_in_sync``.

    Raises:
        ValueError: a non-positive ``global_batch_size``.
    """
    loss = per_example_loss
    if len(K.int_shape(loss) or ()) > 1:
        loss = K.mean(K.reshape(loss, (K.shape(loss)[0], -1)), axis=-1)
    if sample_weight is not None:
        loss = loss * K.cast(sample_weight, K.dtype(loss))
    if global_batch_size is None:
        ctx = get_replica_context()
        n = 1 if ctx is None else ctx.num_replicas_in_sync
        global_batch_size = K.cast(K.shape(loss)[0] * n, K.dtype(loss))
    elif not isinstance(global_batch_size, (int, np.integer)) or global_batch_size <= 0:
        raise ValueError(f"compute_average_loss expects global_batch_size > 0. "
                         f"Received: {global_batch_size!r}")
    return K.sum(loss) / global_batch_size


def _leaves(args, kwargs):
    return tree.flatten((list(args), dict(kwargs)))


def run(strategy, fn, args=(), kwargs=None):
    """``strategy.run(fn, args, kwargs)``: see the module docstring.

    Returns:
        ``fn``'s return value in one process; on replicas its structure with a
        ``PerReplica`` (one float per replica) at each leaf.

    Raises:
        TypeError: ``fn`` is not callable; ``args`` not a tuple/list or
            ``kwargs`` not a dict; an argument that is an array but not
            per-replica on a replica strategy.
        ValueError: ``PerReplica`` values of another replica count, or split
            otherwise than a distributed dataset splits a global batch.
        NotImplementedError: a strategy that cannot run ``fn`` on its replicas.
    """
    if not callable(fn):
        raise TypeError(f"strategy.run expects a callable fn. Received: {fn!r}")
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"strategy.run expects args as a tuple or list. Received: "
                        f"{type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"strategy.run expects kwargs as a dict of keyword "
                        f"arguments. Received: {type(kwargs).__name__} "
                        f"{kwargs!r:.100}")
    kwargs = dict(kwargs or {})
    n = int(strategy.num_replicas_in_sync)
    if any(K.is_symbolic(v) for v in _leaves(args, kwargs)):  # TF 1.15 graph mode
        if n > 1 and not getattr(strategy, "runs_replica_fns", False):
            raise NotImplementedError(f"{type(strategy).__name__}.experimental_run_v2 "
                                      f"in a graph is not provided.")

        def trace(call, inputs):
            with context.entered("replica", ReplicaContext(strategy, traced=True)) as ctx:
                return trace_replica_fn(call, inputs, n, ctx)
        return graph_loop.run_in_graph(strategy, fn, args, kwargs, trace)
    for leaf in _leaves(args, kwargs):
        if isinstance(leaf, PerReplica) and len(leaf) != n:
            raise ValueError(f"strategy.run expects PerReplica values of "
                             f"{n} replicas. Received: {len(leaf)} values.")
    if n == 1:
        def unwrap(v):
            return v.values[0] if isinstance(v, PerReplica) else v

        a, kw = tree.map_structure(unwrap, (list(args), kwargs))
        with context.entered("replica", ReplicaContext(strategy)):
            return fn(*a, **kw)
    if not getattr(strategy, "runs_replica_fns", False):
        raise NotImplementedError(f"{type(strategy).__name__}.run(fn) with "
                                  f"{n} replicas is not provided; use MirroredStrategy "
                                  f"or MultiWorkerMirroredStrategy.")
    return _run_on_replicas(strategy, fn, args, kwargs, n)


def _signature(fn, leaves):
    sig = []
    for leaf in leaves:
        if isinstance(leaf, PerReplica):
            v = np.asarray(leaf.values[0])
            sig.append(("per_replica", v.dtype.name, v.shape[1:]))
        elif isinstance(leaf, (np.ndarray,)) or K.is_symbolic(leaf):
            raise TypeError(
                "strategy.run on replicas expects array arguments as PerReplica "
                "values (iterate strategy.experimental_distribute_dataset(ds)). "
                f"Received: a plain {type(leaf).__name__}; per-replica values are "
                "combined with strategy.reduce.")
        else:
            sig.append(("const", repr(leaf)))
    return (fn, tuple(sig))


def _run_on_replicas(strategy, fn, args, kwargs, n):
    leaves = _leaves(args, kwargs)
    key = _signature(fn, leaves)
    arrays = []
    for leaf in leaves:
        if not isinstance(leaf, PerReplica):
            continue
        values = [np.asarray(v) for v in leaf.values]
        total = sum(len(v) for v in values)
        want = [shard_bounds(total, n, r) for r in range(n)]
        if [hi - lo for lo, hi in want] != [len(v) for v in values]:
            raise ValueError(
                f"strategy.run expects PerReplica batches split as a distributed "
                f"dataset splits a global batch: sizes "
                f"{[hi - lo for lo, hi in want]}. Received: {[len(v) for v in values]}")
        arrays.append(np.concatenate(values))
    cache = strategy.__dict__.setdefault("_replica_fns", {})
    traced = cache.get(key)
    if traced is None:
        traced = cache[key] = _trace(strategy, fn, args, kwargs, leaves, n)
    step, out_struct = traced
    (result,) = strategy.run_steps(step, [BatchRef(arrays, None)])
    k = step.num_returned
    spread = np.asarray(result.output_losses, float).reshape(n, k)
    flat = [PerReplica([float(spread[r, j]) for r in range(n)]) for j in range(k)]
    return tree.pack_sequence_as(out_struct, flat) if out_struct is not None else None


def _trace(strategy, fn, args, kwargs, leaves, n):
    phs = [K.placeholder(np.asarray(v.values[0]).dtype.name,
                         (None,) + np.asarray(v.values[0]).shape[1:], name=f"replica_in_{i}")
           if isinstance(v, PerReplica) else v for i, v in enumerate(leaves)]
    a, kw = tree.pack_sequence_as((list(args), kwargs), phs)
    inputs = [p for p, v in zip(phs, leaves) if isinstance(v, PerReplica)]
    with context.entered("replica", ReplicaContext(strategy, traced=True)) as ctx:
        return trace_replica_fn(lambda: fn(*a, **kw), inputs, n, ctx)


def reduce(strategy, reduce_op, value, axis=None):
    """``strategy.reduce(op, value, axis)``: one value from a per-replica one.

    Args:
        reduce_op: ``ReduceOp.SUM`` / ``ReduceOp.MEAN`` (or "SUM" / "MEAN").
        value: a ``PerReplica``, a list with one entry per replica, or one
            value (a single replica's, as TF takes a non-distributed value).
        axis: also reduce this axis of each value (e.g. the batch axis; MEAN
            then divides by the total count along it).

    Returns:
        A numpy array (a float for scalars).

    Raises:
        ValueError: another ``reduce_op``; replicas' values of different
            shapes (apart from ``axis``), naming the replicas.
        TypeError: a replica's value that is not a number or an array (e.g. a
            dict: reduce each of its values).
    """
    op = str(getattr(reduce_op, "value", reduce_op)).upper()
    if op not in (ReduceOp.SUM, ReduceOp.MEAN):
        raise ValueError(f"reduce expects ReduceOp.SUM or ReduceOp.MEAN. "
                         f"Received: {reduce_op!r}")
    if isinstance(value, SymbolicPerReplica):  # a graph tensor (TF 1.15 graph mode)
        return (K.sum if op == ReduceOp.SUM else K.mean)(value.tensor)
    if isinstance(value, PerReplica):
        values = list(value.values)
    elif isinstance(value, (list, tuple)):
        values = list(value)
    else:
        values = [value]
    arrays = _replica_arrays(values, axis)
    if axis is not None:
        total = sum(np.sum(a, axis=axis) for a in arrays)
        count = sum(a.shape[axis] for a in arrays)
        return total / count if op == ReduceOp.MEAN else total
    total = arrays[0].copy()
    for a in arrays[1:]:
        total = total + a
    out = total / len(arrays) if op == ReduceOp.MEAN else total
    return float(out) if np.ndim(out) == 0 else out


def _replica_arrays(values, axis) -> list:
    """The replicas' values as arrays, checked to have one shape (but along
    ``axis``): numpy would broadcast (1,) against (3,) silently."""
    arrays = []
    for r, v in enumerate(values):
        try:
            a = np.asarray(K.to_numpy(v))
        except ValueError:  # ragged nesting
            a = None
        if a is None or a.dtype.kind not in "biufc":
            raise TypeError(f"strategy.reduce expects each replica's value to be a "
                            f"number or a numeric array. Received for replica {r}: "
                            f"{type(v).__name__} {v!r:.100}")
        arrays.append(a)
    first = arrays[0].shape

    def key(shape):
        if axis is None or not shape:
            return shape
        i = axis % len(shape)
        return shape[:i] + shape[i + 1:]
    for r, a in enumerate(arrays[1:], 1):
        if key(a.shape) != key(first):
            along = "" if axis is None else f" apart from axis {axis}"
            raise ValueError(f"strategy.reduce expects every replica's value to "
                             f"have one shape{along}. Received: replica 0 shape "
                             f"{first}, replica {r} shape {a.shape}")
    return arrays


def local_results(value):
    """``strategy.experimental_local_results``: a tuple of the replicas' values."""
    return tuple(value.values) if isinstance(value, PerReplica) else (value,)


def gather(value, axis=0):
    """``strategy.gather``: the replicas' values concatenated along ``axis``."""
    return np.concatenate([np.atleast_1d(np.asarray(K.to_numpy(v)))
                           for v in local_results(value)], axis=axis)

