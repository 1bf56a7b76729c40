"""Compatibility APIs: ``kerasflow.compat.v1`` runs TensorFlow 1.x programs.

    import kerasflow.compat.v1 as tf   # the only line a TF1 program changes

This package is not imported by ``import kerasflow``.
"""

from __future__ import annotations

__all__ = ["v1"]


def __getattr__(name):
    if name == "v1":
        import importlib  # noqa: PLC0415

        return importlib.import_module("kerasflow.compat.v1")
    raise AttributeError(f"module 'kerasflow.compat' has no attribute '{name}'")
