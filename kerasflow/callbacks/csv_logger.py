"""`CSVLogger`: streams the epoch logs to a CSV file."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from typing import Any

from kerasflow.callbacks.callback import Callback

__all__ = ["CSVLogger"]


class CSVLogger(Callback):
    """Writes one CSV row per epoch: ``epoch`` (0-based), then the logs.

    Follows ``keras.callbacks.CSVLogger`` (Keras 3). The header is ``epoch``
    followed by the first epoch's log keys in sorted order. If the first
    epoch has no ``val_`` keys (e.g. validation runs only every few epochs),
    ``val_<key>`` columns are added for every key, as Keras does; missing
    values are written as ``NA``. Rows are flushed as they are written, so the
    file can be read during training; it is closed when training ends.

    Args:
        filename: str or path-like of the CSV file.
        separator: the field delimiter.
        append: append to an existing file (the header is written only if the
            file is empty) instead of overwriting it.

    Example:
        model.fit(x, y, epochs=10,
                  callbacks=[kf.callbacks.CSVLogger("training.csv")])
    """

    reads_model = False  # logs only

    def __init__(
        self, filename: str | os.PathLike, separator: str = ",", append: bool = False
    ) -> None:
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys: list[str] | None = None
        self.writer: csv.DictWriter | None = None
        self.csv_file = None
        self.append_header = True

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.append_header = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename, encoding="utf-8") as f:
                self.append_header = not f.readline()
        self._close()
        self.csv_file = open(  # noqa: SIM115 (closed in on_train_end)
            self.filename, "a" if self.append else "w", newline="", encoding="utf-8"
        )
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self.csv_file is None:  # used without on_train_begin
            self.on_train_begin()
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys += ["val_" + k for k in self.keys]
        if self.writer is None:
            self.writer = csv.DictWriter(
                self.csv_file,
                fieldnames=["epoch", *self.keys],
                delimiter=self.sep,
                lineterminator="\n",
                extrasaction="ignore",
            )
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, _csv_value(logs.get(k, "NA"))) for k in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        self._close()
        self.writer = None

    def _close(self) -> None:
        """Closes the file if it is open."""
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = None


def _csv_value(value: Any) -> Any:
    """Scalars as they are; sequences as ``"[a, b]"`` in one field (as Keras)."""
    if isinstance(value, str) or getattr(value, "ndim", None) == 0:
        return value
    if isinstance(value, Iterable):
        return f"[{', '.join(map(str, value))}]"
    return value
