"""The numba JIT, loaded lazily: thread count, parallel compilation, code caching.

``import kerasflow`` never imports numba; the first compiled step that has a
fusable kernel calls ``numba_module()``, which imports it once, sets its thread
count and returns it (None when numba cannot be imported: callers then keep the
numpy kernels, which compute the same results).

Threads follow the machine as numba sees it (``NUMBA_NUM_THREADS``, default the
core count), capped by ``OMP_NUM_THREADS`` when set (Ray sets it to 1 in actors
unless told otherwise, so replicas of a strategy do not oversubscribe cores).
A process that shares its host with other tasks of a cluster and was started
without Ray (a TF_CONFIG worker, a ``tf.train.Server`` task) takes the same
cap through ``share_threads``: ``OMP_NUM_THREADS`` set as Ray sets it, and the
already loaded BLAS limited to it (threadpoolctl), the thread variables the
user set winning.

Threading layer: numba's ``workqueue`` unless ``NUMBA_THREADING_LAYER`` says
otherwise. Its idle threads sleep instead of spinning, and it brings no second
OpenMP runtime into the process: with numba's ``omp`` layer loaded, PyTorch's
CPU training in the same process ran 13x slower on our 2-core machine
(``benchmarks/README.md``). workqueue is not safe for concurrent launches, so
every launch goes through ``launch``, which serializes them with a lock (each
kernel already uses all its threads) and applies the thread count in the
calling thread (numba's setting is per thread).

Each kernel is compiled twice: serial (releasing the GIL, for arrays below
``PARALLEL_MIN`` elements and for work that ``spread`` shares out over
threads, BLAS on one thread each), and with ``parallel=True`` (``prange``
loops; every output element is written by exactly one iteration and no loop
reduces across iterations, so results do not depend on the thread count,
schedule or variant),
``cache=True`` (compiled machine code persists across processes) and without
``fastmath`` (IEEE semantics: no reassociation, no flush-to-zero), and with
``error_model="numpy"`` (x / 0 gives inf or nan, no ZeroDivisionError), so a
fused kernel rounds each operation as numpy does.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import threading
from concurrent import futures

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_info, threadpool_limits

__all__ = ["PARALLEL_MIN", "THREAD_VARIABLES", "blas_threads", "cache_dir",
           "kernels", "launch", "load_source", "num_threads", "numba_module",
           "refresh_threads", "serial_blas", "share_threads", "small_products",
           "spread", "spread_sum", "worker_threads",
           "SERIAL_BLAS_MACS", "SPREAD_MIN", "SUM_BYTES", "SUM_GROUPS"]

# The variables through which a user sets BLAS's and numba's thread counts.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")

_LOCK = threading.RLock()
_LAUNCH = threading.Lock()
_TLS = threading.local()
_STATE: dict = {}


def num_threads(numba) -> int:
    """Threads for parallel kernels: numba's count, capped by OMP_NUM_THREADS."""
    n = int(numba.config.NUMBA_NUM_THREADS)
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        n = min(n, int(omp))
    return max(1, n)


def numba_module():
    """The numba module with its thread count set, or None if not importable."""
    with _LOCK:
        if "numba" not in _STATE:
            try:
                import numba  # heavy: imported only when a step compiles
            except Exception:  # noqa: BLE001  (ImportError, or a broken llvmlite)
                numba = None
            if numba is not None:
                if not os.environ.get("NUMBA_THREADING_LAYER"):
                    numba.config.THREADING_LAYER = "workqueue"
                _STATE["threads"] = num_threads(numba)
            _STATE["numba"] = numba
        return _STATE["numba"]


def refresh_threads():
    """Re-reads numba's thread count (after ``OMP_NUM_THREADS`` changed here)."""
    with _LOCK:
        if _STATE.get("numba") is not None:
            _STATE["threads"] = num_threads(_STATE["numba"])


def worker_threads() -> int:
    """Threads for work spread by the package itself (numba kernels, the
    fused attention's chunks): numba's count capped by ``OMP_NUM_THREADS``,
    or without numba the core count under the same cap. Cheap (no library
    scan), so callable per step."""
    if numba_module() is not None:
        return _STATE["threads"]
    n = os.cpu_count() or 1
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    return max(1, min(n, int(omp)) if omp.isdigit() and int(omp) > 0 else n)


def blas_threads():
    """The thread count of the BLAS numpy loaded (None when none is found)."""
    counts = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    return max(counts) if counts else None


def share_threads(threads: int) -> dict:
    """Caps this process's BLAS and numba threads at ``threads``, as Ray caps
    its actors' (``OMP_NUM_THREADS``), for a process that shares its host's
    cores with other processes of a job.

    A variable of ``THREAD_VARIABLES`` the user set wins: with
    ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` or ``MKL_NUM_THREADS`` set,
    BLAS keeps the count it read at load; with ``OMP_NUM_THREADS`` or
    ``NUMBA_NUM_THREADS`` set, numba keeps the user's count.

    Args:
        threads: threads for each library, at least 1.

    Returns:
        ``{"blas": n, "numba": n, "user": [variables the user set]}``, the
        counts now in force (None where the library is not loaded).
    """
    threads = max(1, int(threads))
    user = [v for v in THREAD_VARIABLES if os.environ.get(v, "").strip()]
    with _LOCK:
        if not {"OMP_NUM_THREADS", "NUMBA_NUM_THREADS"} & set(user):
            # Read by num_threads (numba's cap) and inherited by child
            # processes, whose BLAS reads it at load.
            os.environ["OMP_NUM_THREADS"] = str(threads)
        if not {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"} & set(
                user):
            # numpy loaded its BLAS at import: the variable alone comes too late.
            threadpool_limits(limits=threads, user_api="blas")
        numba = numba_module()
        refresh_threads()
        return {"blas": blas_threads(), "numba": _STATE.get("threads") if numba
                else None, "user": user}


class _SerialBlas:
    """Context manager: BLAS runs in the calling thread while inside.

    For loops of many small dependent products (a recurrent layer's ``h @ R``
    per time step, (128, 64) x (64, 192) for the GRU benchmark): OpenBLAS
    splits such a product over its threads, and waking them costs more than
    the product; on a loaded 2-core machine (load ~3) one product took 636 us
    on 2 threads and 72 us on 1, and ``rnn_fast_gru.gru_forward`` /
    ``gru_backward`` on the GRU benchmark's shapes (batch 128, 200 steps, 128
    features, 64 units; timed directly) 81 + 144 ms against 30 + 47 ms.

    Re-entrant and shared by threads: the first entry saves the thread counts
    and sets 1, the last exit restores them (OpenBLAS's count is per process).
    Setting a count is a direct call into the library (about 1 us).
    """

    def __init__(self):
        self._depth = 0
        self._saved = None
        self._libs = None
        self._lock = threading.Lock()

    def __enter__(self):
        with self._lock:
            if self._depth == 0:
                if self._libs is None:
                    self._libs = ThreadpoolController().select(
                        user_api="blas").lib_controllers
                self._saved = [lib.num_threads for lib in self._libs]
                for lib, n in zip(self._libs, self._saved):
                    if n != 1:
                        lib.set_num_threads(1)
            self._depth += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                for lib, n in zip(self._libs, self._saved):
                    if n != 1:
                        lib.set_num_threads(n)
        return False


serial_blas = _SerialBlas()

# Products below this many multiply-adds run on one BLAS thread inside
# ``small_products`` (see ``_SerialBlas``). Quiet 2-core machine, 1 vs 2 BLAS
# threads: (128, 64) x (64, 192) 37 vs 31 us, (128, 128) x (128, 512) 190 vs
# 133 us; under load one thread won at every size tried, by up to 9x at the
# smallest. Recurrent steps below this (the GRU benchmark's 1.6M) go serial,
# bigger ones (the LSTM benchmark's 8.4M) keep BLAS's threads.
SERIAL_BLAS_MACS = 4 << 20


def small_products(macs: int):
    """``serial_blas`` for a loop of products of ``macs`` multiply-adds each
    when they are below ``SERIAL_BLAS_MACS``, else a context that changes
    nothing (bigger products gain from BLAS's threads)."""
    return serial_blas if macs < SERIAL_BLAS_MACS else contextlib.nullcontext()


# Below this many elements touched, ``spread`` runs its work in the calling
# thread: handing out shares costs more than they gain (tens of microseconds).
SPREAD_MIN = 1 << 19


def spread(items, work, size):
    """Runs ``work(share)`` on up to ``worker_threads()`` threads at once (the
    calling thread and a pool kept for the next call), each ``share`` a
    round-robin share of ``items`` (``items[i::threads]``), with BLAS on one
    thread (``serial_blas``); returns when all are done, re-raising the first
    error. With one thread, or below ``SPREAD_MIN`` elements (``size``, the
    elements the work touches), ``work(items)`` runs as it is, BLAS on its
    threads.

    For work cut into items whose arithmetic does not depend on how they are
    shared out. On 2 cores, BLAS products run one per thread on one BLAS
    thread each scale where one product split by BLAS over both does not, or
    stalls while another process holds a core; and BLAS's threads, which spin
    for a while after each threaded product, are not left competing with the
    kernels that follow (the resnet benchmark's step: 436 -> 316 ms of
    kernels with no threaded BLAS, ``OPENBLAS_NUM_THREADS=1``). Serial numba
    kernels release the GIL (``kernels``), so threads run them side by side.
    ``work`` must not call ``spread`` (its share would wait on the pool it
    runs in).
    """
    threads = min(len(items), worker_threads())
    if threads <= 1 or size < SPREAD_MIN:
        work(items)
        return
    # By process: a forked child inherits the pool object but not its threads.
    key = ("pool", os.getpid(), threads - 1)
    with serial_blas:
        with _LOCK:
            pool = _STATE.get(key)
            if pool is None:
                pool = _STATE[key] = futures.ThreadPoolExecutor(
                    threads - 1, thread_name_prefix="kf-spread")
        pending = [pool.submit(work, items[i::threads]) for i in range(1, threads)]
        try:
            work(items[::threads])
        finally:
            for f in pending:
                f.result()


# ``spread_sum``'s partial sums: at most SUM_GROUPS of them, within SUM_BYTES
# (2 where the items allow, whatever their size).
SUM_GROUPS = 8
SUM_BYTES = 64 << 20


def spread_sum(items, shape, dtype, size, make):
    """The sum over ``items`` of one array each, computed on ``spread``'s
    threads, the same whatever their count.

    The items are cut into fixed groups of consecutive items (at most
    ``SUM_GROUPS``, their partial sums within ``SUM_BYTES``, at least 2 where
    there are 2 items); each group's items are summed in order, then the
    groups in order. The threads share out the groups.

    Args:
        items: a sequence (the slices of a batch, say).
        shape, dtype: of each item's array and of the sum.
        size: elements the work touches, as for ``spread``.
        make: called once in each thread; returns ``product(item, dst)``,
            which writes the item's array into ``dst`` (a C-contiguous array
            of ``shape``); per-thread buffers live in its closure.

    Returns:
        A new array of ``shape`` and ``dtype`` (zeros for no items).
    """
    if not len(items):
        return np.zeros(shape, dtype)
    part_bytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    groups = min(len(items), max(2, min(SUM_GROUPS, SUM_BYTES // part_bytes)))
    bounds = [len(items) * i // groups for i in range(groups + 1)]
    parts = np.empty((groups, *shape), dtype)

    def run(members):
        product = make()
        part = np.empty(shape, dtype)
        for i in members:
            for j, item in enumerate(items[bounds[i]:bounds[i + 1]]):
                product(item, part if j else parts[i])
                if j:
                    parts[i] += part

    spread(range(groups), run, size)
    total = parts[0]
    for part in parts[1:]:
        total += part
    return total


# Below this many elements a kernel runs in the calling thread: waking the
# pool costs more than the work (tens of microseconds on a loaded machine).
PARALLEL_MIN = 1 << 18


def launch(kernels, size, *args):
    """Runs ``kernels`` (serial, parallel) on ``args``: parallel for big sizes.

    Parallel launches go one at a time, with our thread count in the calling
    thread.
    """
    threads = _STATE["threads"]
    if threads == 1 or size < PARALLEL_MIN:
        return kernels[0](*args)
    with _LAUNCH:
        if getattr(_TLS, "threads", None) != threads:
            _STATE["numba"].set_num_threads(threads)
            _TLS.threads = threads
        return kernels[1](*args)


def kernels(source: str, name: str):
    """``(serial, parallel)`` numba kernels of function ``name`` in ``source``.

    ``source`` is the text of one module-level function using ``np`` and
    ``prange``. It is written to the kernel cache folder with a copy named
    ``name_serial`` (plain loop), so the serial and the ``parallel=True``
    versions get distinct entries in numba's on-disk cache (``cache=True``).
    Each compiles at its first call. The serial one releases the GIL
    (``nogil``), so ``spread``'s threads run serial kernels side by side (the
    conv kernels' batch slices).
    """
    key = ("kernels", source, name)
    with _LOCK:
        pair = _STATE.get(key)
        if pair is None:
            numba = numba_module()
            serial = source.replace(f"def {name}(", f"def {name}_serial(", 1)
            serial = serial.replace("prange(", "range(")
            # numba's cache index ignores compile options: the comment gives
            # the nogil build a file of its own, apart from older GIL builds.
            mod = load_source("import numpy as np\n\n# serial copy: nogil\n"
                              "prange = range\n\n\n" + source + "\n\n" + serial)
            mod.prange = numba.prange
            opts = {"cache": True, "error_model": "numpy"}
            pair = _STATE[key] = (
                numba.njit(nogil=True, **opts)(getattr(mod, f"{name}_serial")),
                numba.njit(parallel=True, **opts)(getattr(mod, name)))
        return pair


def cache_dir() -> str:
    """Where generated kernel sources live (numba caches next to them).

    ``KERASFLOW_CACHE_DIR``, else ``$XDG_CACHE_HOME/kerasflow`` or
    ``~/.cache/kerasflow``; the ``fusion`` subfolder is created on demand.
    """
    root = os.environ.get("KERASFLOW_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "kerasflow")
    path = os.path.join(root, "fusion")
    os.makedirs(path, exist_ok=True)
    return path


def load_source(source: str):
    """Imports generated Python ``source`` as a module kept in a file.

    The file is named by the hash of its text and written only if absent, so
    its path and timestamp stay stable and numba's on-disk cache (``cache=True``)
    finds the kernels compiled by an earlier process.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:20]
    name = f"kerasflow_fused_{digest}"
    with _LOCK:
        mod = sys.modules.get(name)
        if mod is not None:
            return mod
        path = os.path.join(cache_dir(), name + ".py")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            os.replace(tmp, path)  # atomic: concurrent processes agree
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
        return mod
