"""`TensorBoard`: writes scalar summaries of training for TensorBoard."""

from __future__ import annotations

import os
from typing import Any

from kerasflow.callbacks._logs import as_scalar
from kerasflow.callbacks.callback import Callback, check_freq
from kerasflow.saving.weight_names import weight_keys
from kerasflow.summary import FileWriter, histogram_summary

__all__ = ["TensorBoard"]


class TensorBoard(Callback):
    """Logs training metrics as TensorBoard scalar summaries.

    Follows the scalar part of ``keras.callbacks.TensorBoard`` (Keras 3),
    writing with ``kerasflow.summary.FileWriter`` (the one event writer; it
    imports tensorboardX on first write, so ``import kerasflow`` does not).
    As in Keras, training metrics go
    to ``<log_dir>/train`` and validation metrics to ``<log_dir>/validation``
    under the same tag without the ``val_`` prefix, so TensorBoard draws them
    in one chart:

    - epoch end: ``epoch_<name>`` (``epoch_loss``, ``epoch_accuracy``, …) at
      step ``epoch`` (0-based), plus ``epoch_learning_rate`` when the
      optimizer's learning rate is a float;
    - with an integer ``update_freq`` N: ``batch_<name>`` every N training
      batches, at the global batch count (1-based, across epochs).

    - with ``histogram_freq`` N > 0: a histogram of every weight,
      ``<weight path>/histogram`` (``dense/kernel/histogram``), every N epochs
      in ``<log_dir>/train``, as Keras writes them.

    The writers are flushed and closed when training ends. View with
    ``tensorboard --logdir <log_dir>``.

    Args:
        log_dir: str or path-like folder of the event files.
        histogram_freq: epochs between weight histograms; 0 (default): none.
        write_graph, write_images, write_steps_per_second, profile_batch,
            embeddings_freq, embeddings_metadata: Keras 3's arguments,
            accepted so keras.io programs run; kerasflow writes no graph,
            weight images, step rate, profiler trace (there is no TF
            profiler) nor embedding projector files.
        update_freq: ``"epoch"``, ``"batch"`` (same as 1) or a positive int:
            also write batch-level scalars every that many batches.

    Raises:
        ValueError: if ``update_freq`` is not ``"epoch"``, ``"batch"`` or a
            positive int, or ``histogram_freq`` / ``embeddings_freq`` is
            negative.
        ImportError: on the first write, if tensorboardX is not installed.

    Example:
        tb = kf.callbacks.TensorBoard(log_dir="./logs")
        model.fit(x, y, validation_data=(xv, yv), epochs=5, callbacks=[tb])
    """

    def __init__(
        self, log_dir: str | os.PathLike = "logs", histogram_freq: int = 0,
        write_graph: bool = True, write_images: bool = False,
        write_steps_per_second: bool = False, update_freq: str | int = "epoch",
        profile_batch: int | tuple = 0, embeddings_freq: int = 0,
        embeddings_metadata: dict | None = None,
    ) -> None:
        super().__init__()
        update_freq = check_freq("TensorBoard", "update_freq", update_freq,
                                 also=("batch",))
        for name, value in (("histogram_freq", histogram_freq),
                            ("embeddings_freq", embeddings_freq)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"TensorBoard expects `{name}` to be an int >= 0 "
                                 f"(epochs; 0 turns it off). Received: "
                                 f"{name}={value!r}.")
        self.histogram_freq, self.embeddings_freq = histogram_freq, embeddings_freq
        self.write_graph, self.write_images = write_graph, write_images
        self.write_steps_per_second = write_steps_per_second
        self.profile_batch = profile_batch
        self.embeddings_metadata = embeddings_metadata
        self.log_dir = os.fspath(log_dir)
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._writers: dict[str, Any] = {}
        self._global_train_batch = 0

    def _writer(self, logdir: str) -> FileWriter:
        """The FileWriter for ``logdir``, created on first use."""
        if logdir not in self._writers:
            self._writers[logdir] = FileWriter(logdir)
        return self._writers[logdir]

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._global_train_batch = 0

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._global_train_batch += 1
        if self.update_freq == "epoch" or self._global_train_batch % self.update_freq:
            return
        self._write(self._train_dir, "batch_", logs, self._global_train_batch)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if "learning_rate" not in train:
            lr = _learning_rate(self.model)
            if lr is not None:
                train["learning_rate"] = lr
        self._write(self._train_dir, "epoch_", train, epoch)
        self._write(self._val_dir, "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)

    def _write_histograms(self, epoch: int) -> None:
        """A histogram per weight of the model, named by its variable path."""
        writer = self._writer(self._train_dir)
        names, _ = weight_keys(self.model)  # "dense/kernel", as saved files name them
        for name, weight in zip(names, self.model.weights):
            writer.add_summary(histogram_summary(
                f"{name.replace(':', '_')}/histogram", weight.numpy()), epoch)

    def on_train_end(self, logs: dict | None = None) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def _write(self, logdir: str, prefix: str, logs: dict | None, step: int) -> None:
        """Adds ``prefix + name`` scalars for the scalar entries of ``logs``."""
        scalars = {}
        for name, value in (logs or {}).items():
            x = as_scalar(value)
            if x is not None and name not in ("batch", "size"):
                scalars[prefix + name] = x
        if not scalars:
            return
        writer = self._writer(logdir)
        for tag, x in scalars.items():
            writer.add_scalar(tag, x, step)


def _learning_rate(model: Any) -> float | None:
    """The optimizer's learning rate as a float, or None (none, or a schedule)."""
    try:
        return float(model.optimizer.learning_rate)
    except (AttributeError, TypeError, ValueError):
        return None
