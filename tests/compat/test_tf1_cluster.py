"""TF1 between-graph clusters: ClusterSpec, replica_device_setter, Server's
bad input, and the lecture's program as 3 OS processes (1 ps, 2 workers) on
a real Ray started by the ps task."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kerasflow.compat.v1 as tf
from kerasflow.backend import jit
from kerasflow.distribute.tf1.server import descendants
from tests.listeners import listening

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tf1_between_graph_mnist.py"


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# -- ClusterSpec -------------------------------------------------------------------
def test_cluster_spec_dict_and_queries():
    spec = tf.train.ClusterSpec({"ps": ["h0:2222"], "worker": ["h1:2222", "h2:2223"]})
    assert spec.as_dict() == {"ps": ["h0:2222"], "worker": ["h1:2222", "h2:2223"]}
    assert spec.jobs == ["ps", "worker"]
    assert spec.num_tasks("worker") == 2
    assert spec.job_tasks("worker") == ["h1:2222", "h2:2223"]
    assert spec.task_address("worker", 1) == "h2:2223"
    assert tf.train.ClusterSpec(spec) == spec


def test_cluster_spec_sparse_job_and_tf_config():
    spec = tf.train.ClusterSpec({"worker": {1: "h1:1", 3: "h3:3"}})
    assert spec.job_tasks("worker") == [None, "h1:1", None, "h3:3"]
    assert spec.num_tasks("worker") == 2
    cfg = json.dumps({"cluster": {"ps": ["a:1"], "worker": ["b:2"]},
                      "task": {"type": "worker", "index": 0}})
    assert tf.train.ClusterSpec.from_tf_config(cfg).as_dict() == {
        "ps": ["a:1"], "worker": ["b:2"]}


def test_cluster_spec_rejects_bad_addresses():
    with pytest.raises(ValueError, match="'host:port'.*'nohostport'"):
        tf.train.ClusterSpec({"ps": ["nohostport"]})
    with pytest.raises(TypeError, match="job 'ps'.*Received: 3"):
        tf.train.ClusterSpec({"ps": 3})


# -- replica_device_setter ---------------------------------------------------------
def _placements(setter, shapes):
    tf.reset_default_graph()
    with tf.device(setter):
        vs = [tf.Variable(tf.zeros(s), name=f"v{i}") for i, s in enumerate(shapes)]
        local = tf.Variable(0.0, name="not_ps")
    ps = tf.get_default_graph().ps_vars
    out = [ps[v][0] for v in vs]
    assert local in ps  # created under the setter: a Variable, so on a ps task
    tf.reset_default_graph()
    return out


def test_replica_device_setter_round_robin():
    cluster = {"ps": ["a:1", "b:2"], "worker": ["c:3"]}
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                            cluster=cluster)
    assert setter.worker_device == "/job:worker/task:0"
    assert _placements(setter, [(3,), (4,), (5,), (6,)]) == [0, 1, 0, 1]


def test_replica_device_setter_greedy_by_bytes():
    setter = tf.train.replica_device_setter(
        ps_tasks=2, ps_strategy=tf.train.GreedyLoadBalancingStrategy(2))
    # 400 B -> 0; 40 B -> 1; 40 B -> 1 (80 < 400); 400 B -> 1 (80 < 400)
    assert _placements(setter, [(100,), (10,), (10,), (100,)]) == [0, 1, 1, 1]


def test_replica_device_setter_ps_device_with_a_device():
    # mnist_replica.py's ps_device="/job:ps/cpu:0": job "ps" of the cluster,
    # each variable's task merged in after the job, as TF1 does.
    cluster = {"ps": ["a:1", "b:2"], "worker": ["c:3"]}
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0/cpu:0",
                                            ps_device="/job:ps/cpu:0", cluster=cluster)
    assert _placements(setter, [(3,), (4,), (5,)]) == [0, 1, 0]
    setter = tf.train.replica_device_setter(ps_device="/job:ps/cpu:0", cluster=cluster)
    var = type("Op", (), {"type": "VariableV2"})()
    assert [setter(var), setter(var)] == ["/job:ps/task:0/cpu:0", "/job:ps/task:1/cpu:0"]
    assert tf.train.replica_device_setter(ps_device="/job:param/cpu:0",
                                          cluster=cluster) is None  # no such job


def test_replica_device_setter_without_ps_is_none():
    assert tf.train.replica_device_setter(cluster={"worker": ["a:1"]}) is None


def test_string_ps_device_places_variables():
    tf.reset_default_graph()
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(1.0, name="w")
    with tf.device("/job:worker/task:0"):
        u = tf.Variable(1.0, name="u")
    ps = tf.get_default_graph().ps_vars
    assert ps[v] == (1, v.name) and u not in ps  # names are unique per process
    tf.reset_default_graph()


# -- Server: bad input -------------------------------------------------------------
CLUSTER = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}


def test_server_task_index_outside_cluster():
    with pytest.raises(ValueError, match=r"Task index 2 is not in job 'worker'.*"
                                         r"expected one of \[0, 1\].*task_index=2"):
        tf.train.Server(CLUSTER, job_name="worker", task_index=2)


def test_server_job_not_in_cluster():
    with pytest.raises(ValueError, match=r"Job name 'chief' is not in the "
                                         r"ClusterSpec: expected one of \['ps', "
                                         r"'worker'\].*job_name='chief'"):
        tf.train.Server(CLUSTER, job_name="chief", task_index=0)


def test_server_task_takes_its_share_of_the_host(monkeypatch):
    for var in jit.THREAD_VARIABLES:  # as a user who set none of them
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "")  # restored after the test
    cluster = {"ps": ["127.0.0.1:1"], "worker": ["localhost:2", "10.255.0.9:3"]}
    server = tf.train.Server(cluster, job_name="worker", task_index=0, start=False)
    share = max(1, (os.cpu_count() or 1) // 2)  # the 10.x task is another host's
    assert (server.threads["local_tasks"], server.threads["share"]) == (2, share)
    assert jit.blas_threads() == share == server.threads["blas"]
    assert jit.num_threads(jit.numba_module()) == share


def test_server_unreachable_ps_fails_within_deadline(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (port,) = _free_ports(1)  # nothing listens there
    cluster = {"ps": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:2"]}
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=rf"/job:ps/task:0 did not come: expected "
                                           rf".*127.0.0.1:{port}. Received: .*refused"):
        tf.train.Server(cluster, job_name="worker", task_index=0, timeout=2.0)
    assert time.monotonic() - t0 < 10.0


def test_session_target_must_be_a_server():
    with pytest.raises(ValueError, match="server.target.*grpc://nowhere:1"):
        tf.Session("grpc://nowhere:1")


# -- the lecture's program as 3 processes ------------------------------------------
def _shm():
    """/dev/shm's entries, less Python's multiprocessing semaphores (other
    tests' process pools release theirs on their own schedule)."""
    try:
        return {n for n in os.listdir("/dev/shm") if not n.startswith("sem.mp-")}
    except OSError:
        return set()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _result(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert lines, out[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


STEPS = 100  # per worker: 200 async updates in all


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               KERASFLOW_DATA_DIR=os.environ.get("KERASFLOW_DATA_DIR",
                                                 "/work/shared/data"),
               KERASFLOW_CLUSTER_TIMEOUT="120")
    env.pop("RAY_ADDRESS", None)
    return env


def _run_cluster(tmp_path, steps, extra=(), before_stop=None):
    """Runs the example as 1 ps + 2 worker processes; returns the workers'
    results after stopping the ps with SIGTERM and checking it left nothing."""
    ps_port, w0, w1 = _free_ports(3)
    env = _env()
    args = [sys.executable, str(EXAMPLE), f"--ps_hosts=127.0.0.1:{ps_port}",
            f"--worker_hosts=127.0.0.1:{w0},127.0.0.1:{w1}", f"--steps={steps}",
            f"--logs_path={tmp_path}", *extra]
    shm_before = _shm()
    ps = subprocess.Popen(args + ["--job_name=ps", "--task_index=0"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    workers = [subprocess.Popen(args + ["--job_name=worker", f"--task_index={i}"],
                                env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
               for i in range(2)]
    started = set()
    try:
        outs = []
        for w in workers:
            out, _ = w.communicate(timeout=240)
            outs.append(out)
            assert w.returncode == 0, out[-3000:]
        started = descendants(ps.pid)  # the Ray processes the ps task started
        assert started, "the ps task started no Ray processes"
        if before_stop is not None:
            before_stop(args, env, ps_port)
        ps.send_signal(signal.SIGTERM)
        ps_out, _ = ps.communicate(timeout=60)
        assert ps.returncode == 0, ps_out[-3000:]
    finally:
        for p in [ps, *workers]:
            if p.poll() is None:
                p.kill()
                p.wait()
    time.sleep(1.0)
    assert [p for p in started if _alive(p)] == []
    assert _shm() - shm_before == set()
    return [_result(o) for o in outs]


_STRANGER = """
import sys, ray
ray.init(address=sys.argv[1])
print("JOINED", flush=True)
"""


def _strangers_cannot_join(env, ps_port):
    """Processes that know the ClusterSpec (the head's address) but not the
    job's secret cannot join the cluster's Ray, so they can neither set a ps
    variable nor run a task (the workers' global step stays theirs); the
    head's Ray listens on the task's loopback address, not every interface."""
    assert listening().get(ps_port) == "127.0.0.1"
    base = {k: v for k, v in env.items() if not k.startswith("RAY_")}
    base.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_NUM_REDIS_GET_RETRIES="3")
    tries = [dict(base, RAY_AUTH_MODE="disabled"),
             dict(base, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64)]
    procs = [subprocess.Popen([sys.executable, "-c", _STRANGER, f"127.0.0.1:{ps_port}"],
                              env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for e in tries]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert "JOINED" not in out and p.returncode != 0, err[-2000:]


def _claim_ps0_again(args, env, ps_port):
    _strangers_cannot_join(env, ps_port)
    # A second process claiming /job:ps/task:0 (joining the same Ray).
    dup = subprocess.run(args + ["--job_name=ps", "--task_index=0"],
                         env=dict(env, RAY_ADDRESS=f"127.0.0.1:{ps_port}"),
                         capture_output=True, text=True, timeout=120)
    assert dup.returncode != 0
    assert "/job:ps/task:0 is already served by another process" in dup.stderr


@pytest.mark.ray  # 45 s (up to 80 s under heavy load; Ray head start ~15 s)
def test_lecture_program_one_ps_two_workers(tmp_path):
    results = _run_cluster(tmp_path, STEPS, before_stop=_claim_ps0_again)
    # Shared, not copied: every push increments the one global step on the ps,
    # and the worker finishing last reads all of them.
    assert max(r["global_step"] for r in results) == 2 * STEPS
    assert all(STEPS <= r["global_step"] <= 2 * STEPS for r in results)
    # One process with 200 updates of the same model reaches 0.87-0.89; async
    # updates from stale weights cost a little.
    assert max(r["accuracy"] for r in results) >= 0.84, results
    for i in range(2):  # every worker wrote its summaries
        assert list((tmp_path / f"worker{i}").glob("events.out.tfevents.*"))


@pytest.mark.ray
@pytest.mark.slow  # 41 s, on top of the async test's cluster start
def test_lecture_program_sync_replicas_equals_one_process(tmp_path):
    steps = 40
    results = _run_cluster(tmp_path, steps, extra=["--sync_replicas"])
    # One global step per aggregated round, and both workers end on the same
    # weights: the mean of their two 100-row gradients per round.
    assert [r["global_step"] for r in results] == [steps, steps]
    assert results[0]["accuracy"] == results[1]["accuracy"]
    # ... which is one process taking the same 200-row batches (worker t's
    # batch i is rows (2i + t) * 100 ...: the two make rows 200i ... 200i+199).
    single = subprocess.run(
        [sys.executable, str(EXAMPLE), "--job_name=single", f"--steps={steps}",
         "--batch_size=200", f"--logs_path={tmp_path}"],
        env=_env(), capture_output=True, text=True, timeout=240)
    assert single.returncode == 0, single.stderr[-3000:]
    one = _result(single.stdout)
    assert results[0]["accuracy"] == pytest.approx(one["accuracy"], abs=2e-3)


# -- Supervisor / MonitoredTrainingSession in one process -------------------------
def _linear_model():
    # Node names are unique per process: a "restarted" program in this process
    # names its variables for the checkpoint (a real restart needs no names).
    tf.reset_default_graph()
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None])
    w = tf.Variable(0.0, name="w")
    loss = tf.reduce_mean(tf.square(2.0 * x - w * x))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return gs, x, w, train_op, tf.train.Saver({"w": w, "global_step": gs})


def test_supervisor_chief_initializes_saves_and_restores(tmp_path):
    gs, x, w, train_op, saver = _linear_model()
    sv = tf.train.Supervisor(is_chief=True, logdir=str(tmp_path), global_step=gs,
                             saver=saver)
    with sv.managed_session() as sess:
        for _ in range(5):
            sess.run(train_op, feed_dict={x: [1.0, 2.0]})
        saved_w = float(sess.run(w))
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    gs, x, w, train_op, saver = _linear_model()  # a restarted chief resumes
    sv = tf.train.Supervisor(is_chief=True, logdir=str(tmp_path), global_step=gs,
                             saver=saver)
    sess = sv.prepare_or_wait_for_session()
    assert int(sess.run(gs)) == 5 and float(sess.run(w)) == pytest.approx(saved_w)
    sv.stop()
    tf.reset_default_graph()


def test_monitored_training_session_stop_at_step(tmp_path):
    gs, x, w, train_op, saver = _linear_model()
    hooks = [tf.train.StopAtStepHook(last_step=7)]
    runs = 0
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), hooks=hooks,
            scaffold=tf.train.Scaffold(saver=saver)) as sess:
        while not sess.should_stop():
            sess.run(train_op, feed_dict={x: [1.0]})
            runs += 1
    assert runs == 7
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-7")
    gs, x, w, train_op, saver = _linear_model()
    hooks = [tf.train.StopAtStepHook(num_steps=3)]
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), hooks=hooks,
            scaffold=tf.train.Scaffold(saver=saver)) as sess:
        while not sess.should_stop():
            step = sess.run([train_op, gs], feed_dict={x: [1.0]})[1]
    assert step == 9  # resumed at 7, three more steps (fetched before the last +1)
    tf.reset_default_graph()


def test_sync_replicas_init_ops_and_supervisor_take_them(tmp_path):
    # mnist_replica.py --sync_replicas: the ops TF1 builds for its token queues
    # run (as no-ops), and the Supervisor accepts them.
    tf.reset_default_graph()
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None])
    w = tf.Variable(1.0, name="w")
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=2, total_num_replicas=2)
    train_op = opt.minimize(tf.reduce_mean(tf.square(w * x)), global_step=gs)
    sv = tf.train.Supervisor(is_chief=True, logdir=str(tmp_path), global_step=gs,
                             init_op=tf.global_variables_initializer(),
                             local_init_op=opt.chief_init_op,
                             ready_for_local_init_op=opt.ready_for_local_init_op,
                             recovery_wait_secs=1)
    sess = sv.prepare_or_wait_for_session()
    sess.run([opt.local_step_init_op, opt.chief_init_op, opt.get_init_tokens_op()])
    assert sv.start_queue_runners(sess, [opt.get_chief_queue_runner()]) == []
    sess.run(train_op, feed_dict={x: [1.0]})  # one process: a plain step
    assert int(sess.run(gs)) == 1 and float(sess.run(w)) == pytest.approx(0.8)
    sv.stop()
    tf.reset_default_graph()


def test_stop_at_step_hook_bad_arguments():
    with pytest.raises(ValueError, match="exactly one of num_steps and last_step"):
        tf.train.StopAtStepHook()


# -- the ps task's apply path, without Ray ------------------------------------------
def _ps_model():
    from kerasflow.compat.v1.cluster_session import _PSStep  # noqa: PLC0415

    tf.reset_default_graph()
    with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        gs = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None])
        w = tf.Variable(1.0, name="w")
        loss = tf.reduce_mean(tf.square(w * x))  # d/dw = 2 w mean(x^2)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=2)
        train_op = opt.minimize(loss, global_step=gs)
    graph = tf.get_default_graph()
    st = _PSStep(train_op, graph.ps_vars, 1, graph.sync_replicas[train_op])
    keys = {v: k for v, (_, k) in graph.ps_vars.items()}
    return st, keys[w], keys[gs]


def test_ps_task_sync_round_averages_and_drops_stale():
    import numpy as np  # noqa: PLC0415

    from kerasflow.distribute.tf1.ps_task import PSTask  # noqa: PLC0415

    st, wk, gk = _ps_model()
    task = PSTask(0, 1)
    task.assign([(wk, "set", np.float32(1.0)), (gk, "set", np.int64(0))])
    assert task.missing([wk, gk, "other"]) == ["other"]
    task.load_step(st.key, st.step, st.plan, st.task_keys[0], st.sync)
    g = lambda v: (np.array([v], np.float32),)  # noqa: E731
    assert task.push([(st.key, g(2.0), 0, 0)], []) == [0]  # 1 of 2: waits
    assert task.sync_state(st.key) == (0, [0], 2)
    assert task.push([(st.key, g(4.0), 0, 1)], []) == [1]  # mean 3 applied
    assert task.pull([wk, gk]) == [pytest.approx(1.0 - 0.1 * 3.0), 1]
    assert task.push([(st.key, g(100.0), 0, 1)], []) == [1]  # stale: dropped
    assert task.dropped == 1 and task.pull([gk]) == [1]
    tf.reset_default_graph()


def test_apply_gradients_on_ps_pushes_the_given_gradients():
    import numpy as np  # noqa: PLC0415

    from kerasflow import backend as K  # noqa: PLC0415
    from kerasflow.compat.v1.cluster_session import (  # noqa: PLC0415
        _ApplyAsTrainOp,
        _PSStep,
    )
    from kerasflow.distribute.tf1.ps_task import PSTask  # noqa: PLC0415

    tf.reset_default_graph()
    with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        gs = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None])
        w = tf.Variable(1.0, name="w")
        loss = tf.reduce_mean(tf.square(w * x))  # d/dw = 2 w mean(x^2)
        opt = tf.train.GradientDescentOptimizer(0.1)
        (g, v), = opt.compute_gradients(loss, var_list=[w])
        op = opt.apply_gradients([(tf.clip_by_value(g, -0.5, 0.5), v)], global_step=gs)
    graph = tf.get_default_graph()
    st = _PSStep(_ApplyAsTrainOp(op), graph.ps_vars, 1)
    xs = np.array([3.0], np.float32)  # unclipped gradient 18, clipped 0.5
    fn = K.Function(st.step.inputs, st.step.grads)
    (got,) = fn(xs, np.float32(1.0))
    assert float(got) == pytest.approx(0.5)
    keys = {v: k for v, (_, k) in graph.ps_vars.items()}
    task = PSTask(0, 1)
    task.assign([(keys[w], "set", np.float32(1.0)), (keys[gs], "set", np.int64(0))])
    task.load_step(st.key, st.step, st.plan, st.task_keys[0], st.sync)
    task.push([(st.key, *st.pushes([got], 1)[0:1])], [])
    assert task.pull([keys[w], keys[gs]]) == [pytest.approx(1.0 - 0.1 * 0.5), 1]
    tf.reset_default_graph()


def test_sync_replicas_optimizer_bad_counts():
    with pytest.raises(ValueError, match="replicas_to_aggregate >= 1.*=0"):
        tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 0)


PS_ONLY = """
import sys
from kerasflow.distribute.tf1.server import Server
s = Server({"ps": ["127.0.0.1:%s"], "worker": ["127.0.0.1:1"]}, "ps", 0)
print("HEAD", s._ray.proc.pid, s._ray.temp_dir, flush=True)
s.join()
"""


@pytest.mark.ray
@pytest.mark.slow
def test_ps_killed_with_sigkill_takes_its_ray_down():
    (port,) = _free_ports(1)
    ps = subprocess.Popen([sys.executable, "-c", PS_ONLY % port], env=_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = ps.stdout.readline()
        assert line.startswith("HEAD"), line + ps.stdout.read()[-2000:]
        head, temp = int(line.split()[1]), line.split()[2]
        started = descendants(ps.pid) | {head}
        ps.kill()  # SIGKILL: no handler runs; PR_SET_PDEATHSIG stops the head
        ps.wait(30)
        deadline = time.monotonic() + 30
        while [p for p in started if _alive(p)] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert [p for p in started if _alive(p)] == []
        shutil.rmtree(temp, ignore_errors=True)  # its logs: no one left to remove them
    finally:
        if ps.poll() is None:
            ps.kill()
            ps.wait()


def test_compute_on_another_worker_is_refused():
    from kerasflow.compat.v1.cluster_session import (  # noqa: PLC0415
        check_worker_placement,
    )
    from kerasflow.utils.graph_def import collect_nodes  # noqa: PLC0415

    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [2])
    with tf.device("/job:worker/task:0"):
        mine = x * 2.0
    with tf.device("/job:worker/task:1"):
        theirs = mine + 1.0
    graph = tf.get_default_graph()
    check_worker_placement(graph, collect_nodes([mine]), "worker", 0)
    with pytest.raises(ValueError, match=r"placed on '/job:worker/task:1', another "
                                         r"worker task: expected ops on this task "
                                         r"\(/job:worker/task:0\)"):
        check_worker_placement(graph, collect_nodes([theirs]), "worker", 0)
    tf.reset_default_graph()


def test_server_task_already_served_by_another_process():
    with socket.socket() as taken:  # another process's Server of worker 0
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        cluster = {"ps": ["127.0.0.1:1"], "worker": [f"127.0.0.1:{port}"]}
        with pytest.raises(ValueError, match=rf"/job:worker/task:0 is already served "
                                             rf"by another process: expected its "
                                             rf"address 127.0.0.1:{port} free"):
            tf.train.Server(cluster, job_name="worker", task_index=0, timeout=2.0)
