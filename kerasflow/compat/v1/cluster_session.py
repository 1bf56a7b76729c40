"""Between-graph ``Session.run``: ps Variables pulled, updates pushed.

``tf.Session(server.target)`` on a worker of a TF 1.x cluster returns a
:class:`ClusterSession`. Variables created under ``tf.device(
tf.train.replica_device_setter(...))`` live on ps tasks (``graph.ps_vars``);
one ``run``:

1. pulls every ps Variable the fetches read, once, with one call per ps task
   (all tasks concurrently), into the worker's local copies;
2. runs the fetches on the worker in one compiled plan; a train op
   (``optimizer.minimize(loss, global_step)``) is replaced by its gradients,
   as a ``TrainStep`` splits it (compute here, apply on the ps);
3. pushes, with one call per ps task: each train op's gradient slice (the
   ps task applies it with the ParameterServerStrategy's shard, and
   increments ``global_step``) and the ``assign``/``assign_add`` results of
   the other fetched ops (TF1 ran those on the ps).

Async (TF1's default, Li et al., OSDI 2014, §3): each push is applied when it
arrives, on the ps task's current values. The fetched loss and the pushed
gradient are computed from the same pulled values.
"""

from __future__ import annotations

import hashlib
import re
import time

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.compat.v1.session import Session
from kerasflow.compat.v1.train import ApplyOp
from kerasflow.data import iterator as iterator_lib
from kerasflow.distribute.parameter_server.shard import encode_push, plan_shards
from kerasflow.distribute.tf1.server import server_for_target
from kerasflow.optimizers.train_op import TrainOp
from kerasflow.steps.step import TrainStep
from kerasflow.utils.graph_def import collect_nodes

__all__ = ["ClusterSession"]

_WRITES = {"Assign": "set", "AssignAdd": "add", "AssignSub": "add"}
_WORKER_RE = re.compile(r"/job:worker(?:/replica:\d+)?/task:(\d+)")


def check_worker_placement(graph, nodes, job_name, task_index):
    """Refuses compute that ``tf.device`` placed on another worker task
    (between-graph programs place ops on their own worker and ps tasks).

    Raises:
        ValueError: naming the op, its device and this task.
    """
    for node in nodes:
        spec = graph.device_of(node)
        m = _WORKER_RE.search(spec or "")
        if m and (job_name != "worker" or int(m.group(1)) != task_index):
            raise ValueError(
                f"Op '{node.name}' is placed on {spec!r}, another worker task: "
                f"expected ops on this task (/job:{job_name}/task:{task_index}) or "
                f"on ps tasks. Received device {spec!r}. Build each worker's "
                f"graph under its own worker_device.")


class _PSStep:
    """A train op split for the ps tasks: its ``TrainStep`` (trainable
    variables grouped by ps task), the shard plan and the step's key."""

    def __init__(self, train_op, ps_vars, num_ps, sync=None):
        self.sync = sync  # (replicas_to_aggregate, total) or None (async)
        self.rounds = [0] * num_ps  # the aggregation round each ps task is in
        var_list = list(train_op.var_list)
        local = [v.name for v in var_list if v not in ps_vars]
        if local:
            raise ValueError(f"A train op on a cluster expects every trained "
                             f"variable on a ps task (create them under "
                             f"tf.device(tf.train.replica_device_setter(...))). "
                             f"Received worker-local variables: {local}")
        var_list.sort(key=lambda v: ps_vars[v][0])  # stable: creation order per task
        inputs = [n.outputs[0] for n in collect_nodes([train_op.loss])
                  if n.op == "Placeholder"]
        gs = train_op.global_step
        extra = [] if gs is None else [K.assign_add(gs, K.cast(1, gs.dtype))]
        self.step = step = TrainStep(inputs, train_op.loss, train_op.optimizer,
                                     var_list, extra_updates=extra)
        self.plan = plan_shards(step, num_ps, placement=[
            ps_vars[v][0] for v in step.trainable_variables])
        self.keys = [ps_vars[v][1] if v in ps_vars else None for v in step.variables]
        # Each ps task adopts only the variables it holds.
        self.task_keys = [[k if k is not None and ps_vars[v][0] == t else None
                           for v, k in zip(step.variables, self.keys)]
                          for t in range(num_ps)]
        sig = [(k, tuple(v.shape), str(v.dtype)) for v, k in
               zip(step.variables, self.keys)]
        sig += [type(train_op.optimizer).__name__, sync]
        self.key = hashlib.sha1(repr(sig).encode()).hexdigest()[:16]
        self.reads = [v for v in K.reachable_variables(step.grads) if v in ps_vars]
        self.scale = step.inputs[-1]
        self.loaded = False

    def pushes(self, grads, num_ps):
        """Per ps task, the slices of the packed gradient it applies."""
        flat = K.to_numpy(self.step.layout.pack(grads))
        # Sync rounds sum dense slices on the ps; async pushes embedding rows sparse.
        sl = [flat[p[0]:p[1]] if self.sync else encode_push(flat, *p)
              for p in self.plan["push"][:num_ps]]
        if not self.plan["separable"]:  # every task runs the full apply
            return [tuple(sl)] * num_ps
        return [(s,) for s in sl]


class _ApplyAsTrainOp:
    """``opt.apply_gradients(grads_and_vars, global_step)`` seen as a train op,
    so the ps applies it as it applies a ``minimize``: the surrogate loss
    ``sum_i sum(stop_gradient(g_i) * v_i)`` has exactly the given (clipped,
    scaled, ...) gradients ``g_i`` with respect to the ``v_i``."""

    def __init__(self, op):
        pairs = [(g, v) for g, v in op.grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("apply_gradients() on a cluster expects at least one "
                             "(gradient, variable) pair with a gradient. Received: "
                             "none.")
        self.var_list = [v for _, v in pairs]
        self.loss = K.add_n([K.sum(K.stop_gradient(g) * v) for g, v in pairs])
        self.optimizer, self.global_step = op.optimizer, op.global_step


class _RunPlan:
    """What one fetch signature reads from and writes to the ps tasks."""

    def __init__(self, session, flat):
        ps = session.graph.ps_vars
        self.steps, self.others, self.where = [], [], []
        for f in flat:
            if isinstance(f, TrainOp) and any(v in ps for v in f.var_list):
                self.where.append(("step", len(self.steps)))
                self.steps.append(session.ps_step(f))
            elif isinstance(f, ApplyOp) and any(
                    v in ps for _, v in f.grads_and_vars):
                self.where.append(("step", len(self.steps)))
                self.steps.append(session.ps_step(f))
            else:
                self.where.append(("other", len(self.others)))
                self.others.append(f)
        reads, writes = {}, {}
        tensors = [f for f in self.others if isinstance(f, K.SymbolicTensor)]
        for f in tensors:
            if f.node.op == "Variable" and f.node.attrs["variable"] in ps:
                reads[f.node.attrs["variable"]] = True
        nodes = collect_nodes(tensors + [g for st in self.steps for g in st.step.grads])
        server = session.server
        check_worker_placement(session.graph, nodes, server.job_name, server.task_index)
        for n in nodes:
            for i, t in enumerate(n.inputs):
                if getattr(t, "node", None) is None or t.node.op != "Variable":
                    continue
                var = t.node.attrs["variable"]
                if var not in ps:
                    continue
                mode = _WRITES.get(n.op) if i == 0 else None
                if mode is not None:
                    writes[var] = "set" if "set" in (mode, writes.get(var)) else mode
                if mode != "set":
                    reads[var] = True
        for st in self.steps:
            reads.update(dict.fromkeys(st.reads, True))
        self.reads, self.writes = list(reads), list(writes.items())


class ClusterSession(Session):
    """A worker's session on a TF1 cluster (see the module docstring).

    Args:
        target: a ``tf.train.Server``'s ``server.target`` in this process.
        graph, config: as for ``tf.Session``.

    Attributes:
        server: the Server. timing: seconds spent pulling, computing and
            pushing, and the number of runs (``pull``, ``compute``,
            ``push``, ``runs``).

    Raises:
        ValueError: ``target`` is no Server of this process.
        TimeoutError: a ps task did not come within the server's timeout.
    """

    def __init__(self, target="", graph=None, config=None):
        self.server = server_for_target(target)
        super().__init__(target, graph, config)
        self.num_ps = self.server.num_ps
        self._client = self.server.ps_client() if self.num_ps else None
        self._steps: dict = {}
        self._plans: dict = {}
        self.timing = dict(pull=0.0, compute=0.0, push=0.0, runs=0)

    def ps_step(self, train_op):
        st = self._steps.get(id(train_op))
        if st is None:
            op = _ApplyAsTrainOp(train_op) if isinstance(train_op, ApplyOp) else train_op
            st = self._steps[id(train_op)] = (train_op, _PSStep(
                op, self.graph.ps_vars, self.num_ps,
                self.graph.sync_replicas.get(train_op)))
        return st[1]

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """As ``tf.Session.run``; ps Variables are pulled and updates pushed.

        Raises:
            TimeoutError / RuntimeError: a ps task did not answer within the
                server's timeout, or died (naming it).
        """
        if not self.graph.ps_vars or not self.num_ps or isinstance(
                fetches, iterator_lib.Initializer):
            return super().run(fetches, feed_dict, options, run_metadata)
        t0 = time.perf_counter()
        flat = tree.flatten(fetches)
        feeds = dict(feed_dict or {})
        sig = (tuple(id(f) for f in flat), tuple(id(k) for k in feeds))
        plan = self._plans.get(sig)
        if plan is None:
            plan = self._plans[sig] = _RunPlan(self, flat)
        before = self.pull(plan.reads)
        t1 = time.perf_counter()
        for st in plan.steps:
            feeds[st.scale] = np.asarray(1.0, st.scale.dtype)
        grads = [g for st in plan.steps for g in st.step.grads]
        out = super().run(list(plan.others) + grads, feeds, options, run_metadata)
        t2 = time.perf_counter()
        self._push(plan, out[len(plan.others):], before)
        t3 = time.perf_counter()
        values = [None if kind == "step" else out[i] for kind, i in plan.where]
        tm = self.timing
        tm["pull"] += t1 - t0
        tm["compute"] += t2 - t1
        tm["push"] += t3 - t2
        tm["runs"] += 1
        return tree.pack_sequence_as(fetches, values)

    def pull(self, variables):
        """Sets the local copies of ps ``variables`` from their ps tasks (one
        call per task); returns ``{var: value}``."""
        ps = self.graph.ps_vars
        by_task = {}
        for v in variables:
            by_task.setdefault(ps[v][0], []).append(v)
        if not by_task:
            return {}
        got = self._client.call({k: ("pull", ([ps[v][1] for v in vs],))
                                 for k, vs in by_task.items()})
        values = {}
        for k, vs in by_task.items():
            for v, value in zip(vs, got[k]):
                v.assign(np.array(value))
                values[v] = value
        return values

    def publish(self, variables):
        """Sets ps ``variables`` on their tasks to the local values (after
        an initializer or a restore)."""
        ps = self.graph.ps_vars
        calls = {}
        for v in variables:
            if v in ps:
                calls.setdefault(ps[v][0], []).append((ps[v][1], "set", v.numpy()))
        if calls:
            self._client.call({k: ("push", ([], items)) for k, items in calls.items()})

    def _push(self, plan, grads, before):
        ps = self.graph.ps_vars
        calls = {k: ([], []) for k in range(self.num_ps)}
        at = 0
        for st in plan.steps:
            n = len(st.step.grads)
            if not st.loaded:
                self._client.call({k: ("load_step", (st.key, st.step, st.plan,
                                                     st.task_keys[k], st.sync))
                                   for k in range(self.num_ps)})
                st.loaded = True
            for k, sl in enumerate(st.pushes(grads[at:at + n], self.num_ps)):
                calls[k][0].append((st.key, sl) if st.sync is None else
                                   (st.key, sl, st.rounds[k], self.server.task_index))
            at += n
        for var, mode in plan.writes:
            value = var.numpy()
            if mode == "add":
                value = value - before[var]
            calls[ps[var][0]][1].append((ps[var][1], mode, value))
        calls = {k: c for k, c in calls.items() if c[0] or c[1]}
        if calls:
            got = self._client.call({k: ("push", c) for k, c in calls.items()})
            for j, st in enumerate(plan.steps):  # push returns: one per step
                if st.sync is not None:
                    self._wait_rounds(st, {k: got[k][j] for k in range(self.num_ps)})

    def _wait_rounds(self, st, now):
        """Blocks until every ps task has applied the round this worker
        pushed to (TF1's token queue), polling; bounded by the timeout.

        Raises:
            TimeoutError: naming the ps task, the round, the workers whose
                gradients arrived and the ones missing.
        """
        deadline = time.monotonic() + self.server.timeout
        for k in range(self.num_ps):
            mine, at, who, n = st.rounds[k], now[k], [], st.sync[0]
            while at <= mine:
                if time.monotonic() > deadline:
                    total = range(st.sync[1])
                    raise TimeoutError(
                        f"Sync round {mine} on /job:ps/task:{k} did not complete "
                        f"within {self.server.timeout:g} s: expected {n} "
                        f"gradients. Received {len(who)} (from workers {who}); "
                        f"missing: workers {[w for w in total if w not in who]}.")
                time.sleep(0.002)
                at, who, n = self._client.call({k: ("sync_state", (st.key,))})[k]
            st.rounds[k] = at

    def missing(self):
        """``{ps task: keys not initialized yet}`` of this graph's ps
        Variables (empty when the chief has initialized them all)."""
        by_task = {}
        for k, key in self.graph.ps_vars.values():
            by_task.setdefault(k, []).append(key)
        got = self._client.call({k: ("missing", (keys,))
                                 for k, keys in by_task.items()})
        return {k: m for k, m in got.items() if m}
