"""``tf.train.Saver`` on kerasflow's one checkpoint format.

A checkpoint is one file (``model.ckpt-100``) of named arrays, written
atomically, and the folder's ``checkpoint`` index (TF's ``CheckpointState``
text) names the kept ones; both come from ``kerasflow.utils.checkpoint``,
which the Estimator and ``model.save_weights`` use too, so each reads the
others' checkpoints where variable names match. Loading never runs pickle.
TF1's ``.meta`` graph files are not written: a kerasflow program rebuilds its
graph in Python and restores values into it, the common TF1 pattern.
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow import backend as K
from kerasflow.compat.v1 import graph as G
from kerasflow.errors import NotFoundError
from kerasflow.utils import checkpoint as ckpt
from kerasflow.utils.checkpoint import checkpoint_exists, latest_checkpoint

__all__ = ["Saver", "latest_checkpoint", "checkpoint_exists"]


def _name_of(var):
    return var.name.split(":")[0]


class Saver:
    """Saves and restores Variables by name (TF1 ``tf.train.Saver``).

    Args:
        var_list: None (every global variable of the default graph, optimizer
            state included, when the Saver is created), a list of Variables
            (saved under their names), or a dict ``{name: Variable}``.
        max_to_keep: newest checkpoints kept in the folder (older ones are
            deleted); None or 0 keeps all. The kept list is recovered from
            the folder's index on every save (TF's
            ``recover_last_checkpoints``), so it holds across restarts.

    Variables are saved under their names. kerasflow names are unique per
    *process* (TF1's were per graph): a graph rebuilt in the same process after
    ``reset_default_graph()`` gets "w_1" where the first had "w". To restore
    into such a rebuild, give both Savers ``{stable name: Variable}`` dicts.

    Raises:
        ValueError: no variables to save, or two variables with one name.
        TypeError: an entry that is not a Variable.

    Example:
        >>> saver = tf.train.Saver()
        >>> path = saver.save(sess, "/tmp/model.ckpt", global_step=100)
        >>> saver.restore(sess, path)  # '/tmp/model.ckpt-100'
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None,
                 restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False,
                 allow_empty=False, write_version=2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        if var_list is None:
            var_list = G.get_collection(G.GraphKeys.GLOBAL_VARIABLES)
        if isinstance(var_list, dict):
            items = list(var_list.items())
        else:
            items = [(_name_of(v), v) for v in var_list]
        names = {}
        for key, var in items:
            if not isinstance(var, K.Variable):
                raise TypeError(f"Saver saves Variables. Received for '{key}': "
                                f"{var!r}.")
            if key in names and names[key] is not var:
                raise ValueError(f"At least two variables have the same name: "
                                 f"{key}")
            names[key] = var
        if not names and not allow_empty:
            raise ValueError("No variables to save")
        self._vars = names
        self.max_to_keep = max_to_keep or None
        self.last_checkpoints: list = []

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False) -> str:
        """Writes every variable's current value.

        Args:
            sess: the session (kept for TF1's signature; values are read from
                the Variables themselves).
            save_path: prefix, e.g. "ckpt/model.ckpt".
            global_step: int or step Variable; appended as ``-<step>``.

        Returns:
            The checkpoint prefix written (pass it to ``restore``).

        Raises:
            TypeError: ``sess`` is not a session.
        """
        _check_session(sess)
        if global_step is not None:
            step = global_step
            if K.is_symbolic(step):
                step = sess.run(step)
            save_path = f"{os.fspath(save_path)}-{int(np.asarray(step))}"
        arrays = {name: var.numpy() for name, var in self._vars.items()}
        path = ckpt.save_checkpoint(save_path, arrays, max_to_keep=self.max_to_keep,
                                    update_state=write_state)
        state = write_state and ckpt.get_checkpoint_state(os.path.dirname(path)
                                                          or ".")
        self.last_checkpoints = (state.all_model_checkpoint_paths if state
                                 else [*self.last_checkpoints, path])
        return path

    def restore(self, sess, save_path) -> None:
        """Sets every variable to its value in the checkpoint ``save_path``.

        Raises:
            ValueError: ``save_path`` is None, or a value of another shape.
            NotFoundError: the checkpoint does not exist, or lacks a variable
                (TF1's "Key ... not found in checkpoint").
        """
        _check_session(sess)
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not ckpt.checkpoint_exists(save_path):
            raise NotFoundError(f"The passed save_path is not a valid checkpoint: "
                                f"{save_path}")
        values = ckpt.load_checkpoint(save_path)
        missing = [n for n in self._vars if n not in values]
        if missing:
            raise NotFoundError(f"Key {missing[0]} not found in checkpoint "
                                f"{save_path}")
        K.assign_all(list(self._vars.values()),
                     [values[n] for n in self._vars],
                     f"Checkpoint '{save_path}'")

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        self.last_checkpoints = list(checkpoint_paths)

    def as_saver_def(self):
        raise NotImplementedError("Saver.as_saver_def is not provided by "
                                  "kerasflow.compat.v1.")


def _check_session(sess):
    if not isinstance(sess, K.Session):
        raise TypeError(f"'sess' must be a Session; {sess!r}")
