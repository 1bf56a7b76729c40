"""TF's "Multi-worker training with Keras" tutorial: two TF_CONFIG worker
processes against the same program as one process, in samples/s.

Runs ``examples/tutorial_multi_worker_keras.py`` (a small convnet on MNIST,
``model.fit`` on a shuffled ``Dataset``, SGD) as the tutorial does: every run
is a fresh process, or two (one per TF_CONFIG task on 127.0.0.1), and no
thread variable is set, so each worker takes its share of the cores itself
(``distribute/task_threads.py``) and the one process all of them. Each run
trains ``--epochs`` epochs of ``--steps_per_epoch`` steps and reports the
samples/s of every epoch after the first (which builds the step); the job's
rate is its slower worker's. Three kinds of run, interleaved per round:

* ``one``: one process, the tutorial's global batch for one worker (64);
* ``one128``: one process on the job's global batch (128), the same batches;
* ``two``: two worker processes, 64 rows each of every global batch of 128.

Prints every round, then the medians and the median per-round ratio of
``two`` to each one-process kind, and the load average before and after.
The issue's target: ``two`` >= 0.9x ``one``.

Run: PYTHONPATH=. KERASFLOW_DATA_DIR=../shared/data \\
    python benchmarks/bench_tutorial_multi_worker.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tutorial_multi_worker_keras.py"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
KINDS = ("one", "one128", "two")


def _ports(k):
    socks = [socket.socket() for _ in range(k)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _env(tf_config=None):
    env = {k: v for k, v in os.environ.items()
           if k not in THREAD_VARIABLES and k != "TF_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    return env


def _result(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"no RESULT line. Received:\n{out[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def run(kind, args):
    """Samples/s of one run of ``kind`` (the slower worker's for ``two``)."""
    cmd = [sys.executable, str(EXAMPLE), f"--epochs={args.epochs}",
           f"--steps_per_epoch={args.steps_per_epoch}"]
    if kind != "two":
        if kind == "one128":
            cmd.append("--per_worker_batch_size=128")
        out = subprocess.run(cmd, env=_env(), capture_output=True, text=True,
                             timeout=900)
        if out.returncode:
            raise RuntimeError(out.stderr[-3000:])
        return _result(out.stdout)["samples_per_s"]
    addrs = [f"127.0.0.1:{p}" for p in _ports(2)]
    procs = [subprocess.Popen(cmd, env=_env({"cluster": {"worker": addrs},
                                             "task": {"type": "worker", "index": i}}),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for i in range(2)]
    try:
        outs = [p.communicate(timeout=900)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outs):
        if p.returncode:
            raise RuntimeError(out[-3000:])
    return min(_result(o)["samples_per_s"] for o in outs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps_per_epoch", type=int, default=70)
    args = ap.parse_args(argv)
    print(f"cores {os.cpu_count()}, load before: {os.getloadavg()[0]:.2f}", flush=True)
    rates = {k: [] for k in KINDS}
    for r in range(args.rounds):
        for k in KINDS:
            rates[k].append(run(k, args))
        print(f"round {r + 1}: " + ", ".join(f"{k} {rates[k][-1]:,.0f}" for k in KINDS)
              + f" samples/s (load {os.getloadavg()[0]:.2f})", flush=True)
    for k in KINDS:
        print(f"{k:7s} median {statistics.median(rates[k]):8,.0f} samples/s")
    for base in ("one", "one128"):
        ratios = [a / b for a, b in zip(rates["two"], rates[base])]
        print(f"two / {base}: median per-round ratio {statistics.median(ratios):.2f} "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return rates


if __name__ == "__main__":
    main()
