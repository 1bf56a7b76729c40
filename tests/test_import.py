"""``import kerasflow`` loads neither ray, cupy, torch nor tensorboardX."""

from __future__ import annotations

import subprocess
import sys


def test_import_kerasflow_is_light():
    code = ("import sys, kerasflow; "
            "print(' '.join(m for m in ('ray', 'cupy', 'torch', 'tensorboardX') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == ""
