"""Host memory: glibc's allocator kept from returning big buffers to the OS.

A training step on the CPU allocates its large intermediates afresh each run
(attention scores of the transformer benchmark: (128, 2, 200, 200) float32,
41 MB, about ten per step). glibc serves allocations above ``M_MMAP_THRESHOLD``
(at most 32 MB by default, adjusted as the process frees) with ``mmap`` and
unmaps them on free, so every step pays the kernel's page faults again on
first touch: allocating and filling that array took 5.4-9.0 ms fresh against
1.2-1.4 ms when the memory was reused (``ru_minflt`` 803 per allocation vs 0;
measured on this project's 2-core machine; ``tests/backend/test_host_memory.py``
counts the faults, ``docs/benchmarks.md`` has the benchmark figures).

``tune_allocator`` raises ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` to 1 GiB
with ``mallopt(3)``, as PyTorch's and TensorFlow's CPU allocators keep freed
blocks for reuse: buffers up to 1 GiB come from the heap and are reused by the
next step. The cost is that the process keeps its peak heap (freed blocks
are not returned to the OS until a larger one is freed at the top).

It runs once when ``kerasflow.backend`` is imported, on glibc only, and not
when ``KERASFLOW_MALLOC_TUNING=0`` or the user set glibc's own variables
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

__all__ = ["tune_allocator"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_LIMIT = 1 << 30
_USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                   "MALLOC_TOP_PAD_")
_STATE: dict = {}


def tune_allocator() -> dict:
    """Keeps glibc from unmapping freed buffers below 1 GiB (see the module).

    Returns:
        ``{"tuned": bool, "reason": str}``: whether the thresholds were set,
        and why not when they were not (not Linux/glibc, switched off, the
        user's own ``MALLOC_*`` variables). Idempotent.
    """
    if "result" in _STATE:
        return _STATE["result"]
    result = {"tuned": False, "reason": ""}
    if os.environ.get("KERASFLOW_MALLOC_TUNING", "").strip() == "0":
        result["reason"] = "KERASFLOW_MALLOC_TUNING=0"
    elif any(os.environ.get(v) for v in _USER_VARIABLES):
        result["reason"] = "the user set glibc's MALLOC_* variables"
    elif platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        result["reason"] = "not glibc"
    else:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            ok = (libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(_LIMIT)) == 1
                  and libc.mallopt(_M_TRIM_THRESHOLD, ctypes.c_int(_LIMIT)) == 1)
        except (OSError, AttributeError):
            ok = False
        result = {"tuned": ok, "reason": "" if ok else "mallopt refused"}
    _STATE["result"] = result
    return result
