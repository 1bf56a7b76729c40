"""MultiWorkerMirroredStrategy across two Ray nodes started as separate
``ray start`` processes on this machine (distinct ports, one CPU each), as
on a real cluster: a driver joins by address, kerasflow reaches the workers
through the job's runtime environment (Ray's ``py_modules``), the replicas
land one per node, the ring listens in the configured port range, and the
weights equal one process's. The test starts and stops both nodes by their
own process groups (never ``ray stop``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from kerasflow.distribute.tf1.ray_process import RayProcess, free_ports, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DRIVER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    import kerasflow as kf
    from kerasflow.distribute.runtime import ray as wg

    wg.init_ray(address=sys.argv[1])
    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]

    @ray.remote(num_cpus=0)
    def where():
        import kerasflow
        return kerasflow.__file__

    files = ray.get([where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n, soft=False)).remote() for n in nodes])
    kf.backend.set_floatx("float64")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 6))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)

    def fit(strategy=None):
        def build():
            np.random.seed(0)
            m = kf.Sequential([kf.layers.Dense(8, activation="tanh", input_shape=(6,)),
                               kf.layers.Dense(2)])
            m.compile(kf.optimizers.Adam(0.05),
                      kf.losses.SparseCategoricalCrossentropy(from_logits=True))
            return m
        if strategy is None:
            m = build()
        else:
            with strategy.scope():
                m = build()
        np.random.seed(1)
        m.fit(x, y, batch_size=24, epochs=2, verbose=0)
        return m.get_weights()

    opts = kf.distribute.experimental.CommunicationOptions(
        timeout_seconds=60, port_range=sys.argv[2])
    strategy = kf.distribute.MultiWorkerMirroredStrategy(
        num_workers=2, communication_options=opts)
    got = fit(strategy)
    placed = strategy.node_ids()
    strategy.close()
    want = fit()
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want))
    print("RESULT " + json.dumps(dict(nodes=nodes, files=files, placed=placed,
                                      diff=diff, transport=strategy._transport)))
""")


def _node(args, temp):
    agent, grpc, env_agent, metrics, nm, om = free_ports(6)
    return RayProcess(["--num-cpus=1", "--object-store-memory=100000000",
                       "--node-ip-address=127.0.0.1",
                       f"--dashboard-agent-listen-port={agent}",
                       f"--dashboard-agent-grpc-port={grpc}",
                       f"--runtime-env-agent-port={env_agent}",
                       f"--metrics-export-port={metrics}",
                       f"--node-manager-port={nm}", f"--object-manager-port={om}",
                       *args], temp)


def test_multi_worker_on_two_ray_start_nodes(monkeypatch, tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # The nodes see no PYTHONPATH: the workers' kerasflow must come from the job.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    # Two nodes joining by address: not Ray's single-host mode the other tests
    # run in (the token from tests/conftest.py still guards them).
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    (gcs,) = free_ports(1)
    head = _node(["--head", f"--port={gcs}", "--include-dashboard=false"],
                 tempfile.mkdtemp(prefix="kf-2n-head-"))
    worker = None
    try:
        wait_for_port(f"127.0.0.1:{gcs}", time.monotonic() + 60, "head", head)
        worker = _node([f"--address=127.0.0.1:{gcs}"],
                       tempfile.mkdtemp(prefix="kf-2n-worker-"))
        script = tmp_path / "driver.py"
        script.write_text(DRIVER)
        low = 27000 + os.getpid() % 2000
        env = dict(os.environ, PYTHONPATH=repo, OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1")
        deadline = time.monotonic() + 60
        while True:  # the second node registers a few seconds after it starts
            out = subprocess.run([sys.executable, "-c", (
                "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False);"
                "print(sum(n['Alive'] for n in ray.nodes()))"), f"127.0.0.1:{gcs}"],
                capture_output=True, text=True, env=env, timeout=60)
            if out.stdout.strip().endswith("2") or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert out.stdout.strip().endswith("2"), (out.stdout, out.stderr[-2000:])
        run = subprocess.run([sys.executable, str(script), f"127.0.0.1:{gcs}",
                              f"{low}-{low + 9}"], capture_output=True, text=True,
                             env=env, timeout=240, cwd=tmp_path)  # Ray puts the
        # driver's folder on the workers' sys.path: not the checkout's here.
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
        assert lines, (run.stdout[-2000:], run.stderr[-4000:])
        res = json.loads(lines[0][len("RESULT "):])
    finally:
        if worker is not None:
            worker.stop(grace=3.0)
        head.stop(grace=5.0)
    assert len(res["nodes"]) == 2
    assert sorted(res["placed"]) == sorted(res["nodes"])  # one replica per node
    assert res["transport"] in ("auto", "tcp")
    for f in res["files"]:  # shipped by py_modules, not the checkout's path
        assert "runtime_resources" in f and not f.startswith(repo), f
    assert res["diff"] < 1e-9
