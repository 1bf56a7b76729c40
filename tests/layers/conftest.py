"""Layer test setup: ``tests.backend.gradcheck`` and ``contract`` importable
under both ``python -m pytest`` and plain ``pytest`` (the ``mixed_float16``
fixture is in ``tests/conftest.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

for _p in (Path(__file__).resolve().parents[2], Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
