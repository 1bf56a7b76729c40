"""On paper, toward a real cluster: predicted samples/s and scaling
efficiency of synchronous data parallelism for 1 to 256 workers, ring
allreduce against a sharded parameter server, with and without fp16
gradients, for the MNIST MLP, the classic MNIST convnet and census wide &
deep, on 10, 25 and 100 Gb/s links.

The model (one global step; every worker takes a batch of ``B`` samples):

* compute: ``t_c = B * c``, ``c`` the measured seconds per sample of forward,
  backward and update on one worker (``--measure`` times kerasflow here);
* ring allreduce of ``M`` gradient bytes (reduce-scatter + allgather, Baidu /
  Horovod): ``t_ring = 2 (N - 1) / N * M / bw + 2 (N - 1) * lat``;
* sharded PS with one shard per worker (Li et al., OSDI 2014; push then pull,
  each link carrying the other shards' share both ways):
  ``t_ps = 2 (N - 1) / N * M / bw + 2 * lat`` -- the same bytes per link as
  the ring, but 2 latencies per step instead of ``2 (N - 1)``;
* fp16 gradients halve ``M``; no overlap of compute and communication (the
  conservative case: kerasflow reduces after the backward pass);
* stragglers: a synchronous step waits for the slowest of N workers. With a
  worker's step time of mean ``t_c`` and coefficient of variation ``cv``
  (independent, roughly normal), the expected slowest is
  ``t_c (1 + cv * z_N)``, ``z_N`` the expected maximum of N standard normals
  (0 for N = 1, 0.56 for 2, 1.54 for 10, 2.75 for 200: the "tail at scale"
  effect; Dean & Barroso, CACM 2013);
* the driver's call: ``o`` seconds per call of ``K`` steps
  (``steps_per_execution``), ``o / K`` per step;
* ``samples/s = N * B / (t_c (1 + cv z_N) + t_comm + o / K)``, efficiency =
  that over ``N`` times one worker's ``B / (t_c + o / K)``.

``--validate`` checks the model against a measurement on this machine: the
simulated 3-node Ray cluster (``ray.cluster_utils.Cluster``), one replica per
node, ``MultiWorkerMirroredStrategy`` on the TCP ring. The model's inputs are
measured apart from the quantity predicted: the link's bandwidth and latency
with the ring itself (two sizes of allreduce), ``t_c`` and ``cv`` from every
replica's own per-step seconds outside the allreduce (``step_work``), ``o``
as the round trip of an empty call to the replicas; it prints predicted
against measured wall seconds per step, and the term by term split.

Run: PYTHONPATH=. python benchmarks/scaling_model.py [--measure] [--validate]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

GBPS = 1e9 / 8  # bytes per second in one Gb/s

# Parameters (float32 bytes = 4 x) and a default per-sample compute time in
# seconds (one worker, this 2-core machine, measured by --measure on
# 2026-11-26; replace with your hardware's figures).
MODELS = {
    "MNIST MLP 784-512-512-10": dict(params=669_706, sec_per_sample=40e-6, batch=128),
    "MNIST convnet (Keras example)": dict(params=1_199_882, sec_per_sample=1.1e-3,
                                          batch=128),
    "census wide & deep": dict(params=1_370_000, sec_per_sample=25e-6, batch=256),
}
# Straggler spread of one worker's step time assumed for the table (dedicated
# machines; --validate measures it here) and the driver's call per K steps.
CV, CALL_SECONDS, K_STEPS = 0.05, 1e-3, 64
LINKS = {"10 Gb/s": (10 * GBPS, 20e-6), "25 Gb/s": (25 * GBPS, 10e-6),
         "100 Gb/s": (100 * GBPS, 5e-6)}
WORKERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def comm_seconds(kind, n, nbytes, bw, lat):
    """One step's communication time (see the module docstring)."""
    if n == 1:
        return 0.0
    volume = 2 * (n - 1) / n * nbytes / bw
    hops = 2 * (n - 1) if kind == "ring" else 2
    return volume + hops * lat


def expected_max_normal(n):
    """``E[max of n independent standard normals]`` (0 for n = 1), by
    integrating ``x n phi(x) Phi(x)^(n-1)`` on a grid."""
    if n <= 1:
        return 0.0
    x = np.linspace(-9.0, 9.0, 20001)
    phi = np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
    cdf = np.cumsum(phi) * (x[1] - x[0])
    return float(np.sum(x * n * phi * cdf ** (n - 1)) * (x[1] - x[0]))


def step_seconds(t_c, n, nbytes, bw, lat, kind="ring", cv=CV, call=CALL_SECONDS,
                 k=K_STEPS):
    """Predicted seconds of one synchronous step and its terms
    ``(total, compute with stragglers, communication, call)``."""
    comp = t_c * (1.0 + cv * expected_max_normal(n))
    comm = comm_seconds(kind, n, nbytes, bw, lat)
    return comp + comm + call / k, comp, comm, call / k


def predict(model, n, bw, lat, kind="ring", fp16=False):
    """``(samples/s, efficiency)`` of ``n`` workers."""
    nbytes = model["params"] * (2 if fp16 else 4)
    t_c = model["batch"] * model["sec_per_sample"]
    step = step_seconds(t_c, n, nbytes, bw, lat, kind)[0]
    rate = n * model["batch"] / step
    return rate, rate / (n * model["batch"] / (t_c + CALL_SECONDS / K_STEPS))


def table(models=MODELS):
    rows = []
    for name, m in models.items():
        for link, (bw, lat) in LINKS.items():
            for kind, fp16 in (("ring", False), ("ps", False), ("ring", True)):
                label = f"{kind}{' fp16' if fp16 else ''}"
                cells = []
                for n in WORKERS:
                    rate, eff = predict(m, n, bw, lat, kind, fp16)
                    cells.append(f"{rate:,.0f} ({eff:.0%})")
                rows.append((name, link, label, cells))
    return rows


def print_table(rows):
    print("| model | link | scheme | " + " | ".join(f"N={n}" for n in WORKERS) + " |")
    print("|---|---|---|" + "---|" * len(WORKERS))
    for name, link, label, cells in rows:
        print(f"| {name} | {link} | {label} | " + " | ".join(cells) + " |")


def measure(samples=4096):
    """Seconds per sample of one fit epoch of each model, one process here."""
    import kerasflow as kf

    L = kf.layers
    rng = np.random.RandomState(0)
    builds = {
        "MNIST MLP 784-512-512-10": (lambda: [
            L.Dense(512, activation="relu", input_shape=(784,)),
            L.Dense(512, activation="relu"), L.Dense(10)], (784,), 128),
        "MNIST convnet (Keras example)": (lambda: [
            L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
            L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2), L.Dropout(0.25),
            L.Flatten(), L.Dense(128, activation="relu"), L.Dropout(0.5),
            L.Dense(10)], (28, 28, 1), 128),
    }
    out = {}
    for name, (layers, shape, batch) in builds.items():
        n = samples // (8 if "convnet" in name else 1)
        x = rng.rand(n, *shape).astype("float32")
        y = rng.randint(0, 10, n)
        model = kf.Sequential(layers())
        model.compile("adam", kf.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)  # warm-up
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
        out[name] = (time.perf_counter() - t0) / n
        print(f"measured {name}: {out[name] * 1e6:.1f} us per sample", flush=True)
    return out


def validate(steps=60, batch=96):
    """Predicted vs measured seconds per step on the simulated 3-node cluster."""
    import ray
    from ray.cluster_utils import Cluster

    import kerasflow as kf
    from kerasflow.distribute.collective.tcp import TcpRing

    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=1, include_dashboard=False))
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        bw, lat = _link(TcpRing)
        rng = np.random.RandomState(0)
        x = rng.rand(steps * batch, 784).astype("float32")
        y = rng.randint(0, 10, len(x))
        strategy = kf.distribute.MultiWorkerMirroredStrategy(num_workers=3)
        k = steps // 3
        with strategy.scope():
            model = kf.Sequential([kf.layers.Dense(512, activation="relu",
                                                   input_shape=(784,)),
                                   kf.layers.Dense(512, activation="relu"),
                                   kf.layers.Dense(10)])
            model.compile("adam", kf.losses.SparseCategoricalCrossentropy(
                from_logits=True), steps_per_execution=k)
            model.fit(x, y, batch_size=batch, epochs=1, verbose=0)  # warm-up
            group = strategy.worker_group
            call = float(np.median([_timed(lambda: group.execute("threads"))
                                    for _ in range(15)]))
            done = [len(w) for w in strategy.step_work]
            t0 = time.perf_counter()
            model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
            wall = (time.perf_counter() - t0) / steps
            work = np.array([w[d:] for w, d in zip(strategy.step_work, done)])
        params = sum(int(np.prod(w.shape)) for w in model.get_weights())
        t_c = float(work.mean())
        cv = float(work.std() / t_c)  # pooled over ranks and steps
        slowest = float(work.max(axis=0).mean())  # the spread, measured directly
        total, comp, comm, per_call = step_seconds(t_c, 3, 4 * params, bw, lat,
                                                   cv=cv, call=call, k=k)
        plain = t_c + comm  # the model without stragglers and calls
        print(f"link measured with the ring: {bw / 1e9:.2f} GB/s, latency "
              f"{lat * 1e6:.0f} us; empty call to the replicas {call * 1e3:.2f} ms; "
              f"a replica's step work {t_c * 1e3:.2f} ms, cv {cv:.2f} (slowest of 3 "
              f"per step, measured: {slowest * 1e3:.2f} ms; model "
              f"{comp * 1e3:.2f} ms)")
        print(f"3 workers, MLP: predicted {total * 1e3:.2f} ms/step (compute with "
              f"stragglers {comp * 1e3:.2f} + ring {comm * 1e3:.2f} + call "
              f"{per_call * 1e3:.2f}), measured {wall * 1e3:.2f} ms/step: measured / "
              f"predicted = {wall / total:.2f} (without the straggler and call "
              f"terms: {wall / plain:.2f})")
    finally:
        ray.shutdown()
        cluster.shutdown()


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _link(ring_cls, small=1024, big=16 << 20, reps=5):
    """``(bytes/s, seconds)`` of a 2-rank ring on loopback: two allreduce
    sizes solve ``t = 2 (1/2) M / bw + 2 lat``."""
    import threading

    rings = [ring_cls(r, 2, timeout=30) for r in range(2)]
    addrs = [r.address for r in rings]
    threads = [threading.Thread(target=r.connect, args=(addrs,)) for r in rings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times = {}
    for nbytes in (small, big):
        bufs = [np.ones(nbytes // 4, np.float32) for _ in rings]
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            ts = [threading.Thread(target=r.allreduce, args=(b,))
                  for r, b in zip(rings, bufs)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            best = min(best, time.perf_counter() - t0)
        times[nbytes] = best
    for r in rings:
        r.close()
    bw = (big - small) / max(times[big] - times[small], 1e-9)
    lat = max(times[small] - small / bw, 1e-7) / 2
    return bw, lat


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", action="store_true",
                    help="measure the per-sample compute of the MLP and convnet here")
    ap.add_argument("--validate", action="store_true",
                    help="predicted vs measured on the simulated 3-node cluster")
    args = ap.parse_args()
    models = {k: dict(v) for k, v in MODELS.items()}
    if args.measure:
        for name, c in measure().items():
            models[name]["sec_per_sample"] = c
    print_table(table(models))
    if args.validate:
        validate()


if __name__ == "__main__":
    main()
