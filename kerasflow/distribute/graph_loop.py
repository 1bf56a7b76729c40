"""TF 1.15's graph-mode custom loop: ``strategy.make_dataset_iterator(ds)``,
``strategy.experimental_run_v2(step_fn, args=(iterator.get_next(),))`` and
``strategy.reduce`` build graph tensors that a ``Session`` runs::

    iterator = strategy.make_dataset_iterator(dataset)      # global batches
    per_replica_loss = strategy.experimental_run_v2(step_fn, args=(iterator.get_next(),))
    loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)
    with tf.Session() as sess:
        sess.run(iterator.initialize())
        while True:
            try:
                print(sess.run(loss))          # one step on every replica
            except tf.errors.OutOfRangeError:
                break

``step_fn`` is traced as ``strategy.run`` traces it (``kerasflow.distribute.custom_loop``);
the returned per-replica values are the outputs of one ``ReplicaFnStep``
node, shape ``(num_replicas,)`` float64, whose kernel takes the iterator's
next global batch and runs the step on the replicas, once per
``Session.run`` however many reductions of it are fetched. The end of the
data raises ``OutOfRangeError`` as TF's iterators do.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.graph import Node, SymbolicTensor
from kerasflow.backend.registry import register_op
from kerasflow.data import iterator as iterator_lib
from kerasflow.distribute.values import SymbolicPerReplica
from kerasflow.errors import OutOfRangeError
from kerasflow.steps.batch import BatchRef

__all__ = ["DistributedIterator", "SymbolicPerReplica", "run_in_graph"]

_SOURCES: dict = {}  # id(placeholder node) -> (DistributedIterator, leaf index)


class DistributedIterator:
    """``strategy.make_dataset_iterator(dataset)``: ``get_next()`` is the
    element's structure of placeholders (batch axis None) for
    ``experimental_run_v2``; ``initialize()`` (or ``initializer``) is run by
    ``sess.run`` to start a pass over ``dataset``.

    Raises:
        ValueError: an empty dataset (its first element gives the structure).
    """

    def __init__(self, strategy, dataset):
        self.strategy, self.dataset = strategy, dataset
        first = next(iter(dataset), None)
        if first is None:
            raise ValueError("make_dataset_iterator expects a dataset with at least "
                             "one element. Received: an empty one.")
        flat = [np.asarray(a) for a in tree.flatten(first)]
        self._struct = first
        self._phs = [K.placeholder(a.dtype.name, (None,) + a.shape[1:],
                                   name=f"dist_iterator_{i}") for i, a in enumerate(flat)]
        for i, p in enumerate(self._phs):
            _SOURCES[id(p.node)] = (self, i)
        self._it = None

    def initialize(self):
        """What ``sess.run`` runs to start a pass (TF returns the init ops)."""
        return iterator_lib.Initializer(self, self.dataset)

    @property
    def initializer(self):
        return self.initialize()

    def _restart(self, dataset):
        self._it = iter(dataset)

    def get_next(self):
        return tree.pack_sequence_as(self._struct, list(self._phs))

    def __iter__(self):
        return self

    def __next__(self):
        """``get_next()``, as TF 1.15's graph-mode ``next(iterator)``: the
        element's tensors, which ``sess.run`` advances."""
        return self.get_next()

    def next_global(self):
        """The next global batch, flattened.

        Raises:
            OutOfRangeError: the pass is over, or ``initialize()`` was not run.
        """
        if self._it is None:
            raise OutOfRangeError("The distributed iterator is not initialized: run "
                                  "sess.run(iterator.initialize()) first.")
        batch = next(self._it, None)
        if batch is None:
            raise OutOfRangeError("End of sequence: the distributed iterator has no "
                                  "more elements.")
        return [np.asarray(a) for a in tree.flatten(batch)]


def _infer(**attrs):
    return ((attrs["world"],), "float64")


def _kernel(xp, *, strategy, step, source, order, world, k):
    arrays = source.next_global()
    (result,) = strategy.run_steps(step, [BatchRef([arrays[i] for i in order], None)])
    spread = np.asarray(result.output_losses, np.float64).reshape(world, k)
    outs = tuple(xp.asarray(spread[:, j]) for j in range(k))
    return outs[0] if k == 1 else outs


register_op("ReplicaFnStep", _infer, differentiable=False)(_kernel)


def run_in_graph(strategy, fn, args, kwargs, trace):
    """``experimental_run_v2`` on an iterator's ``get_next()`` tensors.

    Args:
        trace: ``(fn, inputs) -> (step, returned structure)`` (the replica
            tracing of ``kerasflow.distribute.custom_loop``).

    Raises:
        ValueError: symbolic arguments that are not one distributed
            iterator's ``get_next()``, or a ``fn`` returning nothing.
    """
    leaves = tree.flatten((list(args), dict(kwargs)))
    found = [_SOURCES.get(id(v.node)) for v in leaves if K.is_symbolic(v)]
    if not found or None in found or len({id(s) for s, _ in found}) != 1:
        raise ValueError("experimental_run_v2 in a graph expects its tensor arguments "
                         "from one strategy.make_dataset_iterator(...).get_next(). "
                         "Received: other tensors.")
    source = found[0][0]
    inputs = [v for v in leaves if K.is_symbolic(v)]
    step, struct = trace(lambda: fn(*args, **kwargs), inputs)
    k, world = step.num_returned, int(strategy.num_replicas_in_sync)
    if k == 0:
        raise ValueError("experimental_run_v2 in a graph expects step_fn to return "
                         "the values to fetch (e.g. the loss). Received: None.")
    attrs = dict(strategy=strategy, step=step, source=source,
                 order=[i for _, i in found], world=world, k=k)
    node = Node("ReplicaFnStep", (), attrs, "replica_fn_step")
    node.outputs = tuple(SymbolicTensor(node, j, (world,), "float64") for j in range(k))
    flat = [SymbolicPerReplica(t) for t in node.outputs]
    return tree.pack_sequence_as(struct, flat)
