"""``tf.train.SyncReplicasOptimizer`` (TF 1.x ``sync_replicas_optimizer.py``):
synchronous training of between-graph replicas.

Each worker's gradient is sent to the ps tasks with the aggregation round it
was computed in; the ps task sums the round's gradients, drops stale ones
(computed in an earlier round), and once ``replicas_to_aggregate`` have
arrived applies their mean with the wrapped optimizer (one ``global_step``
increment). The worker's ``sess.run(train_op)`` returns once the round it
pushed to has been applied (TF1's token queue), waiting at most the
Server's timeout. The aggregation runs on the ps tasks themselves, so the
chief's queue runner and init tokens of TF1 exist only as names to call.
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.monitored_session import SessionRunHook

__all__ = ["SyncReplicasOptimizer"]


class _ChiefQueueRunner:
    """Stands for TF1's chief queue runner (the ps aggregates by itself)."""

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        return []


class SyncReplicasOptimizer:
    """Wraps an optimizer so that workers train in synchronous rounds.

    Args:
        opt: the ``tf.train`` optimizer applying each round's mean gradient.
        replicas_to_aggregate: gradients averaged per round (int >= 1).
        total_num_replicas: workers pushing (default
            ``replicas_to_aggregate``); with more workers than gradients
            aggregated, the late ones' gradients are dropped as stale.

    Raises:
        ValueError: a count below 1.

    Example:
        >>> opt = tf.train.SyncReplicasOptimizer(
        ...     tf.train.GradientDescentOptimizer(0.5), replicas_to_aggregate=2,
        ...     total_num_replicas=2)
        >>> train_op = opt.minimize(loss, global_step=global_step)
    """

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None,
                 use_locking=False, name="sync_replicas"):
        total = replicas_to_aggregate if total_num_replicas is None \
            else total_num_replicas
        for what, n in (("replicas_to_aggregate", replicas_to_aggregate),
                        ("total_num_replicas", total)):
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"SyncReplicasOptimizer expects {what} >= 1. "
                                 f"Received: {what}={n!r}")
        self._opt = opt
        self.replicas_to_aggregate = replicas_to_aggregate
        self.total_num_replicas = total
        self.name = name

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def minimize(self, loss, global_step=None, var_list=None, **kwargs):
        """The wrapped optimizer's train op, run in synchronous rounds on a
        cluster (in one process it is a plain step)."""
        op = self._opt.minimize(loss, global_step=global_step, var_list=var_list)
        G.get_default_graph().sync_replicas[op] = (self.replicas_to_aggregate,
                                                   self.total_num_replicas)
        # TF1 builds these for its token queues with the train op; the ps
        # aggregates rounds by itself, so they are no-ops a program may run
        # or hand to its Supervisor (mnist_replica.py does both).
        self.local_step_init_op, self.chief_init_op, self.ready_for_local_init_op = (
            G.track(K.no_op(name=f"{self.name}/{what}"))
            for what in ("local_step_init", "chief_init", "ready_for_local_init"))
        return op

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Raises NotImplementedError: use :meth:`minimize` (the round is
        aggregated for a train op that ``minimize`` builds)."""
        raise NotImplementedError("SyncReplicasOptimizer.apply_gradients is not "
                                  "provided yet; use minimize(loss, global_step).")

    def get_chief_queue_runner(self):
        return _ChiefQueueRunner()

    def get_init_tokens_op(self, num_tokens=-1):
        return G.track(K.no_op(name=f"{self.name}/init_tokens"))

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        return SessionRunHook()

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)
