"""The reference for ``bench_scaling.py``: what data parallelism gains PyTorch
on this machine. PyTorch DistributedDataParallel with the gloo backend, N
processes of one thread each, against one PyTorch process using every core,
on the same MLP and global batch as ``bench_scaling.py`` (784-512-512-10,
ReLU, softmax cross-entropy, Adam 1e-3, float32, global batch 256, synthetic
MNIST-shaped data). Each repeat times one epoch of each after a warm-up epoch,
the two interleaved; prints samples/s, their medians and the ratio DDP / one
process, with the load average before and after.

This is the comparison issue 21 asks for beside MirroredStrategy(2) / one
kerasflow process: if DDP(2 x 1 thread) does not beat torch(1 x 2 threads)
here either, two replicas on two cores cannot be expected to pay much.

Run: python benchmarks/bench_torch_ddp.py [--samples 30720] [--repeats 5]
     [--world 2]     (needs torch: pip install torch==2.13.0)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys

BATCH = 256

CHILD = r"""
import os, sys, time
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

rank, world, port, samples = (int(a) for a in sys.argv[1:5])
torch.manual_seed(0)
if world > 1:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.Adam(model.parameters(), 1e-3)
loss_fn = nn.CrossEntropyLoss()
rng = np.random.RandomState(rank)
local = 256 // world
x = torch.from_numpy(rng.rand(samples // world, 784).astype("float32"))
y = torch.from_numpy(rng.randint(0, 10, samples // world))

def epoch():
    for i in range(0, len(x) - local + 1, local):
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x[i:i + local]), y[i:i + local]).backward()
        opt.step()

epoch()  # warm-up
if world > 1:
    dist.barrier()
t0 = time.perf_counter()
epoch()
if world > 1:
    dist.barrier()
dt = time.perf_counter() - t0
if rank == 0:
    print(f"RESULT {samples / dt:.1f}", flush=True)
if world > 1:
    dist.destroy_process_group()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(world, samples, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(r), str(world),
                               str(port), str(samples)], env=env,
                              stdout=subprocess.PIPE, text=True)
             for r in range(world)]
    out = [p.communicate(timeout=600)[0] for p in procs]
    for p, o in zip(procs, out):
        if p.returncode:
            raise RuntimeError(f"torch run failed (world={world}): {o[-500:]}")
    line = [ln for ln in out[0].splitlines() if ln.startswith("RESULT ")][0]
    return float(line.split()[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=30720)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--world", type=int, default=2)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    print(f"load before: {os.getloadavg()[0]:.2f}; {cores} cores")
    one, ddp = [], []
    for _ in range(args.repeats):
        one.append(run(1, args.samples, cores))
        ddp.append(run(args.world, args.samples, max(1, cores // args.world)))
        print(f"  torch 1 x {cores} threads {one[-1]:9,.0f}   DDP gloo {args.world} x "
              f"{max(1, cores // args.world)} {ddp[-1]:9,.0f} samples/s", flush=True)
    ratios = [d / o for d, o in zip(ddp, one)]
    print(f"median: torch one process {statistics.median(one):,.0f}, DDP "
          f"{statistics.median(ddp):,.0f} samples/s; DDP / one process "
          f"{statistics.median(ratios):.2f} (median of per-repeat ratios)")
    load = os.getloadavg()[0]
    print(f"load after: {load:.2f}" + ("  (above 1: figures disturbed)" if load > 1 else ""))


if __name__ == "__main__":
    main()
