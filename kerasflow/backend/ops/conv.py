"""Convolution and pooling ops (NHWC): conv2d, max_pool2d, avg_pool2d."""

from __future__ import annotations

__all__: list[str] = []
