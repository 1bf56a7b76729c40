"""GPU training throughput: kerasflow on cupy vs PyTorch on CUDA, same process.

Trains the MLP 784-512-512-10 and the classic Keras MNIST convnet (Conv 32,
Conv 64, MaxPool, Dropout, Dense 128, Dropout, Dense 10) with Adam, float32,
batch 128, on synthetic data of MNIST's shape; one warm-up epoch, then the
second epoch is timed (the data already on the device for both frameworks).
Prints samples/s, the ratio kerasflow / torch, and what cupy's GEMM gives on
the MLP's largest layer, so the figures read against the hardware.

Run (on a machine with a CUDA GPU, cupy and torch):
    PYTHONPATH=. python benchmarks/bench_gpu.py [--samples 30720] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

BATCH = 128


def data(n, conv, seed=0):
    rng = np.random.RandomState(seed)
    shape = (n, 28, 28, 1) if conv else (n, 784)
    return rng.rand(*shape).astype("float32"), rng.randint(0, 10, n)


def kerasflow_model(conv):
    import kerasflow as kf

    L = kf.layers
    np.random.seed(0)
    if conv:
        layers = [L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
                  L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2),
                  L.Dropout(0.25), L.Flatten(), L.Dense(128, activation="relu"),
                  L.Dropout(0.5), L.Dense(10)]
    else:
        layers = [L.Dense(512, activation="relu", input_shape=(784,)),
                  L.Dense(512, activation="relu"), L.Dense(10)]
    model = kf.Sequential(layers)
    model.compile(optimizer=kf.optimizers.Adam(1e-3),
                  loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def bench_kerasflow(conv, x, y):
    from kerasflow import backend as K

    K.set_device("gpu")
    model = kerasflow_model(conv)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # warm-up
    K.get_xp().cuda.Device().synchronize()
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    K.get_xp().cuda.Device().synchronize()
    return len(x) / (time.perf_counter() - start)


def bench_torch(conv, x, y):
    import torch

    nn = torch.nn
    torch.manual_seed(0)
    dev = torch.device("cuda")
    if conv:
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3),
                              nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
                              nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
                              nn.Linear(128, 10))
        x = x.transpose(0, 3, 1, 2)
    else:
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                              nn.ReLU(), nn.Linear(512, 10))
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    xt = torch.from_numpy(np.ascontiguousarray(x)).to(dev)
    yt = torch.from_numpy(y.astype(np.int64)).to(dev)
    n = len(x)

    def epoch():
        perm = torch.randperm(n, device=dev)
        for i in range(0, n, BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss_fn(model(xt[idx]), yt[idx]).backward()
            opt.step()
    epoch()
    torch.cuda.synchronize()
    start = time.perf_counter()
    epoch()
    torch.cuda.synchronize()
    return n / (time.perf_counter() - start)


def gemm_tflops(m=BATCH, k=784, n=512, reps=200):
    import cupy

    a = cupy.random.rand(m, k, dtype=cupy.float32)
    b = cupy.random.rand(k, n, dtype=cupy.float32)
    a @ b
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    cupy.cuda.Device().synchronize()
    return 2 * m * k * n * reps / (time.perf_counter() - start) / 1e12


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30720)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"cupy GEMM {BATCH}x784 @ 784x512 float32: {gemm_tflops():.2f} TFLOP/s "
          f"(a launch-bound shape: the MLP's steps are latency-, not FLOP-bound)")
    for conv in (False, True):
        name = "convnet" if conv else "MLP"
        n = args.samples // (4 if conv else 1)
        x, y = data(n, conv)
        kf_runs, torch_runs = [], []
        for _ in range(args.repeats):
            kf_runs.append(bench_kerasflow(conv, x, y))
            torch_runs.append(bench_torch(conv, x, y))
        kf_med, t_med = statistics.median(kf_runs), statistics.median(torch_runs)
        ratios = [a / b for a, b in zip(kf_runs, torch_runs)]
        print(f"{name:8s} kerasflow/cupy {kf_med:10,.0f} samples/s   torch/cuda "
              f"{t_med:10,.0f} samples/s   ratio (median per round) "
              f"{statistics.median(ratios):.2f}", flush=True)


if __name__ == "__main__":
    main()
