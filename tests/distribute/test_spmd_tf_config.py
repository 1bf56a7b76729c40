"""One OS process per worker with TF_CONFIG (SPMD): launched as a user
launches TF's multi-worker jobs; every process ends with the same weights,
equal to one process on the global batch; tasks on one host sum in shared
memory, bit for bit as the TCP ring does, and any task asked for the ring
keeps the whole job on it; a dead peer ends the others' training with an
error naming it; malformed TF_CONFIG is refused."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.backend import jit
from kerasflow.distribute import task_threads
from kerasflow.distribute.mirrored.spmd import ENV_COLLECTIVE, SpmdStrategy
from tests.compat.test_tf1_cluster import _free_ports as _ports

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "multi_worker_tf_config.py"
ARGS = ["--float64", "--samples=2048"]


def _env(tf_config=None, timeout="60"):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERASFLOW_CLUSTER_TIMEOUT=timeout,
               KERASFLOW_DATA_DIR=os.environ.get("KERASFLOW_DATA_DIR",
                                                 "/work/shared/data"))
    env.pop("TF_CONFIG", None)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    return env


def _launch(n, out, extra=(), timeout="60", task_env=None):
    """``n`` worker processes on loopback; ``task_env``: extra environment
    variables per task index."""
    addrs = [f"127.0.0.1:{p}" for p in _ports(n)]
    envs = [_env({"cluster": {"worker": addrs}, "task": {"type": "worker", "index": i}},
                 timeout) for i in range(n)]
    for i, extra_env in (task_env or {}).items():
        envs[i].update(extra_env)
    return [subprocess.Popen(
        [sys.executable, str(EXAMPLE), f"--out={out}", *ARGS, *extra],
        env=envs[i], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(n)]


def _finish(procs):
    """The RESULT dicts of ``procs``, once every one exited with 0."""
    try:
        outs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    return [json.loads(o.splitlines()[-1][len("RESULT "):]) for o in outs]


def _weights(path):
    with np.load(path) as f:
        return [f[k] for k in sorted(f.files, key=lambda k: int(k.split("_")[1]))]


@pytest.mark.parametrize("n", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_processes_end_with_one_process_weights(tmp_path, n):
    results = _finish(_launch(n, tmp_path / "w", ["--epochs=2"]))
    single = subprocess.run([sys.executable, str(EXAMPLE), f"--out={tmp_path}/one",
                             *ARGS, "--epochs=2"], env=_env(), capture_output=True,
                            text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    ref = _weights(tmp_path / "one.task0.npz")
    for rank in range(n):
        got = _weights(tmp_path / f"w.task{rank}.npz")
        for a, b in zip(ref, got):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert all(r["replicas"] == n for r in results)
    assert [r["transport"] for r in results] == ["shm"] * n  # all on this host
    assert results[0]["test_accuracy"] > 0.85


def test_ring_asked_by_one_task_keeps_the_job_on_it_with_the_same_bits(tmp_path):
    """Task 1 alone asks for the ring: the tasks agree on it (none waits in
    shared memory for a peer on the ring), and the weights equal the
    shared-memory job's bit for bit (two tasks: each sum is one addition)."""
    shm = _finish(_launch(2, tmp_path / "shm", ["--epochs=1"]))
    tcp = _finish(_launch(2, tmp_path / "tcp", ["--epochs=1"],
                          task_env={1: {ENV_COLLECTIVE: "tcp"}}))
    assert [r["transport"] for r in shm] == ["shm", "shm"]
    assert [r["transport"] for r in tcp] == ["tcp", "tcp"]
    assert shm[0]["loss"] == tcp[0]["loss"] == tcp[1]["loss"]
    for rank in range(2):
        for a, b in zip(_weights(tmp_path / f"shm.task{rank}.npz"),
                        _weights(tmp_path / f"tcp.task{rank}.npz")):
            np.testing.assert_array_equal(b, a)


def test_transport_options_and_remote_tasks(monkeypatch):
    """CommunicationOptions' RING (or $KERASFLOW_COLLECTIVE=tcp) asks for the
    ring; 'shm' with a task on another host is refused, naming it."""
    _two_local_workers(monkeypatch)
    monkeypatch.setenv("OMP_NUM_THREADS", "")  # restored after the test
    ring = kf.distribute.experimental.CommunicationOptions(implementation="RING")
    s = kf.distribute.MultiWorkerMirroredStrategy(communication_options=ring)
    assert isinstance(s, SpmdStrategy)
    assert (s.implementation, s.transport) == ("tcp", None)  # None: not met yet
    assert kf.distribute.MultiWorkerMirroredStrategy().implementation == "auto"
    monkeypatch.setenv(ENV_COLLECTIVE, "TCP")
    assert kf.distribute.MultiWorkerMirroredStrategy().implementation == "tcp"
    monkeypatch.setenv(ENV_COLLECTIVE, "gloo")
    with pytest.raises(ValueError, match=r"Received: \$KERASFLOW_COLLECTIVE='gloo'"):
        kf.distribute.MultiWorkerMirroredStrategy()
    monkeypatch.delenv(ENV_COLLECTIVE)
    conf = {"cluster": {"worker": [f"127.0.0.1:{_ports(1)[0]}", "198.51.100.7:2222"]},
            "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(conf))
    monkeypatch.setenv("KERASFLOW_CLUSTER_SECRET", "s" * 32)
    assert kf.distribute.MultiWorkerMirroredStrategy().implementation == "auto"
    with pytest.raises(ValueError, match=r"expects every TF_CONFIG task on this host. "
                                         r"Received: tasks \['198.51.100.7:2222'\]"):
        SpmdStrategy(implementation="shm")


def test_a_dead_peer_ends_the_others_naming_it(tmp_path):
    procs = _launch(2, tmp_path / "w", ["--epochs=200", "--log_epochs"], timeout="20")
    try:
        line = procs[0].stdout.readline()
        while line and not line.startswith("EPOCH"):
            line = procs[0].stdout.readline()
        assert line.startswith("EPOCH"), line
        t0 = time.monotonic()
        procs[1].send_signal(signal.SIGKILL)
        out, _ = procs[0].communicate(timeout=120)
        assert procs[0].returncode != 0
        assert time.monotonic() - t0 < 20 + 30
        assert "Rank 1 closed its connection" in out, out[-3000:]
        assert "TF_CONFIG task 0 (127.0.0.1:" in out, out[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_malformed_tf_config_is_refused(monkeypatch):
    cases = [
        ({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}},
         r"task type to be one of \['worker'\]. Received: type='ps'"),
        ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}},
         r"Task index 3 is not in job 'worker'"),
        ({"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}},
         r"list 'chief' or 'worker' tasks. Received: jobs \['ps'\]"),
    ]
    for conf, match in cases:
        monkeypatch.setenv("TF_CONFIG", json.dumps(conf))
        with pytest.raises(ValueError, match=match):
            kf.distribute.MultiWorkerMirroredStrategy()
    monkeypatch.setenv("TF_CONFIG", "{oops")
    with pytest.raises(ValueError, match="TF_CONFIG must be valid JSON"):
        kf.distribute.MultiWorkerMirroredStrategy()


def test_tf_config_task_makes_this_process_one_replica(monkeypatch):
    with socket.socket() as taken:  # another process already serves task 1
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = {"cluster": {"chief": ["127.0.0.1:1"], "worker": [f"127.0.0.1:{port}"]},
                "task": {"type": "worker", "index": 0}}
        monkeypatch.setenv("TF_CONFIG", json.dumps(conf))
        s = kf.distribute.MultiWorkerMirroredStrategy()
        assert isinstance(s, SpmdStrategy)
        assert (s.num_replicas_in_sync, s.task_rank, s.is_chief) == (2, 1, False)
        with pytest.raises(ValueError, match=r"TF_CONFIG task 1 \(127.0.0.1:\d+\) "
                                             r"cannot listen on its address"):
            s._connect()


@pytest.mark.slow  # ~30 s
def test_killed_job_restarted_with_backup_and_restore_resumes(tmp_path):
    backup = ["--epochs=6", "--log_epochs", f"--backup_dir={tmp_path}/backup"]
    single = subprocess.run([sys.executable, str(EXAMPLE), f"--out={tmp_path}/one",
                             *ARGS, "--epochs=6"], env=_env(), capture_output=True,
                            text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    procs = _launch(2, tmp_path / "w", backup, timeout="20")
    try:
        line = procs[0].stdout.readline()
        while line and not line.startswith("EPOCH 2"):
            line = procs[0].stdout.readline()
        assert line.startswith("EPOCH 2"), line
        procs[1].send_signal(signal.SIGKILL)
        procs[0].communicate(timeout=120)
        assert procs[0].returncode != 0  # its peer died: the job stops
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    procs = _launch(2, tmp_path / "w", backup)  # the job restarted
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    results = [json.loads(o.splitlines()[-1][len("RESULT "):]) for o in outs]
    assert 1 <= len(results[0]["loss"]) <= 3  # resumed after epoch 3 or later
    ref = _weights(tmp_path / "one.task0.npz")
    for rank in range(2):
        for a, b in zip(ref, _weights(tmp_path / f"w.task{rank}.npz")):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert not (tmp_path / "backup").exists()  # the chief removed it at the end


@pytest.mark.slow  # ~40 s
def test_estimator_train_and_evaluate_one_process_per_worker(tmp_path):
    est = ["--epochs=2", "--samples=1024"]
    single = subprocess.run([sys.executable, str(EXAMPLE), f"--out={tmp_path}/one",
                             "--float64", *est, f"--estimator_dir={tmp_path}/one_dir"],
                            env=_env(), capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    procs = _launch(2, tmp_path / "w", [*est, f"--estimator_dir={tmp_path}/job"])
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    results = [json.loads(o.splitlines()[-1][len("RESULT "):]) for o in outs]
    assert results[0]["global_step"] == 32 and "test_accuracy" not in results[1]
    for a, b in zip(_weights(tmp_path / "one.task0.npz"),
                    _weights(tmp_path / "w.task0.npz")):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    # Only the chief wrote into model_dir: one events file there.
    assert len(list((tmp_path / "job").glob("events.out.tfevents.*"))) == 1


def test_custom_loop_one_process_per_worker(tmp_path):
    loop = ["--epochs=1", "--custom_loop"]
    single = subprocess.run([sys.executable, str(EXAMPLE), f"--out={tmp_path}/one",
                             *ARGS, *loop], env=_env(), capture_output=True,
                            text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    procs = _launch(2, tmp_path / "w", loop)
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    results = [json.loads(o.splitlines()[-1][len("RESULT "):]) for o in outs]
    one = json.loads(single.stdout.splitlines()[-1][len("RESULT "):])
    np.testing.assert_allclose(results[0]["loss"], one["loss"], rtol=1e-9)
    assert results[0]["loss"] == results[1]["loss"]
    for rank in range(2):
        for a, b in zip(_weights(tmp_path / "one.task0.npz"),
                        _weights(tmp_path / f"w.task{rank}.npz")):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def _two_local_workers(monkeypatch):
    conf = {"cluster": {"worker": [f"127.0.0.1:{p}" for p in _ports(2)]},
            "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(conf))
    for var in jit.THREAD_VARIABLES:  # as a user who set none of them
        monkeypatch.delenv(var, raising=False)


def test_tf_config_worker_takes_its_share_of_the_host(monkeypatch, caplog):
    _two_local_workers(monkeypatch)
    monkeypatch.setenv("OMP_NUM_THREADS", "")  # restored after the test
    monkeypatch.setattr(task_threads, "_LOGGED", [])
    cores = os.cpu_count() or 1
    share = max(1, cores // 2)
    with caplog.at_level(logging.INFO, logger="kerasflow.distribute"):
        s = kf.distribute.MultiWorkerMirroredStrategy()
        kf.distribute.MultiWorkerMirroredStrategy()
    assert (s.threads["local_tasks"], s.threads["share"]) == (2, share)
    assert os.environ["OMP_NUM_THREADS"] == str(share)
    assert jit.num_threads(jit.numba_module()) == share == s.threads["numba"]
    assert jit.blas_threads() == share == s.threads["blas"]
    lines = [r.getMessage() for r in caplog.records if "BLAS threads" in r.message]
    assert lines == [f"TF_CONFIG task 0 ({s.addresses[0]}): {cores} cores, 2 tasks "
                     f"of the cluster on this host: BLAS threads {share}, numba "
                     f"threads {share}"]


def test_tf_config_worker_leaves_the_users_thread_variables(monkeypatch):
    _two_local_workers(monkeypatch)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    blas = jit.blas_threads()
    s = kf.distribute.MultiWorkerMirroredStrategy()
    assert s.threads["user"] == ["OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"]
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in os.environ
    assert jit.blas_threads() == blas  # BLAS keeps what it read at load
