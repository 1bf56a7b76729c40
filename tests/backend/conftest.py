"""Backend test setup: make ``tests.backend.gradcheck`` importable; the
``always_fast`` fixture.

``python -m pytest`` puts the repository root on sys.path, plain ``pytest`` does
not (tests/ has no ``__init__.py``); the helper import must work under both.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


@pytest.fixture
def always_fast(monkeypatch):
    """Fusion on, and the fused conv / pooling kernels for arrays of any size
    (they start at MIN_SIZE elements)."""
    from kerasflow import backend as K
    from kerasflow.backend.ops import conv_fast, pool_relu_grad

    monkeypatch.setattr(conv_fast, "MIN_SIZE", 0)
    monkeypatch.setattr(pool_relu_grad, "MIN_SIZE", 0)
    K.set_fusion(True)
    yield
    K.set_fusion(None)
