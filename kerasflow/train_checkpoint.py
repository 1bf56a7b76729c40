"""``tf.train.Checkpoint`` and ``tf.train.CheckpointManager`` (TF 2's
object-based checkpoints) on kerasflow's one checkpoint format.

    ckpt = kf.train.Checkpoint(step=step, optimizer=optimizer, model=model)
    manager = kf.train.CheckpointManager(ckpt, "/tmp/ckpts", max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)     # no-op on the first run
    ...
    manager.save()                              # /tmp/ckpts/ckpt-1, ckpt-2, ...

Each tracked object's variables are saved under ``<attribute>/<index>`` in
its own variable order (a model's ``weights``, an optimizer's ``variables``:
its iteration count and slots, an object's ``variables``, or a Variable
itself), with the variable names kept to check a restore against. A file is
written atomically (``kerasflow.utils.checkpoint``: one npz, never a
pickle) and the directory's ``checkpoint`` state file lists it, so
``latest_checkpoint(dir)`` finds it; a process killed while saving leaves
the previous checkpoint readable. An optimizer restored before its first
step is built on the model's trainable variables first, so its slots take
the saved values (TF restores slots when they are created).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from kerasflow import backend as K
from kerasflow.utils import checkpoint as ckpt_lib

__all__ = ["Checkpoint", "CheckpointManager"]


def _variables(obj):
    if isinstance(obj, K.Variable):
        return [obj]
    for attr in ("weights", "variables"):
        value = getattr(obj, attr, None)
        if value is not None and not callable(value):
            return list(value)
    raise TypeError(f"tf.train.Checkpoint tracks Variables, models, optimizers and "
                    f"objects with .variables. Received: {type(obj).__name__}")


class _Status:
    """What ``restore`` returns (TF's load status)."""

    def __init__(self, unmatched):
        self.unmatched = unmatched

    def assert_consumed(self):
        """Raises AssertionError when a saved value found no variable here."""
        if self.unmatched:
            raise AssertionError(f"Unresolved values in the checkpoint: "
                                 f"{sorted(self.unmatched)[:10]}")
        return self

    def expect_partial(self):
        return self

    assert_existing_objects_matched = assert_consumed


class Checkpoint:
    """Saves and restores the variables of the objects given by keyword.

    Args:
        **objects: name -> a Variable, a model, an optimizer, or an object
            with ``variables``.

    Attributes:
        save_counter: int Variable, +1 per ``save``.

    Raises:
        TypeError: an object with no variables to track.
    """

    def __init__(self, **objects):
        for obj in objects.values():
            _variables(obj)  # checks early
        self._objects = dict(objects)
        self.save_counter = K.Variable(0, dtype="int64", trainable=False,
                                       name="save_counter")
        for name, obj in objects.items():
            setattr(self, name, obj)

    def _arrays(self):
        arrays = {"save_counter": np.asarray(self.save_counter.numpy())}
        names = {}
        for key, obj in self._objects.items():
            for i, v in enumerate(_variables(obj)):
                arrays[f"{key}/{i}"] = np.asarray(K.to_numpy(v.value))
                names[f"{key}/{i}"] = v.name
        return arrays, names

    def write(self, file_prefix):
        """Writes the checkpoint to ``file_prefix`` exactly; returns the path."""
        arrays, names = self._arrays()
        path = os.fspath(file_prefix)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        ckpt_lib.save_checkpoint(path, arrays, metadata={"variable_names": names})
        return path

    def save(self, file_prefix):
        """Increments ``save_counter`` and writes ``<file_prefix>-<counter>``."""
        self.save_counter.assign(int(self.save_counter.numpy()) + 1)
        return self.write(f"{os.fspath(file_prefix)}-{int(self.save_counter.numpy())}")

    def read(self, save_path):
        return self.restore(save_path)

    def restore(self, save_path):
        """Assigns the saved values; ``None`` (no checkpoint yet) restores nothing.

        Raises:
            FileNotFoundError / CheckpointError: a missing or corrupt file.
            ValueError: a saved value whose shape differs from its variable's
                (naming both), or a value that overflows the variable's dtype
                (float64 1e39 into float32); nothing is assigned then.

        Warns:
            UserWarning: no saved value matched a variable here (TF warns of
                unresolved checkpoint values).
        """
        if save_path is None:
            return _Status(set())
        values, meta = ckpt_lib.load_checkpoint(save_path, with_metadata=True)
        for key, obj in self._objects.items():  # slots exist before they are set
            if hasattr(obj, "build") and hasattr(obj, "iterations"):
                model = next((o for o in self._objects.values()
                              if hasattr(o, "trainable_variables")), None)
                if model is not None and f"{key}/{len(_variables(obj))}" in values:
                    obj.build(model.trainable_variables)
        plan, used = [], set()
        for key, obj in self._objects.items():
            for i, v in enumerate(_variables(obj)):
                name = f"{key}/{i}"
                if name not in values:
                    continue
                value = values[name]
                if tuple(value.shape) != tuple(v.shape):
                    raise ValueError(f"Checkpoint value '{name}' has shape "
                                     f"{tuple(value.shape)}: expected {tuple(v.shape)} "
                                     f"for variable '{v.name}'. Nothing was restored.")
                plan.append((v, value))
                used.add(name)
        # Cast and overflow-checked (float64 1e39 into float32) before any
        # assignment: a refused value leaves every variable as it was.
        K.assign_all([v for v, _ in plan], [value for _, value in plan],
                     f"Checkpoint '{save_path}'")
        if plan == [] and (set(values) - {"save_counter"} or any(
                _variables(o) for o in self._objects.values())):
            # TF warns of values left unmatched when the status is dropped.
            warnings.warn(
                f"Checkpoint.restore('{save_path}') matched nothing: expected "
                f"values named '<attribute>/<index>' for the attributes "
                f"{sorted(self._objects)}. Received: values "
                f"{sorted(set(values) - {'save_counter'})[:10]}. No variable "
                f"was restored.", stacklevel=2)
        if "save_counter" in values:
            self.save_counter.assign(int(values["save_counter"]))
            used.add("save_counter")
        del meta
        return _Status(set(values) - used)


class CheckpointManager:
    """Numbered checkpoints in ``directory``, keeping the newest ``max_to_keep``.

    Args:
        checkpoint: a ``Checkpoint``.
        directory: folder of the checkpoints (made when needed).
        max_to_keep: newest checkpoints kept (None: all).
        checkpoint_name: file name stem (``ckpt``).

    Raises:
        ValueError: ``max_to_keep`` < 1.
    """

    def __init__(self, checkpoint, directory, max_to_keep, checkpoint_name="ckpt",
                 step_counter=None, checkpoint_interval=None):
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"CheckpointManager expects max_to_keep >= 1 or None. "
                             f"Received: {max_to_keep!r}")
        self.checkpoint = checkpoint
        self.directory = os.fspath(directory)
        self.max_to_keep = max_to_keep
        self._name = checkpoint_name

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's path, or None."""
        return ckpt_lib.latest_checkpoint(self.directory)

    @property
    def checkpoints(self) -> list:
        """The kept checkpoints, oldest first."""
        state = ckpt_lib.get_checkpoint_state(self.directory)
        return list(state.all_model_checkpoint_paths) if state else []

    def save(self, checkpoint_number=None):
        """Writes ``<directory>/<name>-<n>`` (n: ``checkpoint_number`` or the
        checkpoint's incremented ``save_counter``); returns its path."""
        ck = self.checkpoint
        ck.save_counter.assign(int(ck.save_counter.numpy()) + 1)
        n = int(ck.save_counter.numpy()) if checkpoint_number is None else int(
            checkpoint_number)
        os.makedirs(self.directory, exist_ok=True)
        arrays, names = ck._arrays()
        path = os.path.join(self.directory, f"{self._name}-{n}")
        return ckpt_lib.save_checkpoint(path, arrays, metadata={"variable_names": names},
                                        max_to_keep=self.max_to_keep)

    def restore_or_initialize(self):
        """Restores the newest checkpoint; returns its path, or None."""
        path = self.latest_checkpoint
        if path is not None:
            self.checkpoint.restore(path)
        return path
