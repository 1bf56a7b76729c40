"""A TF1 ps task's variables, hosted in one Ray actor per ps task.

TF 1.x's between-graph replication (``tf.train.replica_device_setter``)
places every Variable on a ps task; workers read them over the network and
send updates there (Li et al., OSDI 2014, §3: "server nodes maintain a
partition of the globally shared parameters"; workers pull and push).

:class:`PSTask` keeps those variables by key (the names the workers'
graphs agree on) and applies pushed gradients with the
ParameterServerStrategy's shard object (``parameter_server.shard.PSShard``): a worker
ships its ``TrainStep`` once, this task loads it into a shard for its range
of the step's flat gradient layout, and every push runs that shard's
optimizer apply on the stored variables. Async (TF1's default): each push is
applied when it arrives; Ray runs one method of an actor at a time, so a
push is applied whole, never interleaved with another or with a pull.

This module does not import ray: ``server.py`` hosts :class:`PSTask` in a
named actor through ``worker_group``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from kerasflow import backend as K
from kerasflow.distribute.parameter_server.shard import PSShard

__all__ = ["PSTask"]


class PSTask:
    """Actor body of ``/job:ps/task:<index>``.

    Args:
        index: this ps task's index; num_ps: the number of ps tasks.

    Attributes:
        pushes: gradient pushes applied (all steps together).
    """

    def __init__(self, index, num_ps):
        self.index, self.num_ps = int(index), int(num_ps)
        self.task = f"/job:ps/task:{self.index}"
        self.vars: dict = {}    # key -> Variable (a loaded step's, once adopted)
        self.initialized = False
        self.shards: dict = {}  # step key -> (PSShard, keys of step.variables)
        self.pushes = self.dropped = 0
        self.apply_seconds = 0.0
        self.sync: dict = {}    # step key -> aggregation state (sync replicas)

    def ping(self):
        return dict(task=self.task, pid=os.getpid(), initialized=self.initialized,
                    pushes=self.pushes, variables=len(self.vars))

    def missing(self, keys):
        """The keys among ``keys`` that no worker has set yet (the chief's
        ``init_op`` sets them all in one push)."""
        return [k for k in keys if k not in self.vars]

    def pull(self, keys):
        """Current values of the variables ``keys``, in order.

        Raises:
            KeyError: a key this task does not hold (naming it).
        """
        return [np.asarray(self._var(key).numpy()) for key in keys]

    def _var(self, key):
        var = self.vars.get(key)
        if var is None:
            raise KeyError(f"{self.task} holds no variable '{key}': expected one of "
                           f"{sorted(self.vars)}. Was the chief's init_op run?")
        return var

    def assign(self, items):
        """Applies ``[(key, "set"|"add", value)]`` in order (TF1's ``assign``
        and ``assign_add`` run on the ps; a "set" creates the variable, as
        the chief's initializer does); returns the new values."""
        out = []
        for key, mode, value in items:
            value = np.array(value)  # a writable copy of the shared-memory view
            if mode == "set" and key not in self.vars:
                self.vars[key] = K.Variable(value, trainable=False, name=key)
                self.initialized = True
            else:
                var = self._var(key)
                value = value.astype(var.dtype, copy=False)
                var.assign(value if mode == "set" else var.numpy() + value)
            out.append(np.asarray(self.vars[key].numpy()))
        return out

    def push(self, applies, assigns):
        """One worker run's updates for this task: ``applies`` ``[(step key,
        slices)]`` (see :meth:`apply`) or ``[(step key, slices, round,
        worker)]`` (see :meth:`push_sync`), then ``assigns`` (see
        :meth:`assign`); returns the versions (async) or rounds (sync)."""
        versions = [self.apply(a[0], *a[1]) if len(a) == 2 else
                    self.push_sync(a[0], a[2], a[3], a[1]) for a in applies]
        if assigns:
            self.assign(assigns)
        return versions

    def load_step(self, key, step, plan, var_keys, sync=None):
        """Keeps a shard running ``step``'s optimizer apply for this task's
        range of ``plan``; a step already loaded under ``key`` is kept.
        ``sync``: ``(replicas_to_aggregate, total_num_replicas)`` for a
        ``SyncReplicasOptimizer``'s step, else None (async).

        Args:
            key: the step's signature (same on every worker running the same
                program). step: a ``TrainStep``. plan: ``shard.plan_shards``
                with this task's variables as shard ``index``.
            var_keys: per ``step.variables`` entry, its ps key or None.
        """
        if key not in self.shards:
            shard = PSShard(self.index, self.num_ps)
            shard.load(step, plan)
            self.shards[key] = (shard, list(var_keys))
        if sync is not None and key not in self.sync:
            self.sync[key] = dict(round=0, acc=None, who=[], n=int(sync[0]),
                                  total=int(sync[1]))
        return True

    def push_sync(self, key, round_, worker, slices):
        """A ``SyncReplicasOptimizer`` push (TF1's gradient accumulators): a
        gradient computed in aggregation round ``round_`` is added to the
        round's sum, a stale one (an earlier round) is dropped; when
        ``replicas_to_aggregate`` have arrived their mean is applied once
        (one ``global_step`` increment) and the round advances. Returns the
        current round."""
        st = self.sync[key]
        if round_ != st["round"]:
            self.dropped += 1
            return st["round"]
        arrays = [np.array(g) for g in slices]
        st["acc"] = arrays if st["acc"] is None else [
            np.add(a, b, out=a) for a, b in zip(st["acc"], arrays)]
        st["who"].append(worker)
        if len(st["who"]) >= st["n"]:
            self.apply(key, *[a / st["n"] for a in st["acc"]])
            st.update(round=st["round"] + 1, acc=None, who=[])
        return st["round"]

    def sync_state(self, key):
        """``(round, workers whose gradient the round has, needed)``."""
        st = self.sync[key]
        return st["round"], list(st["who"]), st["n"]

    def apply(self, key, *slices):
        """One push: the gradient slice(s) of step ``key`` applied by the
        shard to the stored variables; returns the shard's version."""
        t0 = time.perf_counter()
        shard, keys = self.shards[key]
        # The stored variables become the step's own (one copy, updated in
        # place by the apply); a variable another step adopted is copied in.
        for var, k in zip(shard.step.variables, keys):
            held = self.vars.get(k)
            if k is None or held is None or held is var:
                continue
            var.assign(held.numpy())
            self.vars[k] = var
        version = shard.apply(None, *slices)
        self.pushes += 1
        self.apply_seconds += time.perf_counter() - t0
        return version
