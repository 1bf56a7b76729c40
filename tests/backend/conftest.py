"""Backend test setup: make ``tests.backend.gradcheck`` importable.

``python -m pytest`` puts the repository root on sys.path, plain ``pytest`` does
not (tests/ has no ``__init__.py``); the helper import must work under both.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
