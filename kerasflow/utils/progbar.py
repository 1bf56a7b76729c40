"""``Progbar``: a text progress bar with running metric averages (Keras 3's
``keras.utils.Progbar``)."""

from __future__ import annotations

import sys
import time

import numpy as np

from kerasflow.utils import io_utils

__all__ = ["Progbar"]


class Progbar:
    """Displays progress toward ``target`` steps and the average of each value
    since the start (or its latest value, for ``stateful_metrics``).

    Args:
        target: total steps expected; None when unknown.
        width: the bar's width in characters.
        verbose: 0 silent, 1 a bar redrawn in place, 2 one line when done.
        interval: minimum seconds between redraws.
        stateful_metrics: names whose values are shown as given, not averaged
            (all others are averaged).
        stateless_metrics: instead, the only names that are averaged (all
            others are shown as given).
        unit_name: the unit shown in the rate ("step").

    Raises:
        ValueError: both ``stateful_metrics`` and ``stateless_metrics``.

    Example::

        >>> bar = Progbar(target=10)
        >>> for i in range(10):
        ...     bar.update(i + 1, values=[("loss", 0.5)])
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05,
                 stateful_metrics=None, stateless_metrics=None, unit_name="step"):
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Only one of `stateful_metrics` or "
                             "`stateless_metrics` can be provided. Received: "
                             f"stateful_metrics={stateful_metrics}, "
                             f"stateless_metrics={stateless_metrics}")
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self.stateless_metrics = (None if stateless_metrics is None
                                  else set(stateless_metrics))
        self._dynamic = io_utils.interactive_terminal()
        self._seen_so_far = 0
        self._values: dict = {}
        self._values_order: list = []
        self._start = time.time()
        self._last_update = 0.0
        self._total_width = 0

    def update(self, current, values=None, finalize=None):
        """Moves the bar to step ``current`` and records ``values``.

        Args:
            current: the index of the current step.
            values: ``[(name, value), ...]``; a value counts once per step
                advanced since the last update, as Keras weights it; on the
                final update it replaces the average.
            finalize: whether this is the last update (default: ``current >=
                target`` when the target is known).
        """
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for k, v in values or []:
            if k not in self._values_order:
                self._values_order.append(k)
            # As Keras 3: the final update's value is shown as given (it is
            # the epoch's own result), earlier ones are averaged per step.
            if finalize or k in self.stateful_metrics or (
                    self.stateless_metrics is not None
                    and k not in self.stateless_metrics):
                self._values[k] = [v, 1]
                continue
            steps = max(current - self._seen_so_far, 1)
            total, count = self._values.get(k, [0, 0])
            self._values[k] = [total + v * steps, count + steps]
        self._seen_so_far = current
        now = time.time()
        if self.verbose == 1:
            if not finalize and now - self._last_update < self.interval:
                return
            self._write(self._bar(current) + self._info(current, now, finalize),
                        finalize)
        elif self.verbose == 2 and finalize:
            self._write(self._counter(current) + self._info(current, now, True),
                        True)
        self._last_update = now

    def add(self, n, values=None):
        """``update(current + n, values)``."""
        self.update(self._seen_so_far + n, values)

    def average(self, name):
        """The value shown for ``name``: its mean so far, or its latest value
        for a stateful metric; None if never given."""
        if name not in self._values:
            return None
        total, count = self._values[name]
        return np.mean(total / max(count, 1))

    def _counter(self, current):
        if self.target is None:
            return f"{current}/Unknown"
        digits = int(np.log10(self.target)) + 1 if self.target > 0 else 1
        return f"{current:{digits}d}/{self.target}"

    def _bar(self, current):
        text = self._counter(current)
        if self.target is None:
            return text + " "
        done = int(self.width * min(current / max(self.target, 1), 1.0))
        arrow = "=" * max(done - 1, 0) + (
            (">" if current < self.target else "=") if done else "")
        return f"{text} [{arrow}{'.' * (self.width - done)}] "

    def _info(self, current, now, finalize):
        elapsed = now - self._start
        per = elapsed / current if current else 0.0
        if finalize:
            info = f"{elapsed:.0f}s {per * 1e3:.0f}ms/{self.unit_name}"
        elif self.target is not None:
            info = f"ETA: {per * (self.target - current):.0f}s"
        else:
            info = f"{elapsed:.0f}s"
        for k in self._values_order:
            avg = self.average(k)
            info += f" - {k}: " + (f"{avg:.4f}" if abs(avg) > 1e-3 else
                                   f"{avg:.4e}")
        return info

    def _write(self, line, finalize):
        pad = " " * max(self._total_width - len(line), 0)
        self._total_width = len(line)
        if self._dynamic and self.verbose == 1:
            sys.stdout.write("\r" + line + pad + ("\n" if finalize else ""))
        elif finalize or self.verbose == 1:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
