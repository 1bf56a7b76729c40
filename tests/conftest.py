"""Shared fixtures: data location, GPU skipping, float64 for gradient checks,
the global "mixed_float16" policy; the repository root on sys.path."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

# Tests import helpers as ``tests.keras_oracle`` / ``tests.backend.gradcheck``:
# ``python -m pytest`` puts the repository root on sys.path, plain ``pytest``
# does not (tests/ has no ``__init__.py``), so it is put there for every folder.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# Every Ray the tests start runs as kerasflow's own: token authentication and
# loopback only (kerasflow/distribute/runtime/ray.py). Ray reads these when it
# is first imported, so they are set before any test module imports it.
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

from threadpoolctl import threadpool_limits  # noqa: E402

import kerasflow as kf  # noqa: E402
from kerasflow import backend as K  # noqa: E402
from kerasflow.backend import jit  # noqa: E402
from tests.keras_oracle import keras_numpy  # noqa: E402

_THREADS = (os.environ.get("OMP_NUM_THREADS"), jit.blas_threads())


def _data_dir():
    env = os.environ.get("KERASFLOW_DATA_DIR")
    if env:
        return Path(env)
    guess = Path(__file__).resolve().parents[2] / "shared" / "data"
    return guess if guess.exists() else None


@pytest.fixture(autouse=True)
def _threads_as_they_were():
    """A test that gave this process a task's share of the cores (a TF_CONFIG
    strategy or a tf.train.Server built here) leaves the later tests, and the
    processes they start, the threads pytest started with."""
    yield
    omp, blas = _THREADS
    if os.environ.get("OMP_NUM_THREADS") != omp or jit.blas_threads() != blas:
        if omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = omp
        if blas is not None:
            threadpool_limits(limits=blas, user_api="blas")
        jit.refresh_threads()


@pytest.fixture(scope="session")
def data_dir():
    """The shared datasets folder ($KERASFLOW_DATA_DIR or ../shared/data)."""
    d = _data_dir()
    if d is None or not d.exists():
        pytest.skip("datasets not found: set KERASFLOW_DATA_DIR")
    # The loaders (kf.datasets.*.load_data()) read the variable: found by the
    # guess above, the data must be found by them too, not downloaded.
    os.environ.setdefault("KERASFLOW_DATA_DIR", str(d))
    return d


@pytest.fixture
def mixed_float16():
    """The global policy "mixed_float16" in kerasflow and in Keras' oracle
    (yielded); both back to unset / "float32" afterwards."""
    keras = keras_numpy()
    kf.mixed_precision.set_global_policy("mixed_float16")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield keras
    finally:
        # Unset, not a pinned float32: later tests switch floatx and expect
        # layers to follow it.
        kf.dtype_policies._GLOBAL[0] = None
        keras.mixed_precision.set_global_policy("float32")


def pytest_collection_modifyitems(config, items):
    if K.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def float64():
    """Runs a test with floatx float64 (numerical gradient checks)."""
    old = K.floatx()
    K.set_floatx("float64")
    yield
    K.set_floatx(old)
