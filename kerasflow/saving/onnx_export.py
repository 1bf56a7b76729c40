"""A model's inference graph as an ONNX model (``model.export(format="onnx")``).

The exporter calls the model on fresh placeholders with ``training=False``,
walks the resulting graph (``backend.graph.walk``) and writes one or a few ONNX
nodes per backend node, through one table of converters (``_CONVERTERS``), the
way Keras 3's ``keras.export.export_onnx`` serves a model for ONNX Runtime.
Variables and constants become initializers; every unknown dimension of an
input (the batch first) stays symbolic, so the file serves any batch size.
Layouts follow ONNX: convolutions and pools run NCHW between two Transposes,
recurrent loops run time-major between two Transposes, and kernels are
re-laid out once, at export. ``Einsum`` stays one ONNX ``Einsum`` (opset 12
on), embedding lookups and ``gather`` become ``Gather``, and a transposed
convolution becomes ``ConvTranspose`` with TF's crop written as explicit pads.

An Estimator's serving graph is a Session graph like any other: placeholders
for the numeric features its columns make on the host
(``feature_column.transform_features``: vocabularies, hashes and buckets run in
numpy, since graphs carry no strings), ``model_fn`` called on them in PREDICT
mode, the checkpoint restored (``compat.v1.train.Saver``), then
``export_onnx(spec.predictions, path, inputs=placeholders)``.

The ``onnx`` package is imported on the first export only (the ``onnx`` extra).
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from kerasflow.backend.graph import SymbolicTensor, placeholder, walk
from kerasflow.backend.ops.conv import window_geometry
from kerasflow.utils.module_utils import import_optional

__all__ = ["export_onnx"]

DEFAULT_OPSET = 17


def export_onnx(model, filepath, inputs=None, opset_version: int = DEFAULT_OPSET,
                verbose: bool = False):
    """Writes the inference graph of ``model`` as an ONNX model file.

    Args:
        model: a built kerasflow model (its ``inputs`` give the signature; it is
            called with ``training=False``), or, with ``inputs``, the output
            tensor(s) of a Session graph (a tensor, list or dict of tensors).
        filepath: path of the ``.onnx`` file to write.
        inputs: for a Session graph, the placeholder(s) the outputs depend on
            (a tensor, list or dict; dict keys name the ONNX inputs).
        opset_version: ONNX opset, 17 or later.
        verbose: print the written path.

    Returns:
        The ``onnx.ModelProto`` written.

    Raises:
        ImportError: the ``onnx`` package is not installed.
        NotImplementedError: an op with no ONNX equivalent here, naming the op
            and the layer (node) it belongs to.
        ValueError: an unbuilt model, or an output that depends on a
            placeholder not listed in ``inputs``.

    Example:
        >>> model = kf.Sequential([kf.Input((4,)), kf.layers.Dense(2)])
        >>> kf.saving.export_onnx(model, "m.onnx")  # doctest: +SKIP
    """
    onnx = import_optional("onnx", "ONNX export", extra="onnx")
    for sub in ("checker", "helper", "numpy_helper"):
        import_optional(f"onnx.{sub}", "ONNX export", extra="onnx")
    if opset_version < 17:
        raise ValueError(f"ONNX export needs opset_version >= 17. "
                         f"Received: opset_version={opset_version}.")
    in_names, in_tensors, out_names, out_tensors = _signature(model, inputs)
    builder = _Builder(onnx, opset_version)
    graph_inputs = []
    for name, t in zip(in_names, in_tensors):
        builder.names[id(t)] = name
        graph_inputs.append(_value_info(onnx, name, t, symbolic_prefix=name))
    fed = {id(t.node) for t in in_tensors}
    for node in walk(out_tensors):
        if id(node) in fed:
            continue
        _convert(builder, node)
    graph_outputs = []
    for name, t in zip(out_names, out_tensors):
        builder.add("Identity", [builder.name_of(t)], outputs=[name])
        graph_outputs.append(_value_info(onnx, name, t, symbolic_prefix=name))
    graph = onnx.helper.make_graph(builder.nodes, "kerasflow", graph_inputs,
                                   graph_outputs, builder.initializers)
    proto = onnx.helper.make_model(
        graph, producer_name="kerasflow",
        opset_imports=[onnx.helper.make_opsetid("", opset_version)])
    # ONNX Runtime reads IR versions up to its own; 8 is what opset 17 ships with.
    proto.ir_version = min(proto.ir_version, 8 if opset_version <= 17 else 9)
    onnx.checker.check_model(proto)
    onnx.save(proto, os.fspath(filepath))
    if verbose:
        print(f"Saved ONNX model to '{os.fspath(filepath)}'.")
    return proto


# -- signature -------------------------------------------------------------------------
def _as_list(struct, what):
    if isinstance(struct, SymbolicTensor):
        return [None], [struct]
    if isinstance(struct, dict):
        return list(struct), list(struct.values())
    if isinstance(struct, (list, tuple)):
        return [None] * len(struct), list(struct)
    raise TypeError(f"export_onnx expects {what} as a tensor, list or dict of "
                    f"tensors. Received: {type(struct).__name__}.")


def _signature(model, inputs):
    if inputs is not None:
        in_keys, in_tensors = _as_list(inputs, "inputs")
        out_keys, out_tensors = _as_list(model, "outputs")
        in_names = [k or t.node.name for k, t in zip(in_keys, in_tensors)]
    else:
        model_inputs = getattr(model, "inputs", None)
        if not model_inputs:
            raise ValueError(
                f"Model '{getattr(model, 'name', model)}' has no inputs yet: build "
                f"it (Input(...) first, or call it on data) before exporting.")
        # The Input layers' names (node names get a suffix when reused).
        names_of = getattr(model, "_input_names", None)
        in_names = list((names_of() if callable(names_of) else None) or [])
        if len(in_names) != len(model_inputs) or len(set(in_names)) < len(in_names):
            in_names = [t.node.name for t in model_inputs]
        in_tensors = [placeholder(t.dtype, t.shape, name=n)
                      for t, n in zip(model_inputs, in_names)]
        struct = getattr(model, "_inputs_struct", None)
        if isinstance(struct, dict):
            feed = dict(zip(struct, in_tensors))
        else:
            feed = in_tensors[0] if len(in_tensors) == 1 else in_tensors
        outputs = model(feed, training=False)
        out_keys, out_tensors = _as_list(outputs, "the model's outputs")
    out_names = [k or f"output_{i}" for i, k in enumerate(out_keys)]
    for t in in_tensors:
        if t.node.op != "Placeholder":
            raise ValueError(f"export_onnx inputs must be placeholders. "
                             f"Received: {t!r}.")
    return in_names, in_tensors, out_names, out_tensors


def _value_info(onnx, name, t, symbolic_prefix):
    shape = None if t.shape is None else [
        ("batch" if i == 0 else f"{symbolic_prefix}_dim{i}") if d is None else d
        for i, d in enumerate(t.shape)]
    return onnx.helper.make_tensor_value_info(name, _elem_type(onnx, t.dtype), shape)


def _elem_type(onnx, dtype):
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# -- builder ---------------------------------------------------------------------------
class _Builder:
    """The ONNX nodes and initializers made so far, and each tensor's ONNX name."""

    def __init__(self, onnx, opset):
        self.onnx, self.opset = onnx, opset
        self.nodes, self.initializers = [], []
        self.names: dict[int, str] = {}  # id(SymbolicTensor) -> ONNX name
        self._count = 0
        self.node = None  # the backend node being converted, for errors

    def fresh(self, hint):
        self._count += 1
        return f"{hint}__{self._count}"

    def name_of(self, t):
        try:
            return self.names[id(t)]
        except KeyError:
            value = self.value_of(t)
            if value is not None:
                # Made on first use: a kernel that a converter re-lays out
                # (Conv, LSTM) is stored once, in the layout ONNX reads.
                self.names[id(t)] = self.const(value, t.node.name)
                return self.names[id(t)]
            raise NotImplementedError(
                f"ONNX export does not support output {t.index} of op "
                f"'{t.node.op}' (node '{t.node.name}').") from None

    def const(self, value, hint="const"):
        name = self.fresh(hint)
        self.initializers.append(
            self.onnx.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def ints(self, values, hint="ints"):
        return self.const(np.asarray(values, np.int64), hint)

    def add(self, op_type, inputs, outputs=None, n_outputs=1, **attrs):
        hint = self.node.name if self.node is not None else op_type
        outputs = outputs or [self.fresh(hint) for _ in range(n_outputs)]
        self.nodes.append(self.onnx.helper.make_node(
            op_type, inputs, outputs, name=self.fresh(hint + "/" + op_type),
            **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def value_of(self, t):
        """The array behind a Variable or constant tensor; None for others."""
        if t.node.op == "Variable":
            return t.node.attrs["variable"].numpy()
        if t.node.op == "Const":
            return np.asarray(t.node.attrs["value"])
        return None

    def transposed(self, t, perm):
        """``t`` transposed by ``perm``: an initializer for constants."""
        value = self.value_of(t)
        if value is not None:
            return self.const(np.transpose(value, perm), t.node.name)
        return self.add("Transpose", [self.name_of(t)], perm=list(perm))

    def fail(self, why=""):
        node = self.node
        layer = node.name.rsplit("/", 1)[0] if "/" in node.name else node.name
        raise NotImplementedError(
            f"ONNX export does not support op '{node.op}' (node '{node.name}', "
            f"layer '{layer}'){': ' + why if why else ''}.")


def _convert(b, node):
    b.node = node
    if node.op in ("Variable", "Const"):
        return  # initializers are made when first read (``_Builder.name_of``)
    if node.op == "Placeholder":
        raise ValueError(f"Output depends on placeholder '{node.name}', which is "
                         f"not among the exported inputs.")
    rule = _CONVERTERS.get(node.op)
    if rule is None:
        b.fail()
    # Constants and weights are looked up lazily, so pass a lazy list.
    outs = rule(b, node, _Names(b, node.inputs), **node.attrs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    for t, name in zip(node.outputs, outs):
        if name is not None:
            b.names[id(t)] = name


class _Names:
    """``ins[i]``: the ONNX name of a node's i-th input, made on first read."""

    def __init__(self, b, tensors):
        self._b, self._tensors = b, tensors

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._b.name_of(t) for t in self._tensors[i]]
        return self._b.name_of(self._tensors[i])

    def __len__(self):
        return len(self._tensors)

    def __iter__(self):
        return (self._b.name_of(t) for t in self._tensors)


# -- converters: backend op -> ONNX nodes (inputs are ONNX names) ----------------------
def _same(onnx_op):
    return lambda b, node, ins, **_: b.add(onnx_op, ins)


def _matmul(b, node, ins, transpose_a=False, transpose_b=False):
    a, w = node.inputs
    x = b.transposed(a, _swap_last(a.ndim)) if transpose_a else ins[0]
    y = b.transposed(w, _swap_last(w.ndim)) if transpose_b else ins[1]
    return b.add("MatMul", [x, y])


def _swap_last(ndim):
    return list(range(ndim - 2)) + [ndim - 1, ndim - 2]


def _axes(node, axis):
    ndim = node.inputs[0].ndim
    if axis is None:
        return list(range(ndim))
    axis = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    return [int(a) % ndim for a in axis]


def _reduce(onnx_op):
    def rule(b, node, ins, axis=None, keepdims=False):
        axes = _axes(node, axis)
        # ReduceSum takes axes as an input from opset 13, the others from 18.
        if onnx_op == "ReduceSum" or b.opset >= 18:
            return b.add(onnx_op, [ins[0], b.ints(axes)], keepdims=int(keepdims))
        return b.add(onnx_op, ins, axes=axes, keepdims=int(keepdims))
    return rule


def _softmax(b, node, ins, axis):
    axes = _axes(node, axis)
    if len(axes) == 1:
        return b.add("Softmax", ins, axis=axes[0])
    # Over several axes: e / sum(e), e = exp(x - max(x)), as the backend's kernel.
    top = _reduce("ReduceMax")(b, node, ins, axis=axes, keepdims=True)
    e = b.add("Exp", [b.add("Sub", [ins[0], top])])
    total = b.add("ReduceSum", [e, b.ints(axes)], keepdims=1)
    return b.add("Div", [e, total])


def _fused_attention(b, node, ins, scale):
    # softmax(scale * q k^T) v per batch and head, in (B, T, H, D) layout.
    q = b.add("Transpose", [ins[0]], perm=[0, 2, 1, 3])
    kt = b.add("Transpose", [ins[1]], perm=[0, 2, 3, 1])
    v = b.add("Transpose", [ins[2]], perm=[0, 2, 1, 3])
    dtype = node.inputs[0].dtype
    logits = b.add("Mul", [b.add("MatMul", [q, kt]),
                           b.const(np.asarray(scale, dtype), "scale")])
    if len(node.inputs) > 3:
        # False in the mask: -1e9 added to the logit, as the backend's kernel.
        bias = b.add("Where", [ins[3], b.const(np.asarray(0.0, dtype), "zero"),
                               b.const(np.asarray(-1e9, dtype), "masked")])
        logits = b.add("Add", [logits, bias])
    weights = b.add("Softmax", [logits], axis=3)
    out = b.add("Transpose", [b.add("MatMul", [weights, v])], perm=[0, 2, 1, 3])
    return [out, weights]


def _cast(b, node, ins, dtype, **_):
    return b.add("Cast", ins, to=_elem_type(b.onnx, dtype))


def _reshape(b, node, ins, shape):
    return b.add("Reshape", [ins[0], b.ints(shape)])


def _transpose(b, node, ins, perm=None, axes=None, **_):
    perm = perm if perm is not None else axes
    if perm is None:
        perm = list(reversed(range(node.inputs[0].ndim)))
    return b.add("Transpose", ins, perm=[int(p) for p in perm])


def _expand_dims(b, node, ins, axis):
    ndim = node.outputs[0].ndim
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    return b.add("Unsqueeze", [ins[0], b.ints([a % ndim for a in axes])])


def _squeeze(b, node, ins, axis=None):
    if axis is None:
        return b.add("Squeeze", ins)
    return b.add("Squeeze", [ins[0], b.ints(_axes(node, axis))])


def _concat(b, node, ins, axis):
    return b.add("Concat", ins, axis=int(axis) % node.outputs[0].ndim)


def _clip(b, node, ins):
    # Max(Min(x, hi), lo): ONNX's Clip takes only scalar bounds.
    return b.add("Max", [b.add("Min", [ins[0], ins[2]]), ins[1]])


def _strided_slice(b, node, ins, key):
    x = node.inputs[0]
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    n_real = sum(k[0] in ("s", "i") for k in key)
    axis = out_axis = 0
    for k in key:
        if k[0] == "e":
            skip = x.ndim - n_real
            axis += skip
            out_axis += skip
        elif k[0] == "n":
            unsqueeze.append(out_axis)
            out_axis += 1
        elif k[0] == "i":
            i = k[1]
            starts.append(i)
            ends.append(i + 1 if i != -1 else np.iinfo(np.int64).max)
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
            axis += 1
        else:
            start, stop, step = k[1], k[2], 1 if k[3] is None else k[3]
            if start is not None or stop is not None or step != 1:
                big = np.iinfo(np.int64).max
                starts.append(start if start is not None else
                              (0 if step > 0 else big))
                ends.append(stop if stop is not None else
                            (big if step > 0 else -big))
                axes.append(axis)
                steps.append(step)
            axis += 1
            out_axis += 1
    out = ins[0]
    if axes:
        out = b.add("Slice", [out, b.ints(starts), b.ints(ends), b.ints(axes),
                              b.ints(steps)])
    if squeeze:
        out = b.add("Squeeze", [out, b.ints(squeeze)])
    if unsqueeze:
        out = b.add("Unsqueeze", [out, b.ints(unsqueeze)])
    return out if axes or squeeze or unsqueeze else b.add("Identity", [out])


def _pads(padding):
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    if padding == "SAME":
        # TF's SAME puts the odd padding element at the end: ONNX's SAME_UPPER.
        return {"auto_pad": "SAME_UPPER"}
    raise NotImplementedError(f"padding={padding!r}")


def _channels_first(b, name, ndim):
    return b.add("Transpose", [name], perm=[0, ndim - 1] + list(range(1, ndim - 1)))


def _channels_last(b, name, ndim):
    return b.add("Transpose", [name], perm=[0] + list(range(2, ndim)) + [1])


def _conv(b, node, ins, strides, padding, dilation_rate):
    x, kernel = node.inputs
    nd = x.ndim
    # (spatial..., in, out) -> ONNX's (out, in, spatial...).
    w = b.transposed(kernel, [nd - 1, nd - 2] + list(range(nd - 2)))
    try:
        pads = _pads(padding)
    except NotImplementedError as e:
        b.fail(str(e))
    y = b.add("Conv", [_channels_first(b, ins[0], nd), w], strides=list(strides),
              dilations=list(dilation_rate), **pads)
    return _channels_last(b, y, nd)


def _pool(onnx_op):
    def rule(b, node, ins, pool_size, strides, padding):
        nd = node.inputs[0].ndim
        try:
            pads = _pads(padding)
        except NotImplementedError as e:
            b.fail(str(e))
        y = b.add(onnx_op, [_channels_first(b, ins[0], nd)],
                  kernel_shape=list(pool_size), strides=list(strides), **pads)
        return _channels_last(b, y, nd)
    return rule


# Keras activation name -> ONNX RNN activation (and its alpha, beta).
_RNN_ACTS = {"tanh": ("Tanh",), "sigmoid": ("Sigmoid",), "relu": ("Relu",),
             "hard_sigmoid": ("HardSigmoid", 1.0 / 6.0, 0.5)}


def _rnn_loop(b, node, ins, cell, units, activation, recurrent_activation,
              has_state, has_mask, has_rmask):
    if has_mask:
        b.fail("masked sequences")
    if has_rmask:
        b.fail("recurrent dropout mask")
    for a in (activation, recurrent_activation):
        if a not in _RNN_ACTS:
            b.fail(f"activation '{a}'")
    x, kernel, rkernel, bias = node.inputs[:4]
    u = units
    w, r, bv = (b.value_of(t) for t in (kernel, rkernel, bias))
    if w is None or r is None or bv is None:
        b.fail("weights computed in the graph")
    if cell == "lstm":
        # Keras' gates (i, f, c, o) -> ONNX's (i, o, f, c).
        perm = np.concatenate([np.arange(0, u), np.arange(3 * u, 4 * u),
                               np.arange(u, 2 * u), np.arange(2 * u, 3 * u)])
        w, r, bv = w[:, perm], r[:, perm], bv[perm]
        bias_wr = np.concatenate([bv, np.zeros_like(bv)])
        op, acts = "LSTM", [recurrent_activation, activation, activation]
        extra = {}
    elif cell in ("gru", "gru_v1"):
        # Keras' (z, r, h) is ONNX's order; reset_after is linear_before_reset.
        bias_wr = bv.reshape(-1) if cell == "gru" else np.concatenate(
            [bv, np.zeros_like(bv)])
        op, acts = "GRU", [recurrent_activation, activation]
        extra = {"linear_before_reset": int(cell == "gru")}
    else:
        bias_wr = np.concatenate([bv, np.zeros_like(bv)])
        op, acts, extra = "RNN", [activation], {}
    onnx_acts, alphas, betas = [], [], []
    for a in acts:
        spec = _RNN_ACTS[a]
        onnx_acts.append(spec[0])
        alphas.append(spec[1] if len(spec) > 1 else 0.0)
        betas.append(spec[2] if len(spec) > 1 else 0.0)
    if any(alphas):
        extra.update(activation_alpha=alphas, activation_beta=betas)
    inputs = [b.add("Transpose", [ins[0]], perm=[1, 0, 2]),
              b.const(w.T[None], node.name + "/W"),
              b.const(r.T[None], node.name + "/R"),
              b.const(bias_wr[None], node.name + "/B"), ""]
    if has_state:
        states = ins[4:6] if cell == "lstm" else ins[4:5]
        inputs += [b.add("Unsqueeze", [s, b.ints([0])]) for s in states]
    outs = b.add(op, inputs, n_outputs=3 if cell == "lstm" else 2,
                 hidden_size=int(u), activations=onnx_acts, **extra)
    # Y: (steps, 1, batch, units) -> the batch-major (batch, steps, units).
    y = b.add("Squeeze", [outs[0], b.ints([1])])
    hs = b.add("Transpose", [y], perm=[1, 0, 2])
    return [hs, None, None]  # per-step cell states and the cache: not exported


def _softplus(b, node, ins, **_):
    return b.add("Softplus", ins)


def _conv_transpose(b, node, ins, strides, padding, dilation_rate, output_shape):
    x, kernel = node.inputs
    spatial = x.shape[1:3] if x.shape is not None else (None, None)
    if None in spatial or kernel.shape is None:
        b.fail("an input whose height and width are unknown at export")
    # (kh, kw, out, in) -> ONNX's (in, out, kh, kw): ConvTranspose is the
    # adjoint of the Conv whose (out, in, kh, kw) weight this same array is.
    w = b.transposed(kernel, [3, 2, 0, 1])
    pads_begin, pads_end, extra = [], [], []
    for size, out, k, s, d in zip(spatial, output_shape, kernel.shape[:2],
                                  strides, dilation_rate):
        # TF's transposed conv scatters into conv's padded input, then crops the
        # 'before' pad of conv(out -> size); ONNX crops pads and, past the
        # scattered span, appends output_padding zeros.
        full = (size - 1) * s + (k - 1) * d + 1
        before = window_geometry(out, k, s, d, padding)[1]
        pads_begin.append(before)
        pads_end.append(max(full - before - out, 0))
        extra.append(max(before + out - full, 0))
    y = b.add("ConvTranspose", [_channels_first(b, ins[0], 4), w],
              strides=list(strides), dilations=list(dilation_rate),
              pads=pads_begin + pads_end, output_padding=extra)
    return _channels_last(b, y, 4)


def _layer_norm(b, node, ins, axes, epsilon):
    # Only y: the statistics feed the gradient, which is not exported.
    return [b.add("LayerNormalization", [ins[0], ins[1], ins[2]], axis=-len(axes),
                  epsilon=float(epsilon)), None, None]


def _einsum(b, node, ins, equation):
    return b.add("Einsum", list(ins), equation=equation)


def _embedding_lookup(b, node, ins, **_):
    # kerasflow refuses ids outside [0, input_dim); ONNX's Gather reads -k as
    # row input_dim - k and fails on the rest.
    return b.add("Gather", [ins[0], ins[1]], axis=0)


def _gather(b, node, ins, axis=0):
    return b.add("Gather", [ins[0], ins[1]], axis=int(axis))


def _one_hot(b, node, ins, depth, dtype="float32", axis=-1):
    if axis != -1:
        b.fail(f"axis={axis}")
    # Equal against 0..depth-1 rather than ONNX's OneHot, which would wrap a
    # negative index: an out-of-range index gives an all-zero row, as in TF.
    ids = node.inputs[0]
    hot = b.add("Equal", [b.add("Unsqueeze", [ins[0], b.ints([-1])]),
                          b.const(np.arange(depth, dtype=ids.dtype), "depth")])
    return b.add("Cast", [hot], to=_elem_type(b.onnx, dtype))


def _arg(onnx_op):
    def rule(b, node, ins, axis=None, output_type="int64"):
        x = ins[0]
        if axis is None:
            x, axis = b.add("Reshape", [x, b.ints([-1])]), 0
        y = b.add(onnx_op, [x], axis=int(axis), keepdims=0)
        if np.dtype(output_type) != np.int64:
            y = b.add("Cast", [y], to=_elem_type(b.onnx, output_type))
        return y
    return rule


_CONVERTERS = {
    "Identity": _same("Identity"), "StopGradient": _same("Identity"),
    "Add": _same("Add"), "Sub": _same("Sub"), "Mul": _same("Mul"),
    "Div": _same("Div"), "Pow": _same("Pow"), "Maximum": _same("Max"),
    "Minimum": _same("Min"), "Neg": _same("Neg"), "Abs": _same("Abs"),
    "Exp": _same("Exp"), "Log": _same("Log"), "Sqrt": _same("Sqrt"),
    "Reciprocal": _same("Reciprocal"), "Tanh": _same("Tanh"),
    "Sigmoid": _same("Sigmoid"), "Relu": _same("Relu"), "Erf": _same("Erf"),
    "Sign": _same("Sign"), "Floor": _same("Floor"), "Sin": _same("Sin"),
    "Cos": _same("Cos"), "Softplus": _softplus,
    "Equal": _same("Equal"), "Less": _same("Less"), "Greater": _same("Greater"),
    "NotEqual": lambda b, node, ins: b.add("Not", [b.add("Equal", list(ins))]),
    "LessEqual": _same("LessOrEqual"), "GreaterEqual": _same("GreaterOrEqual"),
    "LogicalAnd": _same("And"), "LogicalOr": _same("Or"),
    "LogicalNot": _same("Not"), "Select": _same("Where"),
    "Square": lambda b, node, ins: b.add("Mul", [ins[0], ins[0]]),
    "Rsqrt": lambda b, node, ins: b.add("Reciprocal", [b.add("Sqrt", ins)]),
    "MatMul": _matmul, "Cast": _cast, "Reshape": _reshape,
    "Transpose": _transpose, "ExpandDims": _expand_dims, "Squeeze": _squeeze,
    "Concat": _concat, "ClipByValue": _clip, "StridedSlice": _strided_slice,
    "Softmax": _softmax, "FusedAttention": _fused_attention,
    "Sum": _reduce("ReduceSum"), "Mean": _reduce("ReduceMean"),
    "Max": _reduce("ReduceMax"), "Min": _reduce("ReduceMin"),
    "Prod": _reduce("ReduceProd"),
    "ArgMax": _arg("ArgMax"), "ArgMin": _arg("ArgMin"),
    "Einsum": _einsum, "EmbeddingLookup": _embedding_lookup, "Gather": _gather,
    "OneHot": _one_hot,
    "Conv2D": _conv, "Conv3D": _conv, "Conv2DTranspose": _conv_transpose,
    "MaxPool": _pool("MaxPool"), "MaxPool3D": _pool("MaxPool"),
    "AvgPool": _pool("AveragePool"), "AvgPool3D": _pool("AveragePool"),
    "RNNLoop": _rnn_loop, "LayerNorm": _layer_norm,
}
