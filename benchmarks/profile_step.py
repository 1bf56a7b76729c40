"""Per-op profile of one training step of a ``bench_vs_keras.py`` model.

Times every kernel of the compiled ``train_step`` plan (``profile_cnn_step``'s
instrumentation) over ``--steps`` batches of ``model.fit`` and prints the median
ms per step by op type and the top nodes.

Run: python benchmarks/profile_step.py --model autoencoder [--steps 20]
     [--no-fusion] [--top 15] [--cpu-clock]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_cnn_step as P  # noqa: E402
from bench_vs_keras import BATCH, build, data  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="autoencoder")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--no-fusion", action="store_true")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--cpu-clock", action="store_true",
                   help="process CPU time per kernel (read by profile_cnn_step)")
    a = p.parse_args()
    import kerasflow as kf

    if a.no_fusion:
        kf.backend.set_fusion(False)
    P.instrument()
    x, y = data(a.model, BATCH * a.steps)
    model = build(kf, a.model)
    head = ([v[:BATCH * 2] for v in x] if isinstance(x, list) else x[:BATCH * 2])
    model.fit(head, y[:BATCH * 2], batch_size=BATCH, epochs=1, verbose=0)
    P._TIMES.clear()
    t = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    wall = (time.perf_counter() - t) / a.steps
    per_node = {k: float(np.median(v)) for k, v in P._TIMES.items()}
    total = sum(per_node.values())
    by_op = collections.defaultdict(lambda: [0.0, 0])
    for k, v in per_node.items():
        row = by_op[P._INFO[k][0]]
        row[0] += v
        row[1] += 1
    print(f"{a.model} train step, batch {BATCH}: {1e3 * wall:.1f} ms/step wall "
          f"({BATCH / wall:,.0f} samples/s), kernels {1e3 * total:.1f} ms, load "
          f"{os.getloadavg()[0]:.2f}")
    for op, (v, n) in sorted(by_op.items(), key=lambda r: -r[1][0]):
        print(f"  {op:28s} {n:3d} {1e3 * v:7.2f} ms {100 * v / total:5.1f}%")
    print(f"top {a.top} nodes")
    for k, v in sorted(per_node.items(), key=lambda r: -r[1])[:a.top]:
        op, name, shapes, _, _ = P._INFO[k]
        print(f"  {1e3 * v:7.2f} ms  {op:24s} {name[:50]} {shapes}")


if __name__ == "__main__":
    main()
