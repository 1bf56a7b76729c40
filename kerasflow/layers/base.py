"""The ``Layer`` base class: ``__init__`` config, ``build`` weights, ``call`` math.

A layer called on symbolic tensors builds itself from their shapes (once), adds
its ops to the graph inside a name scope and records the call, so a functional
``Model`` can later replay the same calls on new inputs (Keras' functional API).
Called on numpy arrays it runs at once through a compiled ``Function``.
"""

from __future__ import annotations

import contextlib
import re
import weakref

import numpy as np

from kerasflow import backend as K
from kerasflow import dtype_policies, initializers, regularizers, tree
from kerasflow.layers.input_spec import InputSpec, assert_input_compatibility
from kerasflow.layers.layer_helpers import (
    MISSING,
    activity_penalty,
    call_params,
    check_weight_size,
    dedupe,
    is_shape,
    pop_first_argument,
)
from kerasflow.layers.tracing import (  # noqa: F401  (re-exported)
    TracingMixin,
    _ctx,
    _update_ctx,
    collect_updates,
)
from kerasflow.utils.serialization import registry

__all__ = ["Layer", "InputSpec", "check_quantize_request", "get_history",
           "training_context", "collect_updates"]

# tensor -> (layer, call record, output index); weak so graphs are freed.
_HISTORY: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()  # Keras: conv2d


def unique_layer_name(base):
    # Keras' rule: "dense", "dense_1", ...; counters restart at clear_session().
    n = K.get_uid(base) - 1
    return base if n == 0 else f"{base}_{n}"


def check_quantize_request(mode, config=None):
    """Raises unless ``quantize(mode, config=config)`` asks for what kerasflow
    implements (Keras 3's first checks, before any layer is looked at).

    Raises:
        ValueError: no mode; a mode Keras 3 does not know, naming it and the
            supported ones.
        NotImplementedError: a ``config`` (only Keras' default int8
            quantizers are implemented); a Keras 3 mode other than "int8".
    """
    if config is not None:
        raise NotImplementedError(
            f"kerasflow quantizes with Keras' default int8 quantizers only; "
            f"pass `mode` alone. Received: config={config!r}")
    if mode is None:
        raise ValueError("You must provide either `mode` or `config` to "
                         "`quantize`.")
    dtype_policies.check_quantization_mode(mode)


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


class CallRecord:
    """One call of a layer: its input and output structures and keyword args."""

    # ``nargs``: tensors passed as further positional arguments
    # (``layer(targets, logits)``); then ``inputs`` is the tuple of all of them.
    __slots__ = ("inputs", "outputs", "kwargs", "index", "nargs")

    def __init__(self, inputs, outputs, kwargs, index, nargs=0):
        self.inputs, self.outputs, self.kwargs, self.index = (
            inputs, outputs, kwargs, index)
        self.nargs = nargs


class Layer(TracingMixin):
    """Base class of all layers (Keras' ``keras.layers.Layer``).

    Subclasses set configuration in ``__init__``, create weights in
    ``build(input_shape)`` with ``add_weight``, write the math in ``call`` with
    backend ops, and return their ``__init__`` arguments from ``get_config``.

    Args:
        trainable: whether the layer's weights are trained.
        name: unique name; defaults to the snake-cased class name plus a counter.
        dtype: weight dtype, or a float dtype policy (name or
            ``DTypePolicy``); defaults to the global policy, else floatx().
            Under a mixed policy ("mixed_float16") weights are float32, float
            inputs are cast to float16 and ``call`` reads the weights cast to
            float16 (Keras 3's mixed precision).
        autocast: False keeps this layer's Variables in their own dtype when
            read inside a mixed-precision call (Keras 3).
        input_shape: shape without the batch axis, for the first layer of a
            ``Sequential`` (``Dense(1, input_shape=(1,))``).
        batch_input_shape: shape with the batch axis.
        input_dim: shorthand for ``input_shape=(input_dim,)``.
        activity_regularizer: name or instance; its penalty on the outputs of
            the layer's latest call, over their batch size, joins ``losses``
            (Keras 3's ``Layer.__call__``).

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
    # Float inputs are cast to the compute dtype (Keras 3); models leave it to
    # their layers.
    _convert_input_args = True

    def __init_subclass__(cls, **kwargs):
        # kerasflow's own layer (and model) classes join the "layer" registry by
        # class name, so configs naming them load without importing their
        # module here; user classes come through custom_objects, as in Keras.
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("kerasflow.") and not cls.__name__.startswith("_"):
            registry("layer").setdefault(cls.__name__, cls)

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 batch_input_shape=None, input_dim=None, batch_size=None,
                 activity_regularizer=None, autocast=True, **kwargs):
        if kwargs:
            raise TypeError(
                f"{type(self).__name__} got unexpected keyword argument(s): "
                f"{sorted(kwargs)}."
            )
        object.__setattr__(self, "_sub_layers", [])
        self.name = name or unique_layer_name(_snake(type(self).__name__))
        self.trainable = trainable
        self._dtype_policy, self.dtype, self._compute_dtype = \
            dtype_policies.layer_dtypes(dtype)
        self.autocast = bool(autocast)
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        self._batch_input_shape = (None if batch_input_shape is None
                                   else tuple(batch_input_shape))
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._regularizers: list = []  # (regularizer, variable)
        self.activity_regularizer = regularizers.get(activity_regularizer)
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
        """This layer and its sublayers, depth first in tracking order (each
        layer before its own sublayers), as Keras 3 orders ``weights``: a
        nested layer's weights stay together, so ``get_weights`` lists match
        Keras' for the same model."""
        seen, out, stack = set(), [], [self] if include_self else list(
            self._sub_layers)
        while stack:
            layer = stack.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            stack[0:0] = layer._sub_layers
        return out

    # -- dtypes -----------------------------------------------------------------------
    @property
    def dtype_policy(self):
        """The layer's ``DTypePolicy`` (Keras 3); a ``QuantizedDTypePolicy``
        after ``quantize("int8")``.

        Raises:
            ValueError: a non-float layer dtype (kerasflow's policies are float).
        """
        if self._dtype_policy is None:
            raise ValueError(f"Layer '{self.name}' computes in {self.dtype}, "
                             f"which no float DTypePolicy describes.")
        return self._dtype_policy

    @property
    def quantization_mode(self):
        """"int8" once the layer is quantized, else None (Keras 3)."""
        policy = self._dtype_policy
        return None if policy is None else policy.quantization_mode

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer computes in: float16 under "mixed_float16"."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of the layer's weights (``layer.dtype``, as in Keras 3)."""
        return self.dtype

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
            autocast: False: a mixed-precision call reads this weight in its
                own dtype (Keras 3; normalization scales stay float32).

        Raises:
            TypeError: no shape, or an unknown keyword (aggregation and
                synchronization are accepted and ignored).
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
        check_weight_size(self.name, name, shape, dtype)
        value = np.asarray(init(tuple(shape), dtype=dtype), dtype=dtype)
        var = K.Variable(value, trainable=trainable, name=f"{self.name}/{name}",
                         dtype=dtype, constraint=constraint,
                         autocast=kwargs.get("autocast", True))
        (self._trainable_weights if trainable else self._non_trainable_weights
         ).append(var)
        # The name as asked for: the graph makes Variable names unique
        # ("dense/kernel_1" when a layer is rebuilt), weight files need this one.
        self.__dict__.setdefault("_weight_names", {})[id(var)] = name
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._regularizers.append((reg, var))
        return var

    def _untrack_weight(self, var):
        """Forgets ``var`` (a kernel replaced by its quantized form, as Keras'
        ``del self._kernel``): no longer a weight, no regularization penalty."""
        for bucket in (self._trainable_weights, self._non_trainable_weights):
            bucket[:] = [v for v in bucket if v is not var]
        self._regularizers[:] = [(r, v) for r, v in self._regularizers
                                 if v is not var]
        self.__dict__.get("_weight_names", {}).pop(id(var), None)

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
            stack[0:0] = layer._sub_layers  # depth first, as _flatten_layers
        return out

    @property
    def trainable_weights(self):
        """Trainable Variables of this layer and its sublayers (none if frozen);
        a Variable set ``trainable = False`` (a LoRA-frozen kernel) is left
        out, as Keras 3 filters on ``v.trainable``."""
        out = []
        for layer in self._trainable_layers():
            out.extend(v for v in layer._trainable_weights
                       if getattr(v, "trainable", True))
        return dedupe(out)

    @property
    def non_trainable_weights(self):
        """Non-trainable Variables, plus trainable ones of frozen layers."""
        live = {id(v) for v in self.trainable_weights}
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._non_trainable_weights)
            out.extend(v for v in layer._trainable_weights if id(v) not in live)
        return dedupe(out)

    @property
    def weights(self):
        """All Variables of this layer and its sublayers, each once, in order."""
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._trainable_weights + layer._non_trainable_weights)
        return dedupe(out)

    trainable_variables = trainable_weights
    variables = weights

    @property
    def losses(self):
        """Regularization penalties and ``add_loss`` terms (scalar tensors) of
        this layer and its sublayers; on an eager ``GradientTape``, recorded
        arrays, with the losses the last eager call added (as Keras)."""
        out = []
        taped = K.tape_recording()  # an eager GradientTape: recorded values
        for layer in self._flatten_layers():
            # On a tape, r(v) runs on the values and records the reads.
            out.extend(r(v) for r, v in layer._regularizers)
            if taped:
                out.extend(layer.__dict__.get("_eager_losses", ()))
            elif "_activity_penalty" in layer.__dict__:
                out.append(layer._activity_penalty)
            for loss in layer.__dict__.get("_added_losses", ()):
                out.append(loss() if callable(loss) else loss)
        return out

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

    # -- Keras 3 weight files ------------------------------------------------------
    def _stored_variables(self) -> list:
        """The Variables of this layer's slots "0", "1"... in a Keras 3
        weights file: its own (not its sublayers'), trainable first, each
        once (Keras 3's ``Layer.save_own_variables``)."""
        return dedupe(self._trainable_weights + self._non_trainable_weights)

    def save_own_variables(self, store):
        """Writes this layer's own variables (not its sublayers') into
        ``store`` as Keras 3's ``Layer.save_own_variables`` does; ``model.save``
        and ``save_weights("x.weights.h5")`` write these slots.

        Args:
            store: a dict, filled in place: ``"0"``, ``"1"``... -> numpy
                arrays of the variables' shapes and dtypes, in creation order,
                trainable ones first.
        """
        for i, v in enumerate(self._stored_variables()):
            store[str(i)] = np.asarray(v.numpy())

    def load_own_variables(self, store):
        """Assigns this layer's own variables from the slots
        ``save_own_variables`` writes (Keras 3's ``Layer.load_own_variables``),
        all or nothing.

        Args:
            store: a mapping ``"0"``, ``"1"``... -> array-likes.

        Raises:
            ValueError: a slot count other than the layer's (Keras' message),
                or an array whose shape differs from its variable's, naming
                it; nothing is assigned then.
        """
        stored = self._stored_variables()
        if len(store) != len(stored):
            raise ValueError(
                f"Layer '{self.name}' expected {len(stored)} variables, but "
                f"received {len(store)} variables during loading. Expected: "
                f"{[v.name for v in stored]}")
        pairs = self._load_assignments([store[str(i)]
                                        for i in range(len(stored))])
        K.assign_all([v for v, _ in pairs], [a for _, a in pairs],
                     f"Layer '{self.name}'")

    def _load_assignments(self, arrays) -> list:
        """The (variable, array) pairs that loading ``arrays``, one per
        ``_stored_variables()`` slot in order, assigns."""
        return list(zip(self._stored_variables(), arrays))

    # -- lifecycle --------------------------------------------------------------------
    def build(self, input_shape):
        """Creates the weights for inputs of ``input_shape`` (batch axis included)."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The layer's math on symbolic tensors; identity by default."""
        return inputs

    def __call__(self, inputs=MISSING, *args, **kwargs):
        if inputs is MISSING:  # given by its name in call(): mha(query=q, ...)
            inputs = pop_first_argument(self, kwargs)
        flat = tree.flatten(inputs)
        if not any(K.is_symbolic(t) for t in flat):
            if not (getattr(_update_ctx, "calls", 0) or K.in_tracing()):
                return self._call_eager(inputs, *args, **kwargs)
            # Called on arrays inside another layer's symbolic call or a traced
            # step (keras.io's position embedding: ``self.pos_emb(ops.arange(n))``):
            # the arrays become graph constants, so this layer's weights stay in
            # the graph and train, as in Keras' traced call.
            inputs = tree.map_structure(
                lambda t: K.constant(t) if hasattr(t, "shape") or isinstance(
                    t, (list, int, float)) else t, inputs)
            flat = tree.flatten(inputs)
        if not self.built:
            # Kept for Keras' ``build_config``: a subclassed model is rebuilt
            # from it before its weights are loaded.
            self._build_input_shape = tree.map_structure(
                lambda t: None if t.shape is None else tuple(t.shape), inputs)
        if not self.built and not self._builds_in_call:
            shapes = tree.map_structure(lambda t: t.shape, inputs)
            with K.name_scope(self.name):
                self.build(shapes)
            self.built = True
        assert_input_compatibility(self.input_spec, inputs, self.name)
        if "training" in call_params(type(self)) and kwargs.get("training") is None:
            kwargs["training"] = getattr(_ctx, "training", None)
        _update_ctx.calls = getattr(_update_ctx, "calls", 0) + 1
        try:
            with K.name_scope(self.name), self._autocast_scope():
                # The record keeps the tensors as given: a functional replay
                # maps those, not the casts made here.
                c_inputs, c_args, c_kwargs = self._convert_inputs(
                    (inputs, args, kwargs))
                outputs = self.call(c_inputs, *c_args, **c_kwargs)
                # A pass-through output (Dropout at inference, the default call)
                # must be a new tensor: the input's own history must not be
                # overwritten.
                in_ids = {id(t) for t in flat}
                outputs = tree.map_structure(
                    lambda t: K.identity(t) if id(t) in in_ids else t, outputs)
        finally:
            _update_ctx.calls -= 1
        sym_args = bool(args) and any(K.is_symbolic(t) for t in tree.flatten(
            list(args)))
        record = CallRecord((inputs, *args) if sym_args else inputs, outputs,
                            dict(kwargs), len(self._calls),
                            len(args) if sym_args else 0)
        self._calls.append(record)
        penalties = []
        for i, t in enumerate(tree.flatten(outputs)):
            if K.is_symbolic(t):
                _HISTORY[t] = (self, record, i)
                if getattr(self, "activity_regularizer", None) is not None:
                    penalties.append(activity_penalty(self.activity_regularizer,
                                                       t))
        if penalties:  # Keras applies it here, once, for every layer family
            self._activity_penalty = K.add_n(penalties)
        first = tree.flatten(outputs)[0]
        self._last_output_shape = tree.map_structure(
            lambda t: getattr(t, "shape", None), outputs) if not K.is_symbolic(
            first) or len(tree.flatten(outputs)) > 1 else first.shape
        return outputs

    def _convert_inputs(self, structure):
        """``structure`` with float tensors and arrays cast to the compute
        dtype (Keras 3's input autocast), unless the layer computes in a
        non-float dtype."""
        dtype = np.dtype(self._compute_dtype)
        if not self._convert_input_args or dtype.kind != "f":
            return structure

        def needs(x):
            return (K.is_symbolic(x) or isinstance(x, np.ndarray)) and \
                x.dtype is not None and x.dtype.kind == "f" and x.dtype != dtype

        if not any(needs(x) for x in tree.flatten(structure)):
            return structure
        return tree.map_structure(
            lambda x: K.cast(x, dtype) if needs(x) else x, structure)

    def _autocast_scope(self):
        """The ``AutocastScope`` this layer's call runs in (Keras 3's rules): a
        mixed layer reads its weights in its compute dtype; a layer with
        ``autocast=False`` or a non-float dtype reads them as they are."""
        scope = K.get_autocast_scope()
        floating = np.dtype(self._compute_dtype).kind == "f"
        if scope is not None:
            if not self.autocast or not floating:
                return K.AutocastScope(None)
            if scope.dtype != self._compute_dtype:
                return K.AutocastScope(self._compute_dtype)
        elif self._compute_dtype != self.dtype and self.autocast:
            return K.AutocastScope(self._compute_dtype)
        return contextlib.nullcontext()

    def compute_output_shape(self, input_shape):
        """Output shape for ``input_shape``, found by tracing on placeholders."""
        dtype = self._compute_dtype
        ph = tree.map_structure(lambda s: K.placeholder(dtype, s), input_shape,
                        ) if not is_shape(input_shape) else K.placeholder(
            dtype, input_shape)
        out = self(ph)
        return tree.map_structure(lambda t: t.shape, out)

    @property
    def input(self):
        """The input tensor(s) of the layer's first call (Keras 3).

        Raises:
            AttributeError: the layer has never been called.
        """
        return self._first_call("input").inputs

    @property
    def output(self):
        """The output tensor(s) of the layer's first call (Keras 3): in a
        functional or built Sequential model, the tensor that sub-models such
        as ``Model(model.input, model.layers[2].output)`` start or end at.

        Raises:
            AttributeError: the layer has never been called.
        """
        return self._first_call("output").outputs

    def _first_call(self, what):
        if not self._calls:
            raise AttributeError(f"Layer '{self.name}' has never been called and "
                                 f"thus has no defined {what}.")
        return self._calls[0]

    # -- quantization (Keras 3) ------------------------------------------------------
    def quantize(self, mode=None, type_check=True, config=None):
        """Quantizes the layer's weights (Keras 3); ``Dense`` and
        ``EinsumDense`` implement mode "int8", other layers have no
        quantized form.

        Raises:
            ValueError / NotImplementedError: as ``_check_quantize_args``.
            NotImplementedError: this layer has no ``quantize`` (Keras'
                message; ``Model.quantize`` warns with it and goes on).
        """
        self._check_quantize_args(mode, config)
        raise self._not_implemented_error(self.quantize)

    def _check_quantize_args(self, mode, config=None):
        """Keras 3's checks before a layer quantizes.

        Raises:
            ValueError: no mode; an unknown mode; a layer not built, or
                already quantized; "int8" with a float16 compute dtype.
            NotImplementedError: a ``config`` (quantizer configs are not
                implemented), or a Keras mode other than "int8".
        """
        check_quantize_request(mode, config)
        if not self.built:
            raise ValueError(
                f"Cannot quantize a layer that isn't yet built. Layer "
                f"'{self.name}' (of type '{type(self).__name__}') is not "
                f"built yet.")
        if self.quantization_mode is not None:
            raise ValueError(
                f"Layer '{self.name}' is already quantized with "
                f"dtype_policy='{self.dtype_policy.name}'. Received: "
                f"mode={mode}")
        dtype_policies.check_quantization_mode(mode, self.compute_dtype)

    def _not_implemented_error(self, method):
        return NotImplementedError(
            f"Layer {type(self).__name__} does not have a `{method.__name__}` "
            f"method implemented.")

    @property
    def output_shape(self):
        if self._last_output_shape is None:
            raise AttributeError(f"Layer '{self.name}' has not been called yet.")
        return self._last_output_shape

    # -- config -----------------------------------------------------------------------
    def get_config(self):
        """The ``__init__`` arguments, so ``cls.from_config(config)`` rebuilds it."""
        # A mixed policy is saved by name, a quantized one as Keras writes it,
        # so from_config rebuilds either.
        dtype = self.dtype
        if self.quantization_mode is not None:
            dtype = dtype_policies.serialize(self._dtype_policy)
        elif self._compute_dtype != self.dtype:
            dtype = self._dtype_policy.name
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": dtype}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        if getattr(self, "activity_regularizer", None) is not None:
            config["activity_regularizer"] = regularizers.serialize(
                self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds the layer from ``get_config()`` output."""
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


registry("layer")["Layer"] = Layer
