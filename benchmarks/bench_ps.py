"""ParameterServerStrategy: staleness sweep with stragglers, and push/pull
bandwidth, in one run.

(a) Staleness sweep (Li et al., OSDI 2014, Fig. 13: workers 50% idle at
tau=0, 1.7% at tau=16, tau=8 the best trade-off). A 32-64-10 MLP (Adam,
float32) on synthetic data, 2 workers and 2 shards, ``--steps`` global
batches of 64 per mode, one chief call per ``--steps`` (no barrier inside).
Straggling is made on purpose with the test hook
``kerasflow.distribute.parameter_server.stragglers.slow_workers``: every task sleeps a
uniform random time in [0, 2d] (d = ``--delay``), and
worker 1 sleeps ``--slow`` x d more (one slow worker). Prints, per mode
(tau = 0, 1, 4, 8, 16, async): global steps/s, the workers' idle share (time
between tasks over time between + in tasks; a task runs from setting its
pulled weights to handing its pushes over, the straggler sleep included),
tasks taken over by the free worker, the largest clock gap seen, the
training loss of the last 20 steps, and the idle time split by what the
workers waited on (``ParameterServerStrategy.idle_parts``, as shares of
between + in tasks): ``claim`` the scheduler's answer (the bounded-delay
rule included), ``pull`` the shards' weights, ``send`` handing the next
claims over.

(b) Push/pull bandwidth for a 40 MB model: a shard's 40 MB float32 buffer
pulled by a worker (Ray passes it actor to actor), a worker's 40 MB buffer
pushed to a shard (benchmark-only actors with the shards' and workers'
resources), each timed as the chief sees it (one call each, median
of ``--reps``), against ``np.copyto`` of 40 MB measured in the same run.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ps.py [--steps 200]
     [--delay 0.01] [--slow 0.5] [--reps 7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

MB = 1 << 20


def sweep(steps, delay, slow, modes=(0, 1, 4, 8, 16, None)):
    import kerasflow as kf
    from kerasflow.distribute.parameter_server.stragglers import slow_workers
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps * 64, 32)).astype("float32")
    y = (x[:, :10] @ rng.standard_normal(10) > 0).astype(int) + 2 * (x[:, 0] > 1)
    rows = []
    for tau in modes:
        strategy = slow_workers(kf.distribute.ParameterServerStrategy(
            num_ps=2, num_workers=2, staleness=tau, steps_per_execution=steps),
            {0: (0.0, 2 * delay), 1: (slow * delay, (2 + slow) * delay)})
        with strategy.scope():
            np.random.seed(0)
            model = kf.Sequential([kf.layers.Dense(64, activation="relu",
                                                   input_shape=(32,)),
                                   kf.layers.Dense(10)])
            model.compile(optimizer=kf.optimizers.Adam(1e-3), loss=kf.losses.
                          SparseCategoricalCrossentropy(from_logits=True))
            model.fit(x[:64 * 4], y[:64 * 4], batch_size=64, epochs=1, verbose=0)
            strategy.idle_seconds = strategy.busy_seconds = 0.0  # warm-up done
            strategy.steals, strategy.max_clock_gap = 0, 0
            strategy.idle_parts.clear()
            losses = []

            class Loss(kf.callbacks.Callback):
                def on_train_batch_end(self, batch, logs=None, out=losses):
                    out.append(logs["loss"])
            t0 = time.perf_counter()
            model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=False,
                      callbacks=[Loss()])
            seconds = time.perf_counter() - t0
        st = strategy.stats()
        br = strategy.idle_parts
        total = st["idle_seconds"] + st["busy_seconds"]
        # logs["loss"] is the running epoch mean: recover per-step losses.
        per = np.diff(np.asarray(losses) * np.arange(1, len(losses) + 1),
                      prepend=0.0)
        rows.append(("async" if tau is None else f"tau={tau}", steps / seconds,
                     st["idle_share"], strategy.steals, strategy.max_clock_gap,
                     float(np.mean(per[-20:]))))
        print(f"{rows[-1][0]:>8}  {rows[-1][1]:8.1f}  {100 * rows[-1][2]:6.1f}%  "
              f"{rows[-1][3]:6d}  {rows[-1][4]:4d}  {rows[-1][5]:.4f}  " +
              " ".join(f"{k} {100 * v / total:.1f}%" for k, v in sorted(br.items())),
              flush=True)
    return rows


class Endpoint:
    """Benchmark-only actor body: makes and takes buffers."""

    def __init__(self, rank, world):
        self.buf = None

    def emit(self, nbytes):
        """A float32 array of ``nbytes``."""
        if self.buf is None or self.buf.nbytes != nbytes:
            self.buf = np.ones(nbytes // 4, np.float32)
        return self.buf

    def receive(self, *arrays):
        """Bytes received (the arrays come from the other group's actor)."""
        return int(sum(np.asarray(a).nbytes for a in arrays))


def bandwidth(reps, size=40 * MB):
    from kerasflow.distribute.runtime.worker_group import WorkerGroup
    # The resources of ParameterServerStrategy's default shard and worker.
    ps = WorkerGroup(Endpoint, 1, num_cpus=0.25, name="shard")
    wk = WorkerGroup(Endpoint, 1, num_cpus=0.5, name="worker")
    try:
        def timed(fn):
            out = []
            for _ in range(reps + 1):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
            return float(np.median(out[1:]))  # first: allocation, page faults

        def pull():
            ref = wk.call(0, "receive", ps.call(0, "emit", size))
            assert wk.wait([ref], what="pull")[0] == size

        def push():
            ref = ps.call(0, "receive", wk.call(0, "emit", size))
            assert ps.wait([ref], what="push")[0] == size

        def empty():
            wk.wait([wk.call(0, "receive")], what="empty")
        base = timed(empty)
        t_pull, t_push = timed(pull), timed(push)
        a, b = np.ones(size // 4, np.float32), np.zeros(size // 4, np.float32)
        t_copy = timed(lambda: np.copyto(b, a))
    finally:
        ps.shutdown()
        wk.shutdown()
    return dict(pull=size / MB / t_pull, push=size / MB / t_push,
                copy=size / MB / t_copy, call_ms=1e3 * base,
                pull_ms=1e3 * t_pull, push_ms=1e3 * t_push)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.01)
    parser.add_argument("--slow", type=float, default=0.5)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--only", choices=("a", "b"), default=None)
    args = parser.parse_args()
    if args.only in (None, "a"):
        print(f"(a) {args.steps} global steps per mode, task sleep U[0, "
              f"{2e3 * args.delay:g}] ms, worker 1 +{args.slow:g}x{1e3 * args.delay:g}"
              f" ms")
        print("    mode   steps/s    idle  steals  gap  loss(last 20)")
        sweep(args.steps, args.delay, args.slow)
    if args.only in (None, "b"):
        bw = bandwidth(args.reps)
        print(f"(b) 40 MB: pull {bw['pull']:.0f} MB/s ({bw['pull_ms']:.1f} ms), push "
              f"{bw['push']:.0f} MB/s ({bw['push_ms']:.1f} ms), empty call "
              f"{bw['call_ms']:.2f} ms; np.copyto {bw['copy']:.0f} MB/s; pull/copyto "
              f"{bw['pull'] / bw['copy']:.2f}, push/copyto {bw['push'] / bw['copy']:.2f}")


if __name__ == "__main__":
    main()
