"""Ops test setup: ``tests.ops_oracle``, ``tests.keras_oracle`` and
``tests.backend.gradcheck`` importable under both ``python -m pytest`` and
plain ``pytest`` (tests/ has no ``__init__.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
