"""Nobody joins a job uninvited: the job's secret, the ring's handshake, the
addresses listeners bind and Ray's token authentication (issue 36)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kerasflow.distribute.collective.base import CollectiveError
from kerasflow.distribute.collective.tcp import TcpRing
from kerasflow.distribute.job_secret import (
    ENV_FILE,
    ENV_INSECURE,
    ENV_SECRET,
    JobSecretError,
    cluster_secret,
    ray_token,
)
from kerasflow.distribute.mirrored.spmd import SpmdStrategy
from tests.listeners import listening

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_secret_env(monkeypatch, tmp_path):
    for name in (ENV_SECRET, ENV_FILE, ENV_INSECURE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_secret_from_the_environment_and_from_a_private_file(no_secret_env,
                                                              monkeypatch):
    hosts = ["10.0.0.1", "10.0.0.2"]
    monkeypatch.setenv(ENV_SECRET, "s" * 40)
    assert cluster_secret(hosts, "job") == b"s" * 40
    monkeypatch.delenv(ENV_SECRET)
    path = no_secret_env / "secret"
    path.write_text("f" * 32 + "\n")
    monkeypatch.setenv(ENV_FILE, str(path))
    path.chmod(0o644)
    with pytest.raises(JobSecretError, match=r"mode 0600.*0644.*chmod 600"):
        cluster_secret(hosts, "job")
    path.chmod(0o600)
    assert cluster_secret(hosts, "job") == b"f" * 32


def test_a_short_secret_is_refused(no_secret_env, monkeypatch):
    monkeypatch.setenv(ENV_SECRET, "short")
    with pytest.raises(JobSecretError, match="at least 16 bytes. Received: 5"):
        cluster_secret(["10.0.0.1"], "job")


def test_a_cluster_across_hosts_needs_a_secret_or_an_explicit_opt_out(
        no_secret_env, monkeypatch, caplog):
    with pytest.raises(JobSecretError, match=rf"spans hosts.*export {ENV_SECRET}="):
        cluster_secret(["10.0.0.1", "10.0.0.2"], "TF_CONFIG cluster")
    assert cluster_secret(["10.0.0.1", "10.0.0.2"], "TF_CONFIG cluster",
                          allow_insecure=True) is None
    assert "WITHOUT a secret" in caplog.text
    monkeypatch.setenv(ENV_INSECURE, "1")
    assert cluster_secret(["10.0.0.3"], "another cluster") is None


def test_a_local_cluster_shares_a_private_per_user_secret(no_secret_env):
    first = cluster_secret(["127.0.0.1", "localhost"], "job")
    path = no_secret_env / ".kerasflow" / "cluster_secret"
    assert path.stat().st_mode & 0o777 == 0o600
    assert cluster_secret(["127.0.0.2"], "job") == first and len(first) >= 32
    assert ray_token(first) != ray_token(b"x" * 32) and len(ray_token(first)) == 64


def test_ranks_with_different_secrets_do_not_form_a_ring():
    rings = [TcpRing(r, 2, timeout=3, token="job", secret=bytes([r + 1]) * 32)
             for r in range(2)]
    addrs = [r.address for r in rings]
    errors = []

    def run(ring):
        try:
            ring.connect(addrs)
        except CollectiveError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=run, args=(r,)) for r in rings]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(errors) == 2
    assert any("did not prove the job's secret" in e for e in errors), errors
    for r in rings:
        r.close()


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def test_a_tf_config_worker_listens_on_its_own_address_only(no_secret_env):
    """The ring of a TF_CONFIG task binds the task's address (127.0.0.2 here),
    not the wildcard; the two tasks still train as one ring."""
    addrs = [f"127.0.0.2:{_free_port('127.0.0.2')}" for _ in range(2)]
    cluster = {"worker": addrs}
    strategies = [SpmdStrategy(tf_config=json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": i}}), timeout=20)
        for i in range(2)]
    started = threading.Thread(target=strategies[0]._connect)
    started.start()
    port = int(addrs[0].rsplit(":", 1)[1])
    deadline = time.monotonic() + 10
    while port not in listening() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listening().get(port) == "127.0.0.2"
    strategies[1]._connect()
    started.join(20)
    bufs = [np.full(4, i + 1.0, np.float32) for i in range(2)]
    ts = [threading.Thread(target=s._ring.allreduce, args=(b,))
          for s, b in zip(strategies, bufs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    np.testing.assert_array_equal(bufs[1], np.full(4, 3.0))
    for s in strategies:
        s._ring.close()


def test_a_tf_config_cluster_across_hosts_refuses_to_start_without_a_secret(
        no_secret_env):
    conf = {"cluster": {"worker": ["10.1.2.3:2222", "10.1.2.4:2222"]},
            "task": {"type": "worker", "index": 0}}
    with pytest.raises(JobSecretError, match=ENV_SECRET):
        SpmdStrategy(tf_config=json.dumps(conf))


_LOCAL_RAY = """
import os, sys, time
from kerasflow.distribute.runtime import ray as wg
wg.init_ray(num_cpus=1)
import ray
print("GCS", ray.get_runtime_context().gcs_address, os.environ["RAY_AUTH_MODE"],
      os.environ["RAY_AUTH_TOKEN"], flush=True)
sys.stdin.readline()
wg.shutdown_ray()
"""

_STRANGER = """
import sys, ray
ray.init(address=sys.argv[1])
print("JOINED", ray.get(ray.remote(lambda: 7).remote()), flush=True)
"""


@pytest.mark.ray
def test_the_local_ray_listens_on_loopback_and_refuses_a_stranger():
    """kerasflow's own local Ray: its GCS listens on 127.0.0.1 only, and a
    process without the job's token (no auth, or a wrong token) cannot join
    it; one holding the token can (so the refusal is the token's doing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(ROOT)
    owner = subprocess.Popen([sys.executable, "-c", _LOCAL_RAY], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        line = owner.stdout.readline().split()
        assert line[:1] == ["GCS"], line
        gcs, mode, token = line[1], line[2], line[3]
        assert mode == "token"
        host, port = gcs.rsplit(":", 1)
        assert host == "127.0.0.1" and listening().get(int(port)) == "127.0.0.1"
        # a few connection tries, not Ray's default 20 (one per second)
        same_host = dict(env, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
                         RAY_NUM_REDIS_GET_RETRIES="3")
        tries = {"no auth": dict(same_host, RAY_AUTH_MODE="disabled"),
                 "wrong token": dict(same_host, RAY_AUTH_MODE="token",
                                     RAY_AUTH_TOKEN="0" * 64),
                 "the token": dict(same_host, RAY_AUTH_MODE="token",
                                   RAY_AUTH_TOKEN=token)}
        procs = {k: subprocess.Popen([sys.executable, "-c", _STRANGER, gcs], env=e,
                                     text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
                 for k, e in tries.items()}
        out = {}
        for k, p in procs.items():
            try:
                out[k] = p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                p.kill()
                out[k] = p.communicate()
        assert "JOINED 7" in out["the token"][0], out["the token"][1][-2000:]
        for k in ("no auth", "wrong token"):
            assert "JOINED" not in out[k][0]
            assert "Failed to connect" in out[k][1] or procs[k].returncode != 0
    finally:
        owner.stdin.write("\n")
        owner.stdin.flush()
        owner.wait(60)
