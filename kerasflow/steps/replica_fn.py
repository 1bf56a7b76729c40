"""The step ``strategy.run(fn)`` runs on replicas: ``fn`` traced once into a
``CustomTrainStep`` whose gradients are summed across replicas unscaled (the
user's loss already carries ``1 / global_batch_size``, as tf.distribute
expects) and whose return values come back one per replica.

Each replica writes its own return values into its slots of the reduced
buffer (replica r: slots ``r*k .. r*k+k-1``, zeros elsewhere), so the
summing allreduce that carries the gradients also gathers every replica's
values, with no second collective.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.sequencing import sequential_reads
from kerasflow.layers.tracing import collect_updates
from kerasflow.optimizers.apply_log import recording_applies
from kerasflow.steps.batch import StepResult
from kerasflow.steps.custom import CustomTrainStep, _splittable

__all__ = ["ReplicaFnStep", "trace_replica_fn"]


class ReplicaFnStep(CustomTrainStep):
    """A traced ``fn`` for ``strategy.run`` (see the module docstring).

    Attributes:
        num_returned: scalars ``fn`` returns.
    """

    def bind_replica(self, rank, world):
        """Called on each replica (and on the driver with rank 0): where this
        replica's returned values go in the reduced buffer."""
        self._rank, self._world = int(rank), int(world)
        self.num_outputs = 1 + self._world * self.num_returned

    uses_replica_id = False  # fn read replica_id_in_sync_group: fed per replica

    def _extra(self):
        rank = getattr(self, "_rank", 0)
        return [np.asarray(rank, "int32")] if self.uses_replica_id else []

    def _feed(self, arrays, global_batch_size):
        n = len(arrays[0]) if arrays else 0
        scale = np.asarray(n / global_batch_size, self.inputs[-1].dtype)
        return list(arrays) + self._extra() + [scale], n

    def compute_gradients(self, arrays, global_batch_size):
        """Gradients (unscaled), metric deltas and this replica's returned
        values spread into its slots."""
        del global_batch_size  # the user's loss carries the global batch size
        fn = self._fn("compute", lambda: K.Function(
            self.inputs, self.outputs + self.grads + self.deltas,
            updates=self.state_updates, name="replica_fn_compute"))
        n = len(arrays[0]) if arrays else 0
        out = fn(*(list(arrays) + self._extra()
                   + [np.asarray(1.0, self.inputs[-1].dtype)]))
        k, m = len(self.outputs), len(self.grads)
        flat = self.layout.pack(out[k:k + m])
        spread = [0.0] * (self._world * self.num_returned)
        at = self._rank * self.num_returned
        spread[at:at + self.num_returned] = [float(v) for v in out[1:k]]
        return StepResult(0.0, n, flat, [K.to_numpy(d) for d in out[k + m:]], spread)


def trace_replica_fn(call, inputs, world, context=None):
    """Traces ``call()`` (``fn`` on placeholders) into a ``ReplicaFnStep``.

    Args:
        context: the ``ReplicaContext`` ``fn`` saw; when ``fn`` read its
            ``replica_id_in_sync_group`` placeholder, each replica feeds it.

    Returns:
        ``(step, structure of fn's return value or None)``.

    Raises:
        ValueError: ``fn`` applied no gradients through
            ``optimizer.apply_gradients`` (or one variable twice), or returned
            something other than scalars.
    """
    with collect_updates() as updates, recording_applies() as applies, \
            sequential_reads():
        returned = call()
    flat = [] if returned is None else tree.flatten(returned)
    fetched = []
    for i, v in enumerate(flat):
        if not K.is_symbolic(v) or tuple(v.shape) != ():
            raise ValueError(
                f"strategy.run on replicas expects fn to return scalar tensors "
                f"(e.g. the replica's loss). Received: return value {i} of shape "
                f"{getattr(v, 'shape', None)} ({type(v).__name__}).")
        fetched.append((i, v))
    if not _splittable(applies, fetched):
        raise ValueError(
            "strategy.run on replicas expects fn to apply its gradients with "
            "optimizer.apply_gradients, each variable once, without reading a "
            "variable it already updated. Received: a fn that does not.")
    id_ph = getattr(context, "id_placeholder", None)
    step = ReplicaFnStep(list(inputs) + ([id_ph] if id_ph is not None else []),
                         [str(i) for i in range(len(flat))], fetched, [], [],
                         updates, applies)
    step.uses_replica_id = id_ph is not None
    step.num_returned = len(flat)
    step.bind_replica(0, world)
    return step, (None if returned is None else returned)
