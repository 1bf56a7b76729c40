"""Checks of the arguments users pass to ``fit``/``evaluate``/``predict``.

Pure functions, one per kind of mistake, each raising an error that names what
was expected and what was received (Keras' "... Received: x=..." style), so a
wrong argument can never turn into a silently wrong result: a class weight of
``-1`` that indexes from the end, a label of 2.7 truncated to class 2, ``y``
ignored next to a generator, ``epochs=-3`` training nothing.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from kerasflow import config
from kerasflow.callbacks import Callback

__all__ = ["as_array", "check_callbacks", "check_class_weight", "check_epochs",
           "check_generator_args", "check_loss_weights", "check_sparse_labels",
           "check_steps", "check_targets_count", "check_trainable",
           "check_validation_data", "match_input_ranks"]


def _describe(v) -> str:
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"{type(v).__name__} of shape {tuple(v.shape)} and dtype {v.dtype}"
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 60 else r[:60] + '...'}"


def _ragged_at(x, path=()):
    """(path, lengths) of the first list whose items differ in length, or None."""
    if not isinstance(x, (list, tuple)):
        return None
    lens = [len(v) if isinstance(v, (list, tuple, np.ndarray)) else None for v in x]
    kinds = {n is None for n in lens}
    if len(kinds) > 1 or len({n for n in lens if n is not None}) > 1:
        return path, lens
    for i, v in enumerate(x):
        found = _ragged_at(v, (*path, i))
        if found:
            return found
    return None


def as_array(x, what: str = "x") -> np.ndarray:
    """``x`` as a numeric numpy array; ragged nested lists are refused.

    Args:
        x: an array, a number or (nested) lists of numbers.
        what: the argument's name in messages ("x", "y", "validation_data[0]").

    Raises:
        ValueError: ragged nested lists (naming where the lengths differ).
        TypeError: values that are not numbers (strings, objects).
    """
    if isinstance(x, np.ndarray):
        a = x
    else:
        try:
            a = np.asarray(x)
        except ValueError:
            a = None
        if a is None or a.dtype == object:
            found = _ragged_at(x)
            if found is not None:
                path, lens = found
                where = "".join(f"[{i}]" for i in path) or " (top level)"
                raise ValueError(
                    f"`{what}` expects a rectangular array: nested lists of equal "
                    f"lengths. Received: ragged lists at {what}{where}, item "
                    f"lengths {lens[:10]}{'...' if len(lens) > 10 else ''}. Pad "
                    f"or truncate them to one length first."
                )
    if a is None or a.dtype.kind not in "biuf":
        hint = ""
        if a is not None and a.dtype.kind in "USO" and what.startswith(
                ("y", "validation_data[1]")):
            hint = (" String labels: map them to integer class ids first, e.g. "
                    "with kerasflow.layers.StringLookup(num_oov_indices=0) "
                    "adapted on the labels (ids from 0).")
        raise TypeError(
            f"`{what}` expects numbers (an int, float or bool array). Received: "
            f"{_describe(a if a is not None else x)}.{hint}"
        )
    return a


def match_input_ranks(xs, input_shapes) -> list:
    """``xs`` with a trailing axis of 1 added or dropped where the model's
    inputs want it, as Keras adjusts input ranks (Keras 3's
    ``Functional._adjust_input_rank``): ``(N, 28, 28)`` data for
    ``Input((28, 28, 1))`` becomes ``(N, 28, 28, 1)``; ``(N, 5, 1)`` for
    ``Input((5,))`` becomes ``(N, 5)``. Views, no copies; data that would
    still not fit is left as given, for the model's shape check to refuse.

    Args:
        xs: numpy arrays (batch axis first), one per model input.
        input_shapes: each input's shape with its batch axis (None where
            unknown), or None for a model whose inputs are not fixed yet.

    Returns:
        The list of arrays.
    """
    if input_shapes is None:
        return list(xs)
    out = list(xs)
    for i, (a, shape) in enumerate(zip(xs, input_shapes)):
        if shape is None:
            continue
        if a.ndim == len(shape) - 1 and shape[-1] == 1:
            fixed = a[..., np.newaxis]
        elif a.ndim == len(shape) + 1 and a.shape[-1] == 1:
            fixed = a[..., 0]
        else:
            continue
        # Only where that makes the shapes agree: an error names the data as given.
        if all(d is None or d == n for d, n in zip(shape[1:], fixed.shape[1:])):
            out[i] = fixed
    return out


def check_epochs(epochs, initial_epoch=0) -> tuple[int, int]:
    """``(epochs, initial_epoch)`` as ints with ``0 <= initial_epoch <= epochs``.

    ``epochs`` is the index of the last epoch (Keras): training runs epochs
    ``initial_epoch .. epochs - 1``.

    Raises:
        TypeError: not integers. ValueError: negative, or initial_epoch > epochs.
    """
    for name, v in (("epochs", epochs), ("initial_epoch", initial_epoch)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"fit() expects `{name}` as an integer >= 0. Received: "
                            f"{name}={v!r} of type {type(v).__name__}.")
        if v < 0:
            raise ValueError(f"fit() expects `{name}` >= 0. Received: {name}={v}.")
    if initial_epoch > epochs:
        raise ValueError(
            f"fit() expects initial_epoch <= epochs (epochs is the index of the "
            f"last epoch, not a count from initial_epoch). Received: "
            f"epochs={epochs}, initial_epoch={initial_epoch}."
        )
    cap = config.max_epochs()  # keras.config.set_max_epochs, for debug runs
    if cap and cap < epochs:
        warnings.warn(f"Limiting epochs to {cap}", stacklevel=3)
        epochs, initial_epoch = cap, min(initial_epoch, cap)
    return int(epochs), int(initial_epoch)


def check_callbacks(callbacks) -> list:
    """``callbacks`` as a list of ``Callback`` instances (None: empty).

    Raises:
        TypeError: a single callback instead of a list, or a list element that
            is not a ``Callback``.
    """
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback) or not isinstance(callbacks, (list, tuple)):
        name = type(callbacks).__name__
        raise TypeError(
            f"`callbacks` expects a list of Callback instances. Received: "
            f"{_describe(callbacks)}; pass callbacks=[{name}(...)]."
        )
    for i, cb in enumerate(callbacks):
        if not isinstance(cb, Callback):
            raise TypeError(f"`callbacks` expects Callback instances. Received: "
                            f"callbacks[{i}]={_describe(cb)}.")
    return list(callbacks)


def check_generator_args(y=None, sample_weight=None, class_weight=None,
                         validation_split=0.0) -> None:
    """Refuses arguments that a generator ``x`` would make ``fit`` ignore.

    A generator yields ``(x, y)`` or ``(x, y, sample_weight)`` itself, as in
    Keras, which raises the same way.

    Raises:
        ValueError: naming the ignored argument.
    """
    for name, v in (("y", y), ("sample_weight", sample_weight)):
        if v is not None:
            raise ValueError(
                f"When x is a generator, fit() expects it to yield (x, y) or (x, "
                f"y, sample_weight) and `{name}` to be None. Received: "
                f"{name}={_describe(v)}."
            )
    if class_weight is not None:
        raise ValueError("When x is a generator, fit() expects class_weight=None "
                         "(weight the samples in the generator). Received: "
                         f"class_weight={class_weight!r}.")
    if validation_split:
        raise ValueError("When x is a generator, fit() expects validation_split=0 "
                         "(pass validation_data instead). Received: "
                         f"validation_split={validation_split!r}.")


def check_validation_data(validation_data) -> tuple:
    """``(x_val, y_val, sample_weight or None)`` from ``validation_data``.

    Raises:
        TypeError: not a tuple or list.
        ValueError: a length other than 2 or 3, or y_val None.
    """
    if not isinstance(validation_data, (tuple, list)):
        raise TypeError(
            f"`validation_data` expects a tuple (x_val, y_val) or (x_val, y_val, "
            f"val_sample_weight). Received: {_describe(validation_data)}."
        )
    if len(validation_data) not in (2, 3):
        raise ValueError(
            f"`validation_data` expects a tuple (x_val, y_val) or (x_val, y_val, "
            f"val_sample_weight). Received: a {type(validation_data).__name__} of "
            f"length {len(validation_data)}."
        )
    x, y = validation_data[0], validation_data[1]
    if y is None:
        raise ValueError("`validation_data` expects targets y_val. Received: "
                         "y_val=None.")
    return x, y, validation_data[2] if len(validation_data) == 3 else None


def check_targets_count(y, output_names, model_name="model") -> None:
    """Checks that ``y`` (as passed by the user) has one target per output.

    Args:
        y: an array, a list/tuple of arrays, or a dict keyed by output name.
        output_names: the model's output names, in order.

    Raises:
        ValueError: a single array for several outputs, a list of another
            length, or a dict with missing or unknown keys.
    """
    n = len(output_names)
    if isinstance(y, dict):
        missing = [k for k in output_names if k not in y]
        extra = [k for k in y if k not in output_names]
        if missing or extra:
            raise ValueError(
                f"Model '{model_name}' expects y keyed by its output names "
                f"{list(output_names)}. Received: keys {list(y)} (missing "
                f"{missing}, unknown {extra})."
            )
        return
    if n <= 1:
        return
    if isinstance(y, (list, tuple)):
        count = len(y)
        if count == n and all(hasattr(v, "shape") or isinstance(v, (list, tuple))
                              for v in y):
            return
        got = f"a {type(y).__name__} of {count} item(s)"
    else:
        got = f"one {_describe(y)}"
    raise ValueError(
        f"Model '{model_name}' has {n} outputs {list(output_names)} and expects "
        f"{n} target arrays (a list in output order, or a dict keyed by output "
        f"name). Received: {got}."
    )


def check_class_weight(class_weight, n_classes=None) -> dict:
    """``class_weight`` as ``{class index: weight}`` with checked keys and values.

    Args:
        class_weight: a mapping from class index to weight.
        n_classes: the number of classes, when known (the output's last axis).

    Returns:
        A dict {int: float}.

    Raises:
        TypeError: not a mapping, or a key that is not an int (a string key).
        ValueError: a negative key (it would index from the end), a key >=
            n_classes, or a weight that is NaN, infinite or negative.
    """
    if not hasattr(class_weight, "items"):
        raise TypeError(f"`class_weight` expects a dict {{class index: weight}}. "
                        f"Received: {_describe(class_weight)}.")
    out = {}
    for k, v in class_weight.items():
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(
                f"`class_weight` expects integer class indices as keys. Received: "
                f"key {k!r} of type {type(k).__name__}."
            )
        if k < 0 or (n_classes is not None and k >= n_classes):
            top = f"{n_classes - 1}" if n_classes is not None else "n_classes - 1"
            raise ValueError(
                f"`class_weight` expects class indices in [0, {top}]. Received: "
                f"key {k}."
            )
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (
                math.isfinite(v) and v >= 0):
            raise ValueError(
                f"`class_weight` expects finite weights >= 0. Received: "
                f"class_weight[{k}]={v!r}."
            )
        out[int(k)] = float(v)
    return out


def check_sparse_labels(y, n_classes=None, name="y") -> np.ndarray:
    """Sparse class labels as an int64 array; whole floats (3.0) are accepted.

    Raises:
        TypeError: labels that are not numbers.
        ValueError: a label that is not a whole number (2.7), NaN, negative or
            >= n_classes, naming the first offending value and its index.
    """
    a = as_array(y, name)
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.round(a))
        if bad.any():
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            raise ValueError(
                f"Sparse labels `{name}` expect whole class indices. Received: "
                f"{a[i]} at index {i}."
            )
    if a.size:
        lo, hi = a.min(), a.max()
        if lo < 0 or (n_classes is not None and hi >= n_classes):
            bad = (a < 0) | ((a >= n_classes) if n_classes is not None else False)
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            top = n_classes - 1 if n_classes is not None else "n_classes - 1"
            raise ValueError(
                f"Sparse labels `{name}` expect class indices in [0, {top}]. "
                f"Received: {a[i]} at index {i}."
            )
    return a.astype(np.int64, copy=False)


def check_trainable(model) -> None:
    """Refuses training a model with no trainable weights, naming it.

    Raises:
        ValueError: the model has no trainable weights.
    """
    if not model.weights_to_train():
        n = len(model.weights)
        raise ValueError(
            f"fit() expects model '{model.name}' to have trainable weights. "
            f"Received: a model with none ({n} non-trainable weight(s)); unfreeze "
            f"a layer (layer.trainable = True) or add a layer with weights."
        )


def check_steps(steps, name="steps") -> int | None:
    """``steps`` / ``steps_per_epoch`` / ``validation_steps``: None or an int >= 1,
    capped by ``kerasflow.config.max_steps_per_epoch()`` when that is set.

    Raises:
        TypeError: not an int. ValueError: < 1 (``evaluate(steps=-1)`` used to
            divide by zero).
    """
    cap = config.max_steps_per_epoch()  # keras.config, for debug runs
    if steps is None:
        if cap:
            warnings.warn(f"Limiting {name} to {cap}", stacklevel=3)
        return cap
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"`{name}` expects None or an integer >= 1. Received: "
                        f"{name}={steps!r} of type {type(steps).__name__}.")
    if steps < 1:
        raise ValueError(f"`{name}` expects None or an integer >= 1. Received: "
                         f"{name}={steps}.")
    if cap and cap < steps:
        warnings.warn(f"Limiting {name} to {cap}", stacklevel=3)
        return cap
    return int(steps)


def check_loss_weights(loss_weights, output_names) -> None:
    """``compile(loss_weights=...)``: finite weights >= 0, one per output.

    Raises:
        TypeError: not a list/tuple/dict of numbers.
        ValueError: NaN, infinite or negative weights, a list of another
            length than the outputs, or unknown output names.
    """
    if loss_weights is None:
        return
    if isinstance(loss_weights, dict):
        unknown = [k for k in loss_weights if k not in output_names]
        if unknown:
            raise ValueError(f"`loss_weights` expects keys among the output names "
                             f"{list(output_names)}. Received: unknown {unknown}.")
        items = list(loss_weights.items())
    elif isinstance(loss_weights, (list, tuple)):
        if len(loss_weights) != len(output_names):
            raise ValueError(
                f"`loss_weights` expects one weight per output "
                f"({len(output_names)}: {list(output_names)}). Received: "
                f"{len(loss_weights)} weight(s)."
            )
        items = list(zip(output_names, loss_weights))
    else:
        raise TypeError(f"`loss_weights` expects a list or a dict keyed by output "
                        f"name. Received: {_describe(loss_weights)}.")
    for k, v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (
                math.isfinite(v) and v >= 0):
            raise ValueError(f"`loss_weights` expects finite weights >= 0. "
                             f"Received: {v!r} for output '{k}'.")

