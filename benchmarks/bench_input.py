"""Input pipeline overlap: ``fit`` on arrays vs on a ``kf.data.Dataset`` whose
``map`` costs about 1 ms per batch, run with ``num_parallel_calls=AUTOTUNE`` and
``prefetch(AUTOTUNE)``.

The model is the MNIST MLP (784-512-512-10, Adam, float32, batch 128) on
synthetic data of MNIST's shape. The Dataset's ``map`` does per-batch input
work: a numpy augmentation (noise and clipping, which releases the GIL) plus a
``sleep`` standing for a read, about ``--map-ms`` in all. With parallel map and
prefetch the input work runs on background threads while the step computes,
so the Dataset path should be within 10% of the arrays path (tf.data's
overlap, "Better performance with the tf.data API").

Also printed: the same Dataset without parallel map and prefetch (the input
work serial with the step), which shows what the overlap hides.

Run: PYTHONPATH=. python benchmarks/bench_input.py [--samples 30000] [--repeats 3]
Runs are interleaved (arrays, overlapped dataset, serial dataset; again ...) and
medians compared, so a load change hits all alike. Check ``uptime`` first: on a
loaded machine the background threads have no free core.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

BATCH = 128


def model():
    import kerasflow as kf

    np.random.seed(0)
    m = kf.Sequential([
        kf.layers.Dense(512, activation="relu", input_shape=(784,)),
        kf.layers.Dense(512, activation="relu"),
        kf.layers.Dense(10),
    ])
    m.compile(optimizer=kf.optimizers.Adam(1e-3),
              loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def augment_cost(map_ms):
    """A per-batch map of about ``map_ms`` ms: numpy work plus a read-like wait."""
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.01, (BATCH, 784)).astype("float32")

    def augment(x, y):
        start = time.perf_counter()
        x = np.clip(x + noise[: len(x)], 0.0, 1.0)
        left = map_ms / 1e3 - (time.perf_counter() - start)
        if left > 0:
            time.sleep(left)
        return x, y

    return augment


def timed_fit(make_input, x, y):
    """Samples/s of one epoch; ``make_input`` returns ``fit``'s positional
    arguments. A short first fit traces and compiles outside the timing."""
    m = model()
    m.fit(*make_input(x[: BATCH * 4], y[: BATCH * 4]), batch_size=BATCH, epochs=1,
          verbose=0)
    data = make_input(x, y)
    start = time.perf_counter()
    m.fit(*data, batch_size=BATCH, epochs=1, verbose=0)
    return len(x) / (time.perf_counter() - start)


def main():
    import kerasflow as kf

    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--map-ms", type=float, default=1.0)
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    x = rng.rand(args.samples, 784).astype("float32")
    y = rng.randint(0, 10, args.samples)
    augment = augment_cost(args.map_ms)

    def arrays(a, b):
        return a, b

    def overlapped(a, b):
        return (kf.data.Dataset.from_tensor_slices((a, b)).batch(BATCH)
                .map(augment, num_parallel_calls=kf.data.AUTOTUNE)
                .prefetch(kf.data.AUTOTUNE),)

    def serial(a, b):
        return (kf.data.Dataset.from_tensor_slices((a, b)).batch(BATCH)
                .map(augment),)

    def plain(a, b):
        return (kf.data.Dataset.from_tensor_slices((a, b)).batch(BATCH),)

    # The map's own cost, measured alone.
    xb, yb = x[:BATCH], y[:BATCH]
    t0 = time.perf_counter()
    for _ in range(50):
        augment(xb, yb)
    map_ms = (time.perf_counter() - t0) / 50 * 1e3
    print(f"load average before: {os.getloadavg()[0]:.2f}; map alone {map_ms:.2f} "
          f"ms per batch of {BATCH}")
    rates = {"arrays": [], "dataset (parallel map + prefetch)": [],
             "dataset (serial map, no prefetch)": [], "dataset (no map)": []}
    for _ in range(args.repeats):
        for name, make in zip(rates, (arrays, overlapped, serial, plain)):
            rates[name].append(timed_fit(make, x, y))
    # Ratios round by round (each against the arrays run just before it), so a
    # drift in the machine's speed cancels; their median is the figure to quote.
    for name, values in rates.items():
        ratios = [v / a for v, a in zip(values, rates["arrays"])]
        print(f"{name:36s} {statistics.median(values):9.0f} samples/s  "
              f"(x{statistics.median(ratios):.3f} of arrays, median of rounds; "
              f"runs {', '.join(f'{v:.0f}' for v in values)})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
