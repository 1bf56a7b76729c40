"""``evaluate`` / ``predict`` throughput under ``MirroredStrategy``: on the
replicas against in the driver process (issue 21).

The 784-512-512-10 MLP of ``bench_scaling.py`` (float32, synthetic data of
MNIST's shape; ``--model convnet``: its small MNIST convnet), 10,000 rows,
``MirroredStrategy(N)`` with ``steps_per_execution`` K. Each repeat times
``model.evaluate`` and ``model.predict`` with
``strategy.evaluate_on_replicas = True`` (each replica runs its half of
every global batch with the weights it holds; the driver sums the losses and
metric deltas / concatenates the outputs) and ``= False`` (the driver runs
every batch itself, BLAS on every core, after pulling the weights when the
replicas are ahead), interleaved so load drifts hit both paths, with a 0.5 s
pause before each timed call (the driver's spinning BLAS threads would slow
the replicas' next call). One-time costs stay outside the timed region: a
warm-up call of each path first (steps compiled and loaded, arrays shipped
to the replicas once; the replicas find them by content afterwards).

``--behind``: each timed call runs as a short ``fit`` (4 batches, not
timed) ends, from a callback that reads no weights: the replicas are ahead
of the driver (as at a validation inside ``fit``), so the driver path pays
its pull of the weights and the replica path does not.

Prints the load before and after, samples/s per run and the medians, and
the ratio replicas / driver (> 1: the replicas are faster). Measured on 2
cores (load < 1.5; benchmarks/README.md): MLP 0.88 for evaluate, 0.92 for
predict (the driver's GEMMs use both cores), with --behind 1.00 / 0.99 (the
pull costs little here); convnet 1.72 / 1.53 (the driver's memory-bound
kernels use one core). The default stays the driver
(``evaluate_on_replicas = False``): the MLP is the case it was decided on.

Run: python benchmarks/bench_eval_replicas.py [--samples 10000] [--replicas 2]
         [--batch-size 256] [--spe 64] [--repeats 3] [--behind]
         [--model convnet]
(RAY_ADDRESS=local keeps it off any Ray cluster another process started.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_scaling  # noqa: E402  (the same models and data)
from bench_scaling import data, model_fn  # noqa: E402


def load():
    return "load %.2f %.2f %.2f" % os.getloadavg()


def timed(fn, n):
    # The driver's BLAS threads spin a while after its own calls: a pause
    # keeps them off the cores the replicas use next (either path may follow).
    time.sleep(0.5)
    start = time.perf_counter()
    fn()
    return n / (time.perf_counter() - start)


def _AtTrainEnd(kf, fn):
    """A callback running ``fn`` as ``fit`` ends, before the driver pulls the
    weights (it declares that it reads no weights)."""
    class AtTrainEnd(kf.callbacks.Callback):
        reads_model = False

        def on_train_end(self, logs=None):
            self.rate = fn()
    return AtTrainEnd()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=10000)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--spe", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", choices=("mlp", "convnet"), default="mlp")
    ap.add_argument("--behind", action="store_true",
                    help="a training call before each timed call (driver pulls)")
    args = ap.parse_args()
    bench_scaling.MODEL = args.model
    import kerasflow as kf

    x, y = data(args.samples)
    xt, yt = data(args.batch_size * 4, seed=1)  # the --behind training call
    bs = args.batch_size
    print(f"before: {load()} ({os.cpu_count()} cores); {args.samples} rows, "
          f"batch {bs}, K={args.spe}, {args.model}, MirroredStrategy({args.replicas})"
          f"{', replicas ahead of the driver' if args.behind else ''}")
    strategy = kf.distribute.MirroredStrategy(num_replicas=args.replicas)
    rates = {(p, k): [] for p in ("replicas", "driver") for k in ("evaluate",
                                                                  "predict")}
    with strategy.scope():
        model = model_fn(args.spe)
        model.compile(optimizer=kf.optimizers.Adam(1e-3),
                      loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], steps_per_execution=args.spe)
        model.fit(xt, yt, batch_size=bs, epochs=1, verbose=0)  # actors, shipping

        def run(path, kind):
            strategy.evaluate_on_replicas = path == "replicas"
            if kind == "evaluate":
                def call():
                    return timed(lambda: model.evaluate(x, y, batch_size=bs,
                                                        verbose=0), len(x))
            else:
                def call():
                    return timed(lambda: model.predict(x, batch_size=bs, verbose=0),
                                 len(x))
            if not args.behind:
                return call()
            at_end = _AtTrainEnd(kf, call)  # the replicas ahead of the driver
            model.fit(xt, yt, batch_size=bs, epochs=1, verbose=0, shuffle=False,
                      callbacks=[at_end])
            return at_end.rate

        for path in ("replicas", "driver"):  # warm-up: compile, load, ship
            for kind in ("evaluate", "predict"):
                run(path, kind)
        calls = strategy.replica_eval_calls, strategy.driver_eval_calls
        pulls = strategy.pulls
        for _ in range(args.repeats):
            for path in ("replicas", "driver"):
                for kind in ("evaluate", "predict"):
                    rates[path, kind].append(run(path, kind))
        calls = (strategy.replica_eval_calls - calls[0],
                 strategy.driver_eval_calls - calls[1])
        pulls = strategy.pulls - pulls
    print(f"after: {load()}; timed calls on the replicas / driver: {calls}; "
          f"pulls: {pulls}")
    for kind in ("evaluate", "predict"):
        med = {}
        for path in ("replicas", "driver"):
            r = rates[path, kind]
            med[path] = statistics.median(r)
            print(f"{kind:8s} {path:8s}: " + ", ".join(f"{v:,.0f}" for v in r)
                  + f" samples/s; median {med[path]:,.0f}")
        ratio = med["replicas"] / med["driver"]
        print(f"{kind:8s} ratio replicas / driver: {ratio:.2f}")


if __name__ == "__main__":
    main()
