"""Numpy-style array ops Keras 3 code reaches for: cumulative sums and
products, sorting and top-k, triangles, flips and rolls, repeats,
``take_along_axis``, moments, ``linspace``, ``einsum`` and a few elementwise
functions (``erf``, ``expm1``, ``ceil``, ``isinf``, ``nan_to_num``), with
``any``/``all``. Each op has numpy's semantics (Keras 3's ``keras.ops``) and a
registered gradient where one exists.
"""

from __future__ import annotations

import math as _pymath

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend.ops import infer as I
from kerasflow.backend.ops.elementwise import _erf_kernel, exp, sqrt, square
from kerasflow.backend.ops.gemm import matmul_into
from kerasflow.backend.ops.math import (
    _unary, cast, divide, multiply, ones_like, subtract, where,
)
from kerasflow.backend.ops.reduction import mean, sum as _sum
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["all", "any", "argsort", "ceil", "cumprod", "cumsum", "einsum", "erf",
           "expm1", "flip", "isinf", "linspace", "moments", "nan_to_num", "repeat",
           "roll", "sort", "std", "take_along_axis", "top_k", "tril", "triu", "var"]


# -- cumulative ---------------------------------------------------------------------
def _cum_infer(x, axis=None):
    if x.shape is None:
        return None, x.dtype
    return ((int(np.prod(x.shape)) if None not in x.shape else None,)
            if axis is None else x.shape), x.dtype


@register_op("Cumsum", _cum_infer)
def _cumsum(xp, x, axis=None):
    return xp.cumsum(x, axis=axis, dtype=x.dtype)


@register_gradient("Cumsum")
def _cumsum_grad(node, g):
    x = node.inputs[0]
    axis = node.attrs["axis"]
    if axis is None:  # the flattened cumsum: reverse-cumsum, then x's shape
        return (apply("Reshape", flip(cumsum(flip(g, 0), 0), 0),
                      shape=tuple(-1 if d is None else d for d in x.shape)),)
    return (flip(cumsum(flip(g, axis), axis), axis),)


def cumsum(x, axis=None):
    """Cumulative sum along ``axis`` (None: of the flattened input)."""
    return apply("Cumsum", x, axis=None if axis is None else int(axis))


@register_op("Cumprod", _cum_infer)
def _cumprod(xp, x, axis=None):
    return xp.cumprod(x, axis=axis, dtype=x.dtype)


@register_gradient("Cumprod")
def _cumprod_grad(node, g):
    # d/dx_i sum_j g_j prod_{k<=j} x_k = sum_{j>=i} g_j y_j / x_i (x_i != 0).
    x, y = node.inputs[0], node.outputs[0]
    axis = node.attrs["axis"]
    if axis is None:
        raise NotImplementedError("The gradient of cumprod(axis=None) is not "
                                  "implemented; give an axis.")
    rev = flip(cumsum(flip(multiply(g, y), axis), axis), axis)
    return (divide(rev, x),)


def cumprod(x, axis=None):
    """Cumulative product along ``axis`` (None: flattened). Its gradient divides
    by ``x``: defined where ``x`` is non-zero."""
    return apply("Cumprod", x, axis=None if axis is None else int(axis))


# -- flips, rolls, repeats, triangles ---------------------------------------------------
@register_op("Flip", lambda x, axis=None: (x.shape, x.dtype))
def _flip(xp, x, axis=None):
    return xp.flip(x, axis=axis)


@register_gradient("Flip")
def _flip_grad(node, g):
    return (flip(g, node.attrs["axis"]),)


def flip(x, axis=None):
    """``x`` reversed along ``axis`` (an int, a tuple, or None for all)."""
    if axis is not None and not isinstance(axis, int):
        axis = tuple(int(a) for a in axis)
    return apply("Flip", x, axis=axis)


@register_op("Roll", lambda x, shift, axis=None: (x.shape, x.dtype))
def _roll(xp, x, shift, axis=None):
    return xp.roll(x, shift, axis=axis)


@register_gradient("Roll")
def _roll_grad(node, g):
    shift = node.attrs["shift"]
    neg = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return (apply("Roll", g, shift=neg, axis=node.attrs["axis"]),)


def roll(x, shift, axis=None):
    """Elements shifted by ``shift`` along ``axis`` (None: flattened), wrapping."""
    def plain(v):
        return tuple(int(a) for a in v) if isinstance(v, (list, tuple)) else (
            None if v is None else int(v))
    return apply("Roll", x, shift=plain(shift), axis=plain(axis))


def _repeat_infer(x, repeats, axis=None):
    if x.shape is None:
        return None, x.dtype
    if axis is None:
        n = None if None in x.shape else int(np.prod(x.shape)) * repeats
        return (n,), x.dtype
    shape = list(x.shape)
    a = axis % len(shape)
    shape[a] = None if shape[a] is None else shape[a] * repeats
    return tuple(shape), x.dtype


@register_op("Repeat", _repeat_infer)
def _repeat(xp, x, repeats, axis=None):
    return xp.repeat(x, repeats, axis=axis)


@register_gradient("Repeat")
def _repeat_grad(node, g):
    x = node.inputs[0]
    r, axis = node.attrs["repeats"], node.attrs["axis"]
    if axis is None:
        summed = _sum(apply("Reshape", g, shape=(-1, r)), axis=1)
        return (apply("Reshape", summed,
                      shape=tuple(-1 if d is None else d for d in x.shape)),)
    a = axis % len(x.shape)
    shape = tuple(-1 if d is None else d for d in x.shape[:a]) + (
        x.shape[a] if x.shape[a] is not None else -1, r) + tuple(x.shape[a + 1:])
    return (_sum(apply("Reshape", g, shape=shape), axis=a + 1),)


def repeat(x, repeats, axis=None):
    """Each element repeated ``repeats`` times (an int) along ``axis`` (None:
    the flattened input), as ``numpy.repeat``.

    Raises:
        NotImplementedError: per-element ``repeats`` (a list).
    """
    if not isinstance(repeats, (int, np.integer)):
        raise NotImplementedError("repeat takes an int `repeats` here. Received: "
                                  f"repeats={repeats!r}.")
    return apply("Repeat", x, repeats=int(repeats),
                 axis=None if axis is None else int(axis))


def _tri_infer(x, k=0, lower=True):
    if x.shape is not None and len(x.shape) < 2:
        raise ValueError(f"tril/triu expect rank >= 2. Received: {I.fmt(x)}.")
    return x.shape, x.dtype


@register_op("Tri", _tri_infer)
def _tri(xp, x, k=0, lower=True):
    return xp.tril(x, k) if lower else xp.triu(x, k)


@register_gradient("Tri")
def _tri_grad(node, g):
    return (apply("Tri", g, **node.attrs),)


def tril(x, k=0):
    """The lower triangle of the last two axes (above diagonal ``k`` zeroed)."""
    return apply("Tri", x, k=int(k), lower=True)


def triu(x, k=0):
    """The upper triangle of the last two axes (below diagonal ``k`` zeroed)."""
    return apply("Tri", x, k=int(k), lower=False)


# -- sorting and gathering --------------------------------------------------------------
@register_op("Argsort", lambda x, axis=-1: (x.shape, np.dtype("int64")),
             differentiable=False)
def _argsort(xp, x, axis=-1):
    return xp.argsort(x, axis=axis, kind="stable").astype("int64")


def argsort(x, axis=-1):
    """Indices that sort ``x`` along ``axis`` (stable), int64."""
    return apply("Argsort", x, axis=int(axis))


def _take_infer(x, indices, axis):
    return indices.shape, x.dtype


@register_op("TakeAlongAxis", _take_infer)
def _take_along(xp, x, indices, axis):
    return xp.take_along_axis(x, indices, axis=axis)


@register_gradient("TakeAlongAxis")
def _take_along_grad(node, g):
    x, idx = node.inputs
    return apply("PutAlongAxisAdd", g, idx, x, axis=node.attrs["axis"]), None


@register_op("PutAlongAxisAdd", lambda g, idx, x, axis: (x.shape, g.dtype))
def _put_add(xp, g, idx, x, axis):
    out = xp.zeros(x.shape, g.dtype)
    # Index grids for every axis but `axis`, then one unbuffered add.
    # (cupy's indices has no sparse=: broadcastable aranges, numpy's sparse grids)
    nd = len(idx.shape)
    grids = [xp.arange(n).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
             for i, n in enumerate(idx.shape)]
    grids[axis] = idx
    xp.add.at(out, tuple(grids), g)
    return out


@register_gradient("PutAlongAxisAdd")
def _put_add_grad(node, gg):
    return take_along_axis(gg, node.inputs[1], node.attrs["axis"]), None, None


def take_along_axis(x, indices, axis=None):
    """``numpy.take_along_axis``: ``indices`` (int, x's rank) pick along ``axis``.

    Raises:
        NotImplementedError: ``axis=None``.
    """
    if axis is None:
        raise NotImplementedError("take_along_axis needs an axis here.")
    rank = len(x.shape)
    return apply("TakeAlongAxis", x, cast(indices, "int64"), axis=int(axis) % rank)


def sort(x, axis=-1):
    """``x`` sorted ascending along ``axis``; the gradient goes back to each
    element's original place."""
    return take_along_axis(x, argsort(x, axis), axis)


def top_k(x, k, sorted=True):  # noqa: A002  (Keras' argument name)
    """The ``k`` largest values along the last axis and their indices (int64),
    largest first (Keras 3's ``ops.top_k``)."""
    order = argsort(-x if _is_tensor(x) else -np.asarray(x), axis=-1)
    idx = order[..., :int(k)]
    return take_along_axis(x, idx, -1), idx


def _is_tensor(x):
    return hasattr(x, "node")


# -- moments and ranges -------------------------------------------------------------
def var(x, axis=None, keepdims=False):
    """Biased variance ``mean((x - mean(x))**2)`` over ``axis``."""
    centered = subtract(x, mean(x, axis=axis, keepdims=True))
    return mean(square(centered), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    """``sqrt(var(x))`` over ``axis``."""
    return sqrt(var(x, axis=axis, keepdims=keepdims))


def moments(x, axes, keepdims=False, synchronized=False):
    """(mean, variance) over ``axes`` (Keras 3's ``ops.moments``)."""
    return mean(x, axis=axes, keepdims=keepdims), var(x, axis=axes,
                                                        keepdims=keepdims)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None,
             axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` (an array, as
    ``numpy.linspace``; floatx unless ``dtype``)."""
    return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                       dtype=dtype or _array.floatx(), axis=axis)


# -- einsum ---------------------------------------------------------------------------
def _einsum_infer(*specs, equation):
    shapes = [s.shape for s in specs]
    if any(s is None or None in s for s in shapes):
        ins, out = equation.split("->")
        sizes = {}
        for term, s in zip(ins.split(","), shapes):
            for c, d in zip(term, s or ()):
                if d is not None:
                    sizes[c] = d
        return tuple(sizes.get(c) for c in out), I.result_dtype(*specs)
    probe = np.einsum(equation, *[np.empty(s, np.int8) for s in shapes])
    return probe.shape, I.result_dtype(*specs)


class _PairPlan:
    """A two-operand einsum as one (batched) GEMM on strided views. Indices
    of one operand only, absent from the output, are summed first; the rest
    fall in four groups: batch (both operands and the output), left (first
    operand and output), right (second operand and output), contracted (both
    operands only). Each operand is viewed as (batch..., free, contracted) /
    (batch..., contracted, free) by a transpose (copied only when a group of
    several indices cannot be merged in place or BLAS cannot read the view)
    and ``matmul`` writes straight into a transposed view of the output, the
    operands swapped when the output's last index belongs to the first
    operand (BLAS needs the result's rows contiguous). Attention's
    ``aecd,abcd->acbe`` thus reads (B, T, H, D) projections as they lie and
    writes the (B, H, T, T) scores with no transpose copy.

    ``numpy.einsum(optimize=True)`` runs contractions that keep a batch index
    in its own loops, not BLAS (2x slower on the transformer benchmark's
    shapes); on other array modules (cupy) the operands are made contiguous
    (batch, free, contracted) stacks and the result transposed back."""

    __slots__ = ("lone", "perm_a", "perm_b", "shape_a", "shape_b", "mid", "perm_out",
                 "swap", "out_shape", "view_perm", "view_shape", "direct")

    def __init__(self, equation, shape_a, shape_b):
        ins, out = equation.split("->")
        a, b = ins.split(",")
        self.lone = (tuple(i for i, c in enumerate(a) if c not in b and c not in out),
                     tuple(i for i, c in enumerate(b) if c not in a and c not in out))
        a = "".join(c for i, c in enumerate(a) if i not in self.lone[0])
        b = "".join(c for i, c in enumerate(b) if i not in self.lone[1])
        size = dict(zip(a, (d for i, d in enumerate(shape_a) if i not in self.lone[0])))
        size.update(zip(b, (d for i, d in enumerate(shape_b) if i not in self.lone[1])))
        batch = [c for c in out if c in a and c in b]
        left = [c for c in out if c in a and c not in b]
        right = [c for c in out if c in b and c not in a]
        con = [c for c in a if c in b and c not in out]
        # The output's last index must be a column of the product.
        self.swap = bool(out) and out[-1] in left
        if self.swap:
            a, b, left, right = b, a, right, left
        self.out_shape = tuple(size[c] for c in out)

        def prod(part):
            return _pymath.prod(size[c] for c in part)

        bshape = tuple(size[c] for c in batch)
        self.perm_a = tuple(a.index(c) for c in batch + left + con)
        self.perm_b = tuple(b.index(c) for c in batch + con + right)
        self.shape_a = bshape + (prod(left), prod(con))
        self.shape_b = bshape + (prod(con), prod(right))
        mid = batch + left + right
        self.mid = tuple(size[c] for c in mid)
        self.perm_out = tuple(mid.index(c) for c in out)
        # The product written in place: left and right each occupy adjacent
        # positions of the output, in order (so each merges into one axis).
        pos = [out.index(c) for c in left], [out.index(c) for c in right]
        # (this module's own all/any/max shadow the builtins)
        self.direct = not [p for p in pos if p and p != list(range(p[0], p[0] + len(p)))]
        self.view_perm = tuple(out.index(c) for c in mid)
        self.view_shape = bshape + (prod(left), prod(right))

    def __call__(self, xp, a, b):
        if self.lone[0]:
            a = a.sum(axis=self.lone[0])
        if self.lone[1]:
            b = b.sum(axis=self.lone[1])
        if self.swap:
            a, b = b, a
        if xp is not np:
            a = a.transpose(self.perm_a).reshape(self.shape_a)
            b = b.transpose(self.perm_b).reshape(self.shape_b)
            out = xp.matmul(a, b).reshape(self.mid).transpose(self.perm_out)
            return out if out.flags.c_contiguous else out.copy()
        a = _blas_view(a.transpose(self.perm_a).reshape(self.shape_a))
        b = _blas_view(b.transpose(self.perm_b).reshape(self.shape_b))
        dtype = np.result_type(a, b)
        if self.direct:
            out = np.empty(self.out_shape, dtype)
            view = out.transpose(self.view_perm)
            if view.shape != self.view_shape:
                view = view.reshape(self.view_shape)   # merges in place (adjacent axes)
            matmul_into(a, b, view)
            return out
        out = matmul_into(a, b).reshape(self.mid).transpose(self.perm_out)
        return np.ascontiguousarray(out)


def _blas_view(x):
    """``x`` when BLAS can read its trailing (rows, cols) matrices as they lie
    (one axis of unit stride, the other a multiple of the item size and at
    least the unit axis' extent), else a C-contiguous copy: numpy's ``matmul``
    falls back to its own loops otherwise."""
    if x.ndim < 2 or x.size == 0:
        return x
    item = x.itemsize
    (m, n), (sm, sn) = x.shape[-2:], x.strides[-2:]
    if (sn == item or n == 1) and sm % item == 0 and sm >= n * item:
        return x
    if (sm == item or m == 1) and sn % item == 0 and sn >= m * item:
        return x
    return np.ascontiguousarray(x)


_PLANS: dict = {}


def _pair_plan(equation, a, b):
    """The cached ``_PairPlan`` of ``equation`` for these shapes, or None when
    the equation needs numpy's einsum (an index repeated within an operand,
    an ellipsis, an implicit output, a non-float operand)."""
    key = (equation, a.shape, b.shape)
    plan = _PLANS.get(key, False)
    if plan is False:
        plan = None
        terms = equation.split("->")
        ok = (len(terms) == 2 and "." not in equation and a.dtype == b.dtype
              and a.dtype.kind == "f")
        if ok:
            ta, tb = terms[0].split(",")
            ok = (len(set(ta)) == len(ta) == a.ndim and len(set(tb)) == len(tb) == b.ndim
                  and len(set(terms[1])) == len(terms[1]))
        if ok:
            plan = _PairPlan(equation, a.shape, b.shape)
        if len(_PLANS) > 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


@register_op("Einsum", _einsum_infer)
def _einsum(xp, *operands, equation):
    if len(operands) == 2:
        plan = _pair_plan(equation, operands[0], operands[1])
        if plan is not None:
            return plan(xp, operands[0], operands[1])
    return xp.einsum(equation, *operands, optimize=True)


@register_gradient("Einsum")
def _einsum_grad(node, g):
    ins, out = node.attrs["equation"].split("->")
    terms = ins.split(",")
    grads = []
    for i, term in enumerate(terms):
        others = [t for j, t in enumerate(terms) if j != i]
        if len(set(term)) != len(term):
            raise NotImplementedError(
                f"The gradient of einsum '{node.attrs['equation']}' is not "
                f"implemented for operand {i}: an index repeats in it (a "
                f"diagonal).")
        # Indices summed within this operand alone come back by broadcasting.
        lone = set(term) - set(out) - set("".join(others))
        kept = "".join(c for c in term if c not in lone)
        rest = [x for j, x in enumerate(node.inputs) if j != i]
        grad = apply("Einsum", g, *rest,
                     equation=",".join([out] + others) + "->" + kept)
        for pos, c in enumerate(term):
            if c in lone:
                grad = apply("ExpandDims", grad, axis=pos)
        if lone:
            grad = multiply(grad, ones_like(node.inputs[i]))
        grads.append(grad)
    return tuple(grads)


def einsum(subscripts, *operands):
    """``numpy.einsum`` with explicit output subscripts (``"ij,jk->ik"``;
    an implicit one is made explicit numpy's way). Gradients are einsums too
    (broadcast back over indices summed within one operand alone).

    Raises:
        ValueError: ellipses (not supported here).
        NotImplementedError: (gradient) an index repeated within one operand.
    """
    if "..." in subscripts:
        raise ValueError(f"einsum here takes subscripts without '...'. "
                         f"Received: {subscripts!r}.")
    eq = subscripts.replace(" ", "")
    if "->" not in eq:
        letters = eq.replace(",", "")
        eq += "->" + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return apply("Einsum", *operands, equation=eq)


# -- elementwise and logical ------------------------------------------------------------
@register_op("Erf", I.same_float)
def _erf(xp, x):
    return xp.asarray(_erf_kernel(np.asarray(x)))


@register_gradient("Erf")
def _erf_grad(node, g):
    x = node.inputs[0]
    return (multiply(g, multiply(2.0 / _pymath.sqrt(_pymath.pi),
                                 exp(-square(x)))),)


def erf(x):
    """The error function, elementwise (float input)."""
    return apply("Erf", x)


expm1 = _unary("Expm1", "expm1", "Elementwise exp(x) - 1, accurate for small x.",
               I.same_float)


@register_gradient("Expm1")
def _expm1_grad(node, g):
    return (multiply(g, exp(node.inputs[0])),)


ceil = _unary("Ceil", "ceil", "Elementwise ceiling; gradient zero.",
              differentiable=False)
isinf = _unary("Isinf", "isinf", "Elementwise test for +-inf (bool).",
               lambda x, **_: (x.shape, np.dtype(bool)), differentiable=False)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan``, +-inf by ``posinf``/``neginf`` (default the
    dtype's largest finite values); the gradient passes where ``x`` was finite."""
    big = float(np.finfo(np.dtype(getattr(x, "dtype", "float64"))).max)
    out = where(x != x, nan, x)
    out = where(out == np.inf, big if posinf is None else posinf, out)
    return where(out == -np.inf, -big if neginf is None else neginf, out)


@register_op("Any", lambda x, axis=None, keepdims=False: I.reduced(
    x, axis, keepdims, np.dtype(bool)), differentiable=False)
def _any(xp, x, axis=None, keepdims=False):
    return xp.any(x, axis=axis, keepdims=keepdims)


@register_op("All", lambda x, axis=None, keepdims=False: I.reduced(
    x, axis, keepdims, np.dtype(bool)), differentiable=False)
def _all(xp, x, axis=None, keepdims=False):
    return xp.all(x, axis=axis, keepdims=keepdims)


def _axes(axis):
    return axis if axis is None or isinstance(axis, int) else tuple(axis)


def any(x, axis=None, keepdims=False):  # noqa: A001  (the numpy name)
    """Whether any element along ``axis`` is non-zero (bool)."""
    return apply("Any", x, axis=_axes(axis), keepdims=bool(keepdims))


def all(x, axis=None, keepdims=False):  # noqa: A001  (the numpy name)
    """Whether every element along ``axis`` is non-zero (bool)."""
    return apply("All", x, axis=_axes(axis), keepdims=bool(keepdims))

