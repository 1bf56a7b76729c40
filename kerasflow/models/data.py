"""Training data: checking arrays up front, splitting, class weights.

Every check runs once per ``fit``/``evaluate``/``predict`` call, before any step,
so a bad input fails with a message naming what was expected and received, and
the per-batch path only slices arrays.
"""

from __future__ import annotations

import warnings

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from kerasflow.backend import floatx
from kerasflow.models import compile_utils as cu
from kerasflow.models import input_checks

__all__ = ["Standardized", "check_arrays", "class_weights_to_sample_weights",
           "split_validation", "standardize", "to_list", "unpack_validation_data"]


class Standardized(NamedTuple):
    """Checked data in model order.

    Attributes:
        xs: list of input arrays, (n, ...) each.
        ys: list of target arrays, (n, ...) each; empty without targets.
        sw: (n,) floatx sample weights (ones when the user gave none).
        weighted: whether ``sw`` came from the user (sample or class weights).
    """

    xs: list
    ys: list
    sw: np.ndarray
    weighted: bool

    @property
    def arrays(self) -> list:
        """``xs + ys + [sw]``: a step's input order."""
        return [*self.xs, *self.ys, self.sw]

    def split(self, arrays) -> Standardized:
        """The same kind of data from ``arrays`` laid out as ``self.arrays``."""
        n_x, n_y = len(self.xs), len(self.ys)
        return Standardized(arrays[:n_x], arrays[n_x:n_x + n_y], arrays[-1],
                            self.weighted)


def to_list(x, names=None, what="x"):
    """Flattens x (array, list/tuple, or dict keyed by input/output name) to a
    list of numpy arrays in model order."""
    if x is None:
        return None
    if isinstance(x, dict):
        if names is None:
            return [np.asarray(v) for v in x.values()]
        if any(isinstance(v, dict) for v in x.values()):
            x = _by_path(x)  # nested dicts of inputs: keyed "outer.inner"
        missing = [n for n in names if n not in x]
        if missing:
            raise ValueError(
                f"{what} is a dict missing keys {missing}. Expected keys: {names}. "
                f"Received keys: {sorted(x)}."
            )
        extra = sorted(str(k) for k in x if k not in names)
        if extra and what == "x":  # Keras 3 ignores them, with this warning
            warnings.warn(f"The structure of `inputs` doesn't match the expected "
                          f"structure.\nExpected: {names}\nReceived: inputs with "
                          f"keys {sorted(map(str, x))}; ignoring {extra}.",
                          stacklevel=4)
        return [np.asarray(x[n]) for n in names]
    if isinstance(x, (list, tuple)) and len(x) == 1 and hasattr(x[0], "shape") \
            and (names is None or len(names) == 1):
        return [np.asarray(x[0])]  # [array] for a single input/output
    if isinstance(x, (list, tuple)) and x and all(
        hasattr(v, "shape") or isinstance(v, (list, tuple)) for v in x
    ) and names is not None and len(names) > 1:
        return [input_checks.as_array(v, what) for v in x]
    return [input_checks.as_array(x, what)]


def _by_path(x, prefix=""):
    """A nested dict as one flat dict keyed by dotted path ("others.2")."""
    out = {}
    for k, v in x.items():
        if isinstance(v, dict):
            out.update(_by_path(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def standardize(x, y=None, sample_weight=None, class_weight=None, batch_size=None,
                *, input_names: list | None = None,
                input_shapes: list | None = None,
                output_names: list = ("output_1",),
                output_shapes: Callable[[list], list] | None = None,
                model_name: str = "model") -> Standardized:
    """A model's data as lists of checked arrays in model order.

    Inputs and targets are put in model order (dicts by input/output name);
    1-D features become one column (Keras 2), a trailing axis of 1 is added or
    dropped where the model's inputs want it (Keras); targets are reshaped and checked
    against the output shapes; sample weights (times class weights) are always
    returned, as ones when none are given, in floatx.

    Args:
        x, y, sample_weight, class_weight, batch_size: as ``Model.fit`` takes them.
        input_names: names keying dict inputs, in model order; None for one
            unnamed input.
        input_shapes: the model's input shapes (batch axis first), or None
            (``input_checks.match_input_ranks``).
        output_names: the model's output names, in order.
        output_shapes: callable ``xs -> [static output shape, ...]`` (batch axis
            first), or ``xs -> None`` for a model without ``call`` (its
            ``train_step`` takes the targets as given); called only when
            targets or class weights are given.
        model_name: for error messages.

    Returns:
        ``Standardized(xs, ys, sw, weighted)``.

    Raises:
        ValueError / TypeError: see ``check_arrays``, ``to_list`` and the class
            weight and sparse label checks; each names expected and received.
    """
    xs = to_list(x, input_names, "x")
    n_out = len(output_names)
    if y is not None:
        input_checks.check_targets_count(y, output_names, model_name)
    ys = to_list(y, output_names if n_out > 1 else None, "y")
    if ys is not None and n_out > 1 and len(ys) == 1 and not isinstance(y, dict):
        ys = [np.asarray(v) for v in y]
    xs = [a.reshape(-1, 1) if a.ndim == 1 else a for a in xs]
    xs = input_checks.match_input_ranks(xs, input_shapes)
    sw = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    n = check_arrays(xs, ys, sw, batch_size)
    shapes = output_shapes(xs) if ys is not None else None
    if shapes is not None:
        ys = cu.prepare_targets(ys, shapes)
        for i, (a, shape) in enumerate(zip(ys, shapes)):
            if cu.is_sparse_target(a.shape, shape):
                name = output_names[i] if i < n_out else f"output_{i + 1}"
                cu.check_sparse_labels(a, shape[-1], name)
    ys = [] if ys is None else ys
    if class_weight is not None:
        if len(ys) != 1:
            raise ValueError("class_weight needs exactly one target array.")
        shape = shapes[0] if shapes else None
        n_classes = shape[-1] if shape and shape[-1] and shape[-1] > 1 else None
        class_weight = input_checks.check_class_weight(class_weight, n_classes)
        cw = class_weights_to_sample_weights(ys[0], class_weight)
        sw = cw if sw is None else sw * cw
    weighted = sw is not None
    sw = np.ones(n, floatx()) if sw is None else sw.astype(floatx())
    return Standardized(xs, ys, sw, weighted)


def check_arrays(xs, ys, sample_weight, batch_size):
    """Validates sizes, emptiness, NaNs and batch_size; returns the sample count.

    Raises:
        ValueError: mismatched lengths, empty data, NaN values, batch_size <= 0.
        TypeError: non-numeric data or a non-integer batch_size.
    """
    if batch_size is not None and (
        not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool)
    ):
        raise TypeError(f"batch_size must be a positive int. Received: "
                        f"batch_size={batch_size!r}.")
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int. Received: "
                         f"batch_size={batch_size}.")
    groups = [("x", a) for a in xs] + [("y", a) for a in ys or []]
    if sample_weight is not None:
        groups.append(("sample_weight", np.asarray(sample_weight)))
    for what, a in groups:
        if a.dtype.kind not in "biuf":
            raise TypeError(
                f"{what} must hold numbers. Received: an array of dtype {a.dtype}."
            )
        if a.ndim == 0:
            raise ValueError(f"{what} must have a batch axis. Received: a scalar.")
    sizes = {what: [a.shape[0] for w, a in groups if w == what] for what in
             ("x", "y", "sample_weight")}
    all_sizes = {s for v in sizes.values() for s in v}
    if len(all_sizes) > 1:
        detail = ", ".join(f"{k} sizes: {v}" for k, v in sizes.items() if v)
        raise ValueError(
            f"Data cardinality is ambiguous: {detail}. Make sure all arrays "
            f"contain the same number of samples."
        )
    n = all_sizes.pop()
    if n == 0:
        raise ValueError(
            f"Expected at least one sample. Received: x.shape="
            f"{[tuple(a.shape) for a in xs]}."
        )
    for what, a in groups:
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = np.argwhere(~np.isfinite(a))[0]
            raise ValueError(
                f"{what} contains NaN or infinite values (first at index "
                f"{tuple(int(i) for i in bad)}). Clean or impute the data first."
            )
    return n


def split_validation(arrays, fraction):
    """Keras' ``validation_split``: the last ``fraction`` of samples, unshuffled.

    Returns:
        (train arrays, validation arrays), each a list (None entries kept).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1). Received: "
                         f"{fraction}.")
    n = next(len(a) for a in arrays if a is not None)
    cut = int(n * (1.0 - fraction))
    if cut == 0 or cut == n:
        raise ValueError(
            f"validation_split={fraction} leaves no samples for training or "
            f"validation out of {n}."
        )
    return ([None if a is None else a[:cut] for a in arrays],
            [None if a is None else a[cut:] for a in arrays])


def unpack_validation_data(validation_data, functional: bool):
    """(x_val, y_val, sample_weight or None) from ``validation_data`` arrays;
    a one-item list unwraps (one input/output).

    Raises:
        ValueError: not a tuple/list of 2 or 3 items.
    """
    if not isinstance(validation_data, (tuple, list)) or len(
            validation_data) not in (2, 3):
        got = (f"a {type(validation_data).__name__} of length "
               f"{len(validation_data)}" if isinstance(validation_data, (tuple, list))
               else type(validation_data).__name__)
        raise ValueError(
            f"validation_data must be (x_val, y_val) or (x_val, y_val, "
            f"val_sample_weight). Received: {got}.")
    vx, vy = validation_data[0], validation_data[1]
    vsw = validation_data[2] if len(validation_data) > 2 else None
    if isinstance(vx, list) and len(vx) == 1 and not functional:
        vx = vx[0]
    if isinstance(vy, list) and len(vy) == 1:
        vy = vy[0]
    return vx, vy, vsw


def class_weights_to_sample_weights(y, class_weight):
    """Per-sample weights from a {class index: weight} dict (sparse or one-hot y).

    Raises:
        ValueError: a class in y without a weight, naming it.
    """
    y = np.asarray(y)
    classes = (np.argmax(y, axis=-1) if y.ndim > 1 and y.shape[-1] > 1
               else y.reshape(len(y), -1)[:, 0].astype(np.int64))
    missing = sorted(set(np.unique(classes).tolist()) - set(class_weight))
    if missing:
        raise ValueError(f"class_weight has no entry for classes {missing}. "
                         f"Received keys: {sorted(class_weight)}.")
    table = np.zeros(int(max(class_weight)) + 1, dtype=np.float64)
    for k, v in class_weight.items():
        table[int(k)] = v
    return table[classes]
