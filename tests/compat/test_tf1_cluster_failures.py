"""TF1 clusters under failure, each as separate OS processes launched like a
user launches them: a worker killed (async goes on; sync times out naming
it, or goes on when fewer gradients are aggregated), the ps killed (workers
fail within their deadline naming it), and MonitoredTrainingSession's chief
killed with SIGKILL and restarted (it resumes from its last checkpoint; a
non-chief started before it waits)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.compat.test_tf1_cluster import _env, _free_ports, _result

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tf1_between_graph_mnist.py"

pytestmark = pytest.mark.ray


class Task:
    """One task's process; its output is collected on a thread so a test can
    wait for a line while the process runs."""

    def __init__(self, args, job, index, env):
        self.proc = subprocess.Popen(
            args + [f"--job_name={job}", f"--task_index={index}"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines, self._cond = [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()

    def wait_for(self, pattern, timeout=180):
        rx, deadline = re.compile(pattern), time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if rx.search(line):
                        return line
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, (
                    f"no line matching {pattern!r}:\n" + "".join(self.lines)[-3000:])
                self._cond.wait(min(left, 1.0))

    def finish(self, timeout=240):
        self.proc.wait(timeout)
        time.sleep(0.2)  # the reader thread takes the last lines
        return self.proc.returncode, "".join(self.lines)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _cluster(tmp_path, steps, extra=(), timeout="120"):
    """``(args, worker env, ps)``: the ps task started (given 120 s for the
    Ray head, whatever the load) and serving; workers get ``timeout``."""
    ps_port, w0, w1 = _free_ports(3)
    env = dict(_env(), KERASFLOW_CLUSTER_TIMEOUT=timeout)
    args = [sys.executable, str(EXAMPLE), f"--ps_hosts=127.0.0.1:{ps_port}",
            f"--worker_hosts=127.0.0.1:{w0},127.0.0.1:{w1}", f"--steps={steps}",
            f"--logs_path={tmp_path}", "--log_every=10", *extra]
    ps = Task(args, "ps", 0, dict(env, KERASFLOW_CLUSTER_TIMEOUT="120"))
    try:
        ps.wait_for(r"^Serving grpc://")
    except BaseException:
        ps.stop()
        raise
    return args, env, ps


def _stop_ps(ps):
    ps.proc.send_signal(signal.SIGTERM)
    code, out = ps.finish(60)
    assert code == 0, out[-3000:]


@pytest.mark.slow  # ~30 s quiet (a Ray head, 300 async steps)
def test_async_worker_killed_the_other_goes_on(tmp_path):
    # compute_gradients + clip_by_global_norm + apply_gradients on ps variables
    args, env, ps = _cluster(tmp_path, 150, ["--clip_norm=5.0"])
    tasks = [ps]
    try:
        tasks += [Task(args, "worker", i, env) for i in range(2)]
        tasks[2].wait_for(r"^Step: 10,")
        tasks[2].proc.kill()  # worker 1 dies mid-run
        code, out = tasks[1].finish()
        assert code == 0, out[-3000:]
        r = _result(out)
        # Worker 0 ran all its steps on the shared weights; worker 1's pushes
        # before its death are in the global step too.
        assert r["steps"] == 150 and r["global_step"] >= 150 + 10
        assert r["accuracy"] >= 0.8, r
        _stop_ps(tasks[0])
    finally:
        for t in tasks:
            t.stop()


@pytest.mark.slow  # ~45 s
def test_sync_worker_killed_times_out_naming_it_or_goes_on(tmp_path):
    # All 2 gradients aggregated: worker 0's round times out naming worker 1.
    args, env, ps = _cluster(tmp_path, 100, ["--sync_replicas"], timeout="15")
    tasks = [ps]
    try:
        tasks += [Task(args, "worker", i, env) for i in range(2)]
        tasks[2].wait_for(r"^Step: 10,")
        t0 = time.monotonic()
        tasks[2].proc.kill()
        code, out = tasks[1].finish()
        assert code != 0
        assert re.search(r"Sync round \d+ on /job:ps/task:0 did not complete within "
                         r"15 s: expected 2 gradients\. Received 1 \(from workers "
                         r"\[0\]\); missing: workers \[1\]", out), out[-3000:]
        assert time.monotonic() - t0 < 15 + 30
        _stop_ps(tasks[0])
    finally:
        for t in tasks:
            t.stop()
    # replicas_to_aggregate=1 of 2: worker 0 goes on alone.
    args, env, ps = _cluster(tmp_path / "one", 60,
                             ["--sync_replicas", "--replicas_to_aggregate=1"],
                             timeout="15")
    tasks = [ps]
    try:
        tasks += [Task(args, "worker", i, env) for i in range(2)]
        tasks[2].wait_for(r"^Step: 10,")
        tasks[2].proc.kill()
        code, out = tasks[1].finish()
        assert code == 0, out[-3000:]
        assert _result(out)["steps"] == 60
        _stop_ps(tasks[0])
    finally:
        for t in tasks:
            t.stop()


@pytest.mark.slow  # ~40 s
def test_ps_killed_workers_fail_naming_it_within_their_deadline(tmp_path):
    args, env, ps = _cluster(tmp_path, 100000, timeout="20")
    tasks = [ps]
    try:
        tasks += [Task(args, "worker", i, env) for i in range(2)]
        for w in tasks[1:]:
            w.wait_for(r"^Step: 10,")
        t0 = time.monotonic()
        tasks[0].proc.kill()  # SIGKILL: its Ray head goes down with it
        for w in tasks[1:]:
            code, out = w.finish(120)
            assert code != 0
            assert "/job:ps/task:0" in out, out[-3000:]
        assert time.monotonic() - t0 < 20 + 40
    finally:
        for t in tasks:
            t.stop()


@pytest.mark.slow  # ~60 s
def test_monitored_session_chief_killed_and_restarted_resumes(tmp_path):
    args, env, ps = _cluster(tmp_path, 150, ["--monitored", "--save_steps=40"])
    ckpt = tmp_path / "ckpt"
    tasks = [ps]
    try:
        # The non-chief comes first and waits for the chief's initialization.
        tasks.append(Task(args, "worker", 1, env))
        time.sleep(3.0)
        assert not [ln for ln in tasks[1].lines if ln.startswith("START")]
        chief = Task(args, "worker", 0, env)
        tasks.append(chief)
        tasks[1].wait_for(r"^START task 1 global_step \d+")
        deadline = time.monotonic() + 180
        while not list(ckpt.glob("model.ckpt-*")) and time.monotonic() < deadline:
            time.sleep(0.2)
        chief.wait_for(r"^Step: 10,")
        chief.proc.kill()  # SIGKILL mid-run, after at least one checkpoint
        chief.proc.wait()
        saved = max(int(p.name.split("-")[1].split(".")[0])
                    for p in ckpt.glob("model.ckpt-*"))
        assert saved > 0
        again = Task(args, "worker", 0, env)
        tasks.append(again)
        first = int(again.wait_for(r"^START task 0 global_step").split()[-1])
        assert first >= saved  # restored from its last checkpoint (not 0)
        for t in (again, tasks[1]):
            code, out = t.finish()
            assert code == 0, out[-3000:]
        r = _result(out)
        assert r["global_step"] >= 300 and r["accuracy"] >= 0.8, r
        _stop_ps(tasks[0])
    finally:
        for t in tasks:
            t.stop()
