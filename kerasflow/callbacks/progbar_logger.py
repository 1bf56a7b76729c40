"""`ProgbarLogger`: prints progress to stdout, a tqdm bar or one line per epoch."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tqdm import tqdm

from kerasflow.callbacks._logs import as_scalar
from kerasflow.callbacks.callback import Callback
from kerasflow.utils import io_utils

__all__ = ["ProgbarLogger", "format_logs"]

# Batch-log entries that are bookkeeping, not metrics.
_NOT_METRICS = frozenset({"batch", "size", "outputs"})


class _Bar(tqdm):
    # No tqdm monitor thread: ProgbarLogger already rate-limits refreshes.
    monitor_interval = 0


def _bar_size() -> dict:
    """tqdm's ``ncols``/``nrows`` as 80 x 24 where the terminal reports a size
    of 0 (``script -qc``, a fresh pty, some CI consoles): with 0 tqdm draws
    nothing at all. Otherwise none: tqdm measures the terminal itself."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # no fileno: tqdm decides
        return {}
    return {"ncols": size.columns or 80, "nrows": size.lines or 24} if (
        size.columns == 0 or size.lines == 0) else {}


def format_logs(logs: dict | None) -> str:
    """Formats logs as ``"loss: 0.3011 - accuracy: 0.9123"``.

    Values print with 4 decimals, or in ``.4e`` when below 1e-3 in magnitude
    (as Keras' progress bar does); non-scalar entries and ``size``/``batch``
    are left out.

    Args:
        logs: dict of metric name to value, or ``None``.

    Returns:
        The formatted string; empty when there is nothing to show.
    """
    parts = []
    for key, value in (logs or {}).items():
        if key in _NOT_METRICS:
            continue
        x = as_scalar(value)
        if x is None:
            continue
        parts.append(f"{key}: {x:.4e}" if 0 < abs(x) < 1e-3 else f"{key}: {x:.4f}")
    return " - ".join(parts)


class ProgbarLogger(Callback):
    """Prints metrics to ``sys.stdout`` during `fit`, `evaluate` and `predict`.

    `fit` adds one automatically when ``verbose`` is not 0. The behaviour
    follows ``keras.callbacks.ProgbarLogger``, drawn with tqdm:

    - ``verbose=1``: one tqdm bar per epoch, ``desc`` ``"Epoch i/N"``, counting
      batches (``params["steps"]``; or samples when only ``params["samples"]``
      is known). The postfix shows the running metrics and the throughput in
      samples/s, from ``params["batch_size"]`` or the batch logs' ``size``.
      The bar is closed on epoch end with the final values, ``val_`` metrics
      included.
    - ``verbose=2``: exactly one line per epoch, printed on epoch end:
      ``"Epoch 1/5 - 2.1s - loss: 0.3011 - val_loss: 0.3324"``.
    - ``verbose=0``: nothing.

    When stdout is not a terminal (a log file, CI, ``nohup``) or
    ``kerasflow.utils.io_utils.disable_interactive_logging()`` was called,
    ``verbose=1`` writes the verbose-2 line per epoch instead of a bar, as
    Keras' non-interactive progress bar does.

    Validation inside `fit` is summarised in the epoch's bar or line; a
    standalone `evaluate` (or `predict`) gets its own bar or line.

    Per-batch cost is a clock read and a comparison; the bar and its postfix
    are redrawn at most once per ``mininterval`` seconds.

    Args:
        mininterval: least time between two redraws of the bar, in seconds.

    Example:
        model.fit(x, y, epochs=5, verbose=2)  # adds ProgbarLogger()
    """

    reads_model = False  # logs only

    def __init__(self, mininterval: float = 0.1) -> None:
        super().__init__()
        self.mininterval = mininterval
        self.verbose = 1
        self.epochs = 1
        self.target: int | None = None
        self.samples: int | None = None
        self.batch_size: int | None = None
        self._in_fit = False
        self._bar: tqdm | None = None
        self._by_samples = False
        self._desc = ""
        self._t0 = self._last = 0.0
        self._seen = self._batches = 0
        self._pending = 0

    def set_params(self, params: dict[str, Any]) -> None:
        """Reads ``verbose``, ``epochs``, ``steps``, ``samples``, ``batch_size``."""
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else int(verbose)
        self.epochs = params.get("epochs") or 1
        self.target = params.get("steps")
        self.samples = params.get("samples")
        self.batch_size = params.get("batch_size")

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._in_fit = True

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._start(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._step(logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._finish(logs)

    def on_train_end(self, logs: dict | None = None) -> None:
        self._in_fit = False
        self._close()

    def on_test_begin(self, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._start("Evaluate")

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._step(logs)

    def on_test_end(self, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._finish(logs)

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._start("Predict")

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._step(logs)

    def on_predict_end(self, logs: dict | None = None) -> None:
        self._finish(None)

    def _start(self, desc: str) -> None:
        """Starts timing a phase and, for verbose 1, opens its bar."""
        self._close()
        self._desc = desc
        self._t0 = self._last = time.perf_counter()
        self._seen = self._batches = 0
        self._pending = 0
        if self.verbose != 1 or not io_utils.interactive_terminal():
            return
        self._by_samples = self.target is None and self.samples is not None
        self._bar = _Bar(
            total=self.samples if self._by_samples else self.target,
            desc=desc,
            unit="sample" if self._by_samples else "batch",
            file=sys.stdout,
            **_bar_size(),
            leave=True,
            mininterval=0,
            miniters=1,
        )

    def _step(self, logs: dict | None) -> None:
        """Counts one batch; redraws the bar if ``mininterval`` has passed."""
        size = self.batch_size if logs is None else logs.get("size", self.batch_size)
        size = size or 0
        self._seen += size
        self._batches += 1
        if self._bar is None:
            return
        self._pending += size if self._by_samples else 1
        now = time.perf_counter()
        if now - self._last >= self.mininterval:
            self._last = now
            self._bar.set_postfix_str(self._postfix(logs, now), refresh=False)
            self._bar.update(self._pending)
            self._pending = 0

    def _finish(self, logs: dict | None) -> None:
        """Closes the bar with the final logs, or prints the verbose-2 line."""
        now = time.perf_counter()
        bar = self._bar
        if bar is not None:
            # Set n directly: update() would draw once more before close() does.
            bar.n += self._pending
            self._pending = 0
            if bar.total is None:
                bar.total = bar.n
            bar.set_postfix_str(self._postfix(logs, now), refresh=False)
            self._close()
        elif self.verbose == 2:
            parts = [self._desc, f"{now - self._t0:.1f}s", format_logs(logs)]
            print(" - ".join(p for p in parts if p), file=sys.stdout, flush=True)
        elif self.verbose == 1:  # not a terminal: the bar's final state, once
            total = self.target if self.target is not None else self._batches
            parts = [self._desc, f"{self._batches}/{total} batches",
                     f"{now - self._t0:.1f}s", self._postfix(logs, now)]
            print(" - ".join(p for p in parts if p), file=sys.stdout, flush=True)

    def _postfix(self, logs: dict | None, now: float) -> str:
        """Metrics plus throughput, e.g. ``"loss: 0.3011 - 5120 samples/s"``."""
        text = format_logs(logs)
        elapsed = now - self._t0
        if self._seen and elapsed > 0:
            rate = f"{self._seen / elapsed:.0f} samples/s"
            text = f"{text} - {rate}" if text else rate
        return text

    def _close(self) -> None:
        """Closes an open bar, printing its final state."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
