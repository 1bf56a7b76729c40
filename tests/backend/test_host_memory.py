"""host_memory.tune_allocator: freed step-sized buffers are reused, not
unmapped and faulted in again (counted with the kernel's minor page faults in
fresh processes, tuned and with KERASFLOW_MALLOC_TUNING=0)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="glibc's mallopt")

_PROBE = r"""
import json, resource
import numpy as np
from kerasflow.backend import host_memory
state = host_memory.tune_allocator()
shape = (128, 2, 200, 200)  # 41 MB: above glibc's default mmap threshold
np.empty(shape, np.float32).fill(1.0)  # allocated and freed once
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    np.empty(shape, np.float32).fill(1.0)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(json.dumps({"state": state, "faults": faults}))
"""


def _probe(**env):
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True,
                         text=True, timeout=120, check=True,
                         env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_freed_step_buffers_are_reused_without_page_faults():
    for var in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"):
        if os.environ.get(var):
            pytest.skip(f"{var} is set in this environment")
    tuned = _probe()
    plain = _probe(KERASFLOW_MALLOC_TUNING="0")
    assert tuned["state"] == {"tuned": True, "reason": ""}
    assert plain["state"] == {"tuned": False, "reason": "KERASFLOW_MALLOC_TUNING=0"}
    if plain["faults"] < 100:
        pytest.skip(f"this kernel faults only {plain['faults']} times per fresh "
                    f"41 MB buffer: nothing to compare")
    assert tuned["faults"] <= 0.1 * plain["faults"], (tuned, plain)


def test_user_malloc_variables_win():
    state = _probe(MALLOC_TRIM_THRESHOLD_="131072")["state"]
    assert state == {"tuned": False,
                     "reason": "the user set glibc's MALLOC_* variables"}
