"""The TF1 lecture program (examples/graph_linear_regression.py) learns w ≈ 2."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "graph_linear_regression.py"


def test_graph_linear_regression_learns_slope_two(capsys):
    spec = importlib.util.spec_from_file_location("graph_linear_regression", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    w = module.main()
    assert 1.9 < w < 2.1
    assert capsys.readouterr().out.strip() == str(w)
