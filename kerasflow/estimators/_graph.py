"""Building one mode's graph: fresh names, placeholders, ``model_fn``, variables.

TF builds a new graph for every ``train``/``evaluate``/``predict`` call and
restores variables from the checkpoint by name. kerasflow has no default graph,
so names come from process-wide counters; ``fresh_names`` swaps in empty
counters while ``model_fn`` runs, so every build names its variables the same
way ("dense/kernel", not "dense_3/kernel") and checkpoints match by name.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections import defaultdict

import numpy as np

from kerasflow import backend as K
from kerasflow import train as train_lib
from kerasflow import tree
from kerasflow.backend import graph as graph_mod
from kerasflow.estimators.model_fn import EstimatorSpec
from kerasflow.utils.graph_def import collect_nodes

__all__ = [
    "call_model_fn",
    "collect_variables",
    "flatten_batch",
    "fresh_names",
    "local_variable",
    "local_variable_scope",
    "make_placeholders",
    "seeded",
    "signature_of",
]

_local = threading.local()
_lock = threading.RLock()


@contextlib.contextmanager
def fresh_names(seed=None):
    """Empty node- and layer-name counters (and an optional seed) inside."""
    with _lock, K.uid_scope(), seeded(seed):
        saved = graph_mod._name_counts
        graph_mod._name_counts = defaultdict(int)
        try:
            yield
        finally:
            graph_mod._name_counts = saved


@contextlib.contextmanager
def seeded(seed=None):
    """numpy's global RNG and the backend's seed set to ``seed`` inside (TF's
    graph seed, ``RunConfig.tf_random_seed``); numpy's state restored after.
    None: nothing changes."""
    if seed is None:
        yield
        return
    rng_state = np.random.get_state()
    np.random.seed(int(seed) % (2 ** 32))
    K.set_random_seed(int(seed))
    try:
        yield
    finally:
        np.random.set_state(rng_state)


@contextlib.contextmanager
def local_variable_scope():
    """Collects the local (metric) Variables created inside: never checkpointed."""
    prev = getattr(_local, "locals", None)
    _local.locals = []
    try:
        yield _local.locals
    finally:
        _local.locals = prev


def local_variable(value, name, dtype=None):
    """A non-trainable Variable registered as local (TF's LOCAL_VARIABLES)."""
    var = K.Variable(value, trainable=False, name=name, dtype=dtype)
    bucket = getattr(_local, "locals", None)
    if bucket is not None:
        bucket.append(var)
    return var


def _placeholder_for(a, name):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        dtype = K.floatx()
    elif a.dtype.kind in "iu":
        dtype = "int64"
    elif a.dtype.kind == "b":
        dtype = "bool"
    else:
        raise TypeError(
            f"The Estimator feeds numeric arrays to model_fn. Received: feature "
            f"'{name}' of dtype {a.dtype} (shape {a.shape}). Encode strings with "
            f"feature columns (canned estimators do) or convert them to numbers "
            f"in input_fn.")
    if a.ndim == 0:
        raise ValueError(f"The Estimator expects batched arrays (first axis = "
                         f"examples). Received: '{name}' of shape ().")
    return K.placeholder(dtype, (None,) + a.shape[1:], name=name)


def make_placeholders(struct, prefix):
    """Placeholders mirroring a batch: array -> one, dict -> dict of them."""
    if struct is None:
        return None
    if isinstance(struct, dict):
        return {k: _placeholder_for(v, f"{prefix}_{k}") for k, v in struct.items()}
    return _placeholder_for(struct, prefix)


def flatten_batch(struct):
    """Arrays of a batch struct in placeholder order (``tree.flatten``'s)."""
    return [] if struct is None else tree.flatten(struct)


def signature_of(struct):
    """Hashable (names, dtype kinds, trailing shapes) of a batch struct."""
    if struct is None:
        return None
    if isinstance(struct, dict):
        return tuple((k, np.asarray(v).dtype.kind, np.shape(v)[1:])
                     for k, v in struct.items())
    return (np.asarray(struct).dtype.kind, np.shape(struct)[1:])


def _accepted(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set(), True
    kinds = {p.kind for p in params.values()}
    return set(params), inspect.Parameter.VAR_KEYWORD in kinds


def call_model_fn(model_fn, features, labels, mode, params, config):
    """Calls ``model_fn`` with the arguments its signature names.

    Returns:
        (spec, global_step Variable).

    Raises:
        ValueError: model_fn needs labels but got none, or returned no spec.
        TypeError: it returned something other than an ``EstimatorSpec``.
    """
    names, var_kw = _accepted(model_fn)
    kwargs = {}
    if "labels" in names or var_kw:
        kwargs["labels"] = labels
    elif labels is not None:
        raise ValueError("model_fn does not accept `labels`, but input_fn "
                         "returned labels. Add a `labels` argument to model_fn.")
    for key, value in (("mode", mode), ("params", params), ("config", config)):
        if key in names or var_kw:
            kwargs[key] = value
    with train_lib.global_step_scope() as scope:
        gs = train_lib.get_or_create_global_step()
        spec = model_fn(features=features, **kwargs)
        gs = gs if scope["step"] is None else scope["step"]
    if not isinstance(spec, EstimatorSpec):
        raise TypeError(f"model_fn must return an EstimatorSpec. Received: "
                        f"{type(spec).__name__}.")
    if spec.mode != mode:
        raise ValueError(f"model_fn was called in mode '{mode}' but returned a spec "
                         f"for mode '{spec.mode}'.")
    return spec, gs


def _tensors(roots):
    return [t for t in tree.flatten(list(roots)) if K.is_symbolic(t)]


def collect_variables(*roots):
    """Every Variable the roots' graph reads or writes, in creation order."""
    return K.reachable_variables(_tensors(roots))


def graph_nodes(*roots):
    """Every Node reachable from roots, in creation order (for the GraphDef)."""
    return collect_nodes(_tensors(roots))
