"""Checkpoint payload formats: kerasflow's npz (``utils.checkpoint``) vs safetensors.

Saves and loads ~100 MB of float32 arrays in 20 tensors with each format,
through the same atomic write (``utils.file_io.atomic_write``: temp file,
fsync, rename), and prints MB/s and the safetensors/npz ratios. The load is
timed from a warm page cache (the file was just written), so it measures
decoding and copying, not the disk. safetensors checks sizes and offsets but
carries no checksum; the "+crc32" row adds the CRC-32 over the file that a
kerasflow reader would need to detect a flipped bit as zip's CRC-32 does.

Run (needs ``pip install safetensors``; kerasflow itself does not):
    PYTHONPATH=. python benchmarks/bench_checkpoint_format.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import zlib

import numpy as np

from kerasflow.utils import checkpoint as ckpt
from kerasflow.utils.file_io import atomic_write


def _arrays(total_mb=100, count=20, seed=0):
    rng = np.random.default_rng(seed)
    n = total_mb * 2**20 // 4 // count
    return {f"layer_{i}/kernel": rng.standard_normal(n, dtype=np.float32)
            for i in range(count)}


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        from safetensors.numpy import load, load_file, save  # noqa: PLC0415
    except ImportError:
        raise SystemExit("This benchmark needs safetensors: pip install "
                         "'safetensors==0.8.*'.") from None

    def load_checked(path):
        with open(path, "rb") as f:
            data = f.read()
        zlib.crc32(data)
        return load(data)

    arrays = _arrays()
    mb = sum(a.nbytes for a in arrays.values()) / 2**20
    with tempfile.TemporaryDirectory() as d:
        npz, st = os.path.join(d, "a.ckpt"), os.path.join(d, "a.safetensors")
        rows = {
            "npz": (_best(lambda: ckpt.save_checkpoint(npz, arrays,
                                                       update_state=False),
                          args.repeat),
                    _best(lambda: ckpt.load_checkpoint(npz), args.repeat)),
            "safetensors": (_best(lambda: atomic_write(st, save(arrays)),
                                  args.repeat),
                            _best(lambda: load_file(st), args.repeat)),
        }
        rows["safetensors+crc32"] = (rows["safetensors"][0],
                                     _best(lambda: load_checked(st), args.repeat))
    print(f"{mb:.0f} MB in {len(arrays)} float32 tensors, best of {args.repeat}; "
          f"load average {os.getloadavg()[0]:.2f}")
    for name, (save_s, load_s) in rows.items():
        print(f"{name:17s} save {mb / save_s:8.0f} MB/s   load {mb / load_s:8.0f} MB/s")
    ns, nl = rows["npz"]
    for name in ("safetensors", "safetensors+crc32"):
        ss, sl = rows[name]
        print(f"{name}/npz speed ratio: save {ns / ss:.2f}x   load {nl / sl:.2f}x")


if __name__ == "__main__":
    main()
