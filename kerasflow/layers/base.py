"""The ``Layer`` base class: ``__init__`` config, ``build`` weights, ``call`` math.

A layer called on symbolic tensors builds itself from their shapes (once), adds
its ops to the graph inside a name scope and records the call, so a functional
``Model`` can later replay the same calls on new inputs (Keras' functional API).
Called on numpy arrays it runs at once through a compiled ``Function``.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import threading
import weakref
from collections import defaultdict

import numpy as np

from kerasflow import backend as K
from kerasflow import initializers, regularizers
from kerasflow.utils.serialization import registry

__all__ = ["Layer", "InputSpec", "get_history", "training_context",
           "collect_updates"]

_name_counts: dict[str, int] = defaultdict(int)
# tensor -> (layer, call record, output index); weak so graphs are freed.
_HISTORY: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_ctx = threading.local()
_update_ctx = threading.local()


class _Collected(list):
    """State updates of one trace; ``.losses`` and ``.metrics`` hold what
    ``add_loss`` / ``add_metric`` contributed during it."""

    def __init__(self):
        super().__init__()
        self.losses: list = []
        self.metrics: list = []  # (name, tensor)


@contextlib.contextmanager
def collect_updates():
    """Collects the state updates layers add (``Layer.add_update``) while tracing.

    Yields:
        The list that receives each stateful tensor added inside the block
        (e.g. BatchNormalization's moving-statistics assignments); the train
        step runs them with every forward pass.
    """
    stack = _update_ctx.__dict__.setdefault("stack", [])
    found = _Collected()
    stack.append(found)
    try:
        with K.tracing() as trace:
            yield found
    finally:
        stack.pop()
    # Assignments made in call() without add_update (Keras' ``self.v.assign``)
    # run with the step too, each once.
    seen = {id(u) for u in found}
    found.extend(u for u in trace.stateful if id(u) not in seen)


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()  # Keras: conv2d


def unique_layer_name(base):
    n = _name_counts[base]
    _name_counts[base] += 1
    return base if n == 0 else f"{base}_{n}"


def get_history(tensor):
    """(layer, call record, output index) of the layer call that made ``tensor``."""
    return _HISTORY.get(tensor)


class training_context:
    """Sets the default ``training`` flag for layer calls inside it."""

    def __init__(self, training):
        self.training = training

    def __enter__(self):
        self.prev = getattr(_ctx, "training", None)
        _ctx.training = self.training

    def __exit__(self, *exc):
        _ctx.training = self.prev
        return False


def flatten_struct(x):
    if isinstance(x, dict):
        return [v for k in x for v in flatten_struct(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in flatten_struct(item)]
    return [x]


def _after_updates(out, fn):
    """``out`` with each output that is a Variable re-read after the updates."""
    if fn._single:
        t = fn.outputs[0]
        return t.numpy() if isinstance(t, K.Variable) else out
    vals = iter([t.numpy() if isinstance(t, K.Variable) else v
                 for t, v in zip(fn.outputs, flatten_struct(out))])
    return map_struct(lambda _: next(vals), out)


def map_struct(fn, x):
    if isinstance(x, dict):
        return {k: map_struct(fn, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(map_struct(fn, v) for v in x)
    return fn(x)


class InputSpec:
    """What a layer accepts: rank (``ndim``/``min_ndim``) and fixed axis sizes."""

    def __init__(self, ndim=None, min_ndim=None, axes=None):
        self.ndim, self.min_ndim, self.axes = ndim, min_ndim, dict(axes or {})


class CallRecord:
    """One call of a layer: its input and output structures and keyword args."""

    # ``nargs``: tensors passed as further positional arguments
    # (``layer(targets, logits)``); then ``inputs`` is the tuple of all of them.
    __slots__ = ("inputs", "outputs", "kwargs", "index", "nargs")

    def __init__(self, inputs, outputs, kwargs, index, nargs=0):
        self.inputs, self.outputs, self.kwargs, self.index = (
            inputs, outputs, kwargs, index)
        self.nargs = nargs


class Layer:
    """Base class of all layers (Keras' ``keras.layers.Layer``).

    Subclasses set configuration in ``__init__``, create weights in
    ``build(input_shape)`` with ``add_weight``, write the math in ``call`` with
    backend ops, and return their ``__init__`` arguments from ``get_config``.

    Args:
        trainable: whether the layer's weights are trained.
        name: unique name; defaults to the snake-cased class name plus a counter.
        dtype: weight dtype; defaults to floatx().
        input_shape: shape without the batch axis, for the first layer of a
            ``Sequential`` (``Dense(1, input_shape=(1,))``).
        batch_input_shape: shape with the batch axis.
        input_dim: shorthand for ``input_shape=(input_dim,)``.

    Raises:
        TypeError: an unknown keyword argument, naming it.

    Example:
        >>> class Scale(Layer):
        ...     def build(self, input_shape):
        ...         self.s = self.add_weight("s", (input_shape[-1],), "ones")
        ...     def call(self, x):
        ...         return x * self.s
    """

    # Models create their weights through their layers' calls, not in build().
    _builds_in_call = False

    def __init_subclass__(cls, **kwargs):
        # kerasflow's own layer (and model) classes join the "layer" registry by
        # class name, so configs naming them load without importing their
        # module here; user classes come through custom_objects, as in Keras.
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("kerasflow.") and not cls.__name__.startswith("_"):
            registry("layer").setdefault(cls.__name__, cls)

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 batch_input_shape=None, input_dim=None, batch_size=None, **kwargs):
        if kwargs:
            raise TypeError(
                f"{type(self).__name__} got unexpected keyword argument(s): "
                f"{sorted(kwargs)}."
            )
        object.__setattr__(self, "_sub_layers", [])
        self.name = name or unique_layer_name(_snake(type(self).__name__))
        self.trainable = trainable
        self.dtype = np.dtype(dtype or K.floatx()).name
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        self._batch_input_shape = (None if batch_input_shape is None
                                   else tuple(batch_input_shape))
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._regularizers: list = []  # (regularizer, variable)
        self._calls: list = []
        self.built = False
        self.input_spec = None
        self._last_output_shape = None

    # -- tracking of nested layers -----------------------------------------------
    def __setattr__(self, name, value):
        if isinstance(value, Layer) and name != "_outer":
            self._track(value)
        elif isinstance(value, (list, tuple)) and value and all(
            isinstance(v, Layer) for v in value
        ):
            for v in value:
                self._track(v)
        object.__setattr__(self, name, value)

    def _track(self, layer):
        subs = self.__dict__.get("_sub_layers")
        if subs is not None and all(layer is not s for s in subs):
            subs.append(layer)

    def _flatten_layers(self, include_self=True):
        seen, out, stack = set(), [], [self] if include_self else list(
            self._sub_layers)
        while stack:
            layer = stack.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            stack.extend(layer._sub_layers)
        return out

    # -- weights --------------------------------------------------------------------
    def add_weight(self, name=None, shape=None, initializer=None, regularizer=None,
                   trainable=True, dtype=None, constraint=None, **kwargs):
        """Creates a weight Variable named "<layer>/<name>".

        Takes Keras 2's order (``add_weight("kernel", shape, ...)``) and Keras
        3's keywords (``add_weight(shape=..., initializer=..., name=None)``; a
        tuple as first argument is the shape).

        Args:
            name: optional; defaults to "weight", made unique per layer.
            shape: tuple of ints (() for a scalar).
            initializer: name, instance or callable ``f(shape, dtype)``;
                default "glorot_uniform" for floats, "zeros" otherwise (Keras).
            regularizer: name or instance; its penalty joins ``layer.losses``.
            trainable: False for statistics such as batch-norm moving means.
            dtype: defaults to the layer's dtype.
            constraint: applied after each update.

        Raises:
            TypeError: no shape, or an unknown keyword (autocast and aggregation
                are accepted and ignored).
        """
        if isinstance(name, (tuple, list)) and shape is None:
            name, shape = None, name
        unknown = set(kwargs) - {"autocast", "aggregation", "synchronization"}
        if unknown:
            raise TypeError(f"add_weight() got unexpected keyword argument(s) "
                            f"{sorted(unknown)}.")
        if shape is None:
            raise TypeError(f"add_weight() of layer '{self.name}' needs shape=. "
                            f"Received: shape=None.")
        dtype = np.dtype(dtype or self.dtype).name
        if initializer is None:
            initializer = "glorot_uniform" if np.dtype(dtype).kind == "f" \
                else "zeros"
        if name is None:
            taken = {w.name for w in self._trainable_weights
                     + self._non_trainable_weights}
            name = "weight"
            k = 1
            while f"{self.name}/{name}" in taken:
                name, k = f"weight_{k}", k + 1
        init = initializers.get(initializer)
        _check_weight_size(self.name, name, shape, dtype)
        value = np.asarray(init(tuple(shape), dtype=dtype), dtype=dtype)
        var = K.Variable(value, trainable=trainable, name=f"{self.name}/{name}",
                         dtype=dtype, constraint=constraint)
        (self._trainable_weights if trainable else self._non_trainable_weights
         ).append(var)
        # The name as asked for: the graph makes Variable names unique
        # ("dense/kernel_1" when a layer is rebuilt), weight files need this one.
        self.__dict__.setdefault("_weight_names", {})[id(var)] = name
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._regularizers.append((reg, var))
        return var

    def _trainable_layers(self):
        """Layers reachable without passing through a frozen layer (a frozen
        layer freezes all of its sublayers, as in Keras)."""
        seen, out, stack = set(), [], [self]
        while stack:
            layer = stack.pop(0)
            if id(layer) in seen or not layer.trainable:
                continue
            seen.add(id(layer))
            out.append(layer)
            stack.extend(layer._sub_layers)
        return out

    @property
    def trainable_weights(self):
        """Trainable Variables of this layer and its sublayers (none if frozen)."""
        out = []
        for layer in self._trainable_layers():
            out.extend(layer._trainable_weights)
        return _dedupe(out)

    @property
    def non_trainable_weights(self):
        """Non-trainable Variables, plus trainable ones of frozen layers."""
        live = {id(v) for v in self.trainable_weights}
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._non_trainable_weights)
            out.extend(v for v in layer._trainable_weights if id(v) not in live)
        return _dedupe(out)

    @property
    def weights(self):
        """All Variables of this layer and its sublayers, each once, in order."""
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._trainable_weights + layer._non_trainable_weights)
        return _dedupe(out)

    trainable_variables = trainable_weights
    variables = weights

    @property
    def losses(self):
        """Regularization penalties and losses added with ``add_loss`` outside
        a call (scalar tensors), of this layer and its sublayers."""
        out = []
        for layer in self._flatten_layers():
            out.extend(reg(var) for reg, var in layer._regularizers)
            for loss in layer.__dict__.get("_added_losses", ()):
                out.append(loss() if callable(loss) else loss)
        return out

    def add_loss(self, loss):
        """Adds a loss term (Keras' ``add_loss``) minimized with the compiled loss.

        Args:
            loss: a scalar tensor computed in ``call`` (it joins the step being
                traced), a tensor of a functional model's inputs, a
                zero-argument callable returning one, or a number.

        Raises:
            TypeError: anything else, naming it.
        """
        if not (K.is_symbolic(loss) or callable(loss) or isinstance(
                loss, (int, float, np.number, np.ndarray))):
            raise TypeError(f"add_loss takes a tensor, a callable or a number. "
                            f"Received: {type(loss).__name__}.")
        if not callable(loss) and not K.is_symbolic(loss):
            loss = K.constant(np.asarray(loss, K.floatx()))
        stack = getattr(_update_ctx, "stack", None)
        if stack and K.is_symbolic(loss):
            stack[-1].losses.append(loss)
        elif getattr(_update_ctx, "calls", 0) == 0 or not K.is_symbolic(loss):
            self.__dict__.setdefault("_added_losses", []).append(loss)
        # else: a symbolic call while building a functional graph; the train
        # step's trace replays the call and collects the loss then.

    def add_metric(self, value, name=None, aggregation="mean"):
        """Logs the batch mean of ``value`` under ``name`` (Keras 2's
        ``add_metric``), when called from ``call`` during training/evaluation.

        Raises:
            ValueError: no name, or an aggregation other than 'mean'.
        """
        if name is None or aggregation != "mean":
            raise ValueError(f"add_metric needs a name and aggregation='mean'. "
                             f"Received: name={name!r}, aggregation="
                             f"{aggregation!r}.")
        stack = getattr(_update_ctx, "stack", None)
        if stack and K.is_symbolic(value):
            stack[-1].metrics.append((name, value))

    def add_update(self, updates):
        """Adds state updates (stateful tensors such as ``var.assign(...)``).

        Inside a traced step (``collect_updates``) they run with every training
        step; in an eager call or outside a trace they are dropped (Keras 2's
        ``add_update`` on inference calls).
        """
        stack = getattr(_update_ctx, "stack", None)
        ups = updates if isinstance(updates, (list, tuple)) else [updates]
        if stack:
            stack[-1].extend(u for u in ups if K.is_symbolic(u))

    def get_weights(self):
        """The weights' values as a list of numpy arrays (copies)."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        """Sets all weights from a list of arrays, checking count and shapes first.

        Raises:
            ValueError: wrong count or shape; no weight is changed then.
        """
        K.assign_all(self.weights, weights, f"Layer '{self.name}'")

    def count_params(self):
        """Total number of weight scalars."""
        return int(sum(int(np.prod(w.shape)) for w in self.weights))

    # -- lifecycle --------------------------------------------------------------------
    def build(self, input_shape):
        """Creates the weights for inputs of ``input_shape`` (batch axis included)."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The layer's math on symbolic tensors; identity by default."""
        return inputs

    def _check_input_spec(self, inputs):
        spec = self.input_spec
        if spec is None or isinstance(inputs, (list, tuple, dict)):
            return
        shape = inputs.shape
        if shape is None:
            return
        if spec.ndim is not None and len(shape) != spec.ndim:
            raise ValueError(
                f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                f"expected ndim={spec.ndim}, found ndim={len(shape)}. Full shape "
                f"received: {shape}."
            )
        if spec.min_ndim is not None and len(shape) < spec.min_ndim:
            raise ValueError(
                f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                f"expected min_ndim={spec.min_ndim}, found ndim={len(shape)}. Full "
                f"shape received: {shape}."
            )
        for axis, size in spec.axes.items():
            got = shape[axis] if -len(shape) <= axis < len(shape) else None
            if got is not None and got != size:
                raise ValueError(
                    f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                    f"expected axis {axis} of input shape to have value {size}, but "
                    f"received input with shape {shape}."
                )

    def __call__(self, inputs, *args, **kwargs):
        flat = flatten_struct(inputs)
        if not any(K.is_symbolic(t) for t in flat):
            return self._call_eager(inputs, *args, **kwargs)
        if not self.built and not self._builds_in_call:
            shapes = map_struct(lambda t: t.shape, inputs)
            with K.name_scope(self.name):
                self.build(shapes)
            self.built = True
        self._check_input_spec(inputs)
        if "training" in _call_params(type(self)) and kwargs.get("training") is None:
            kwargs["training"] = getattr(_ctx, "training", None)
        _update_ctx.calls = getattr(_update_ctx, "calls", 0) + 1
        try:
            with K.name_scope(self.name):
                outputs = self.call(inputs, *args, **kwargs)
                # A pass-through output (Dropout at inference, the default call)
                # must be a new tensor: the input's own history must not be
                # overwritten.
                in_ids = {id(t) for t in flat}
                outputs = map_struct(
                    lambda t: K.identity(t) if id(t) in in_ids else t, outputs)
        finally:
            _update_ctx.calls -= 1
        sym_args = bool(args) and any(K.is_symbolic(t) for t in flatten_struct(
            list(args)))
        record = CallRecord((inputs, *args) if sym_args else inputs, outputs,
                            dict(kwargs), len(self._calls),
                            len(args) if sym_args else 0)
        self._calls.append(record)
        for i, t in enumerate(flatten_struct(outputs)):
            if K.is_symbolic(t):
                _HISTORY[t] = (self, record, i)
        first = flatten_struct(outputs)[0]
        self._last_output_shape = map_struct(
            lambda t: getattr(t, "shape", None), outputs) if not K.is_symbolic(
            first) or len(flatten_struct(outputs)) > 1 else first.shape
        return outputs

    def _call_eager(self, inputs, *args, **kwargs):
        """Runs the layer on arrays through a trace cached per input signature.

        The first call with a given structure, per-sample shapes and dtypes
        (and the same other arguments and training mode) traces the layer on
        placeholders and compiles a ``Function``; later calls only feed it, so
        repeated eager calls add no graph nodes, call records or memory (as
        ``tf.function`` retraces only for a new input signature).
        """
        arrays = map_struct(np.asarray, inputs)
        flat = flatten_struct(arrays)
        key = _trace_key(inputs, flat, args, kwargs)
        cache = self.__dict__.get("_eager_traces")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_eager_traces", cache)
        entry = cache.get(key) if key is not None else None
        if entry is None:
            phs = map_struct(
                lambda a: K.placeholder(_placeholder_dtype(a.dtype),
                                        (None,) + a.shape[1:]),
                arrays)
            with collect_updates() as updates:
                outputs = self(phs, *args, **kwargs)
            entry = K.Function(flatten_struct(phs), outputs, updates=updates,
                               name=f"{self.name}_eager")
            if key is not None:
                if len(cache) >= _MAX_EAGER_TRACES:  # drop the oldest signature
                    cache.pop(next(iter(cache)))
                cache[key] = entry
        out = entry(*flat)
        # Eagerly, code runs in order: an output that is a Variable shows the
        # value after this call's assignments (Keras), not the one read before.
        if entry.updates:
            out = _after_updates(out, entry)
        return K.to_numpy(out)

    def _clear_eager_traces(self):
        """Forgets cached eager traces (after the layer's structure changed)."""
        self.__dict__.pop("_eager_traces", None)

    def compute_output_shape(self, input_shape):
        """Output shape for ``input_shape``, found by tracing on placeholders."""
        ph = map_struct(lambda s: K.placeholder(self.dtype, s), input_shape,
                        ) if not _is_shape(input_shape) else K.placeholder(
            self.dtype, input_shape)
        out = self(ph)
        return map_struct(lambda t: t.shape, out)

    @property
    def output_shape(self):
        if self._last_output_shape is None:
            raise AttributeError(f"Layer '{self.name}' has not been called yet.")
        return self._last_output_shape

    # -- config -----------------------------------------------------------------------
    def get_config(self):
        """The ``__init__`` arguments, so ``cls.from_config(config)`` rebuilds it."""
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds the layer from ``get_config()`` output."""
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


registry("layer")["Layer"] = Layer
_MAX_EAGER_TRACES = 32


def _placeholder_dtype(dtype):
    return K.floatx() if dtype.kind in "fu" or dtype == np.uint8 else dtype


def _structure(x):
    if isinstance(x, dict):
        return ("dict", tuple((k, _structure(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_structure(v) for v in x))
    return "leaf"


def _trace_key(inputs, flat_arrays, args, kwargs):
    """Hashable signature of an eager call, or None when an argument is not
    hashable (that call is traced afresh and not cached)."""
    key = (_structure(inputs),
           tuple((a.shape[1:], np.dtype(_placeholder_dtype(a.dtype)).str)
                 for a in flat_arrays),
           args, tuple(sorted(kwargs.items())), getattr(_ctx, "training", None))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _is_shape(s):
    return isinstance(s, (list, tuple)) and all(
        d is None or isinstance(d, (int, np.integer)) for d in s)


def _dedupe(variables):
    seen, out = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


_params_cache: dict = {}


def _call_params(cls):
    p = _params_cache.get(cls)
    if p is None:
        p = _params_cache[cls] = set(inspect.signature(cls.call).parameters)
    return p


def _check_weight_size(layer, name, shape, dtype):
    """Refuses a weight larger than this machine's memory, naming the layer."""
    nbytes = int(np.prod([int(d) for d in shape], dtype=object)) * np.dtype(
        dtype).itemsize
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: numpy will tell
        return
    if nbytes > memory:
        raise ValueError(
            f"Layer '{layer}' expects weight '{name}' to fit in memory "
            f"({memory / 2**30:.1f} GiB). Received: shape {tuple(shape)} of "
            f"{dtype}, {nbytes / 2**30:.4g} GiB; check the layer's arguments "
            f"(units, filters, input size)."
        )
