"""One parallel pass per variable: numba versions of the optimizer update ops.

The fusion pass (``kerasflow.backend.fusion``) swaps these in for the numpy
kernels of ``kerasflow.optimizers.kernels`` when a step is compiled on CPU with
numba importable and fusion on. Each reads the gradient, the variable and its
slots once and writes the slots and the new value once, in a ``prange`` loop
(one element per iteration: no cross-element reduction, so the result does not
depend on the thread count), where numpy makes 6-12 passes over memory; the
loop runs in the calling thread below ``PARALLEL_MIN`` elements.

Every element goes through the same float operations in the same order as the
numpy kernel, in the variable's dtype (scalars are cast to it first, as numpy's
NEP 50 promotion does for Python floats), without ``fastmath``: fused and numpy
updates agree to float rounding (tests hold them to 1e-6 relative in float32,
1e-12 in float64; in practice they are bitwise equal).

Gradient clipping runs before the update as graph ops (a norm is a reduction);
the elementwise rescaling it leaves is fused by the elementwise pass.
Double buffering, slot checks and constraints are the numpy kernels' own
(``_output_buffer``/``_publish``): only the arithmetic changes. Anything the
fast path does not cover (a non-contiguous slot, a gradient of another dtype or
shape) falls back to the numpy kernel.

A step of a small model is mostly per-call overhead (the wide & deep
benchmark: eight dense Adam updates of 1 to 7,000 elements), so each plan
node keeps what its first update checked and derived (``_Checked``) and
later steps check only what can change between steps: ~6 -> ~3 us per call,
of which the compiled loop's dispatch is ~1 us.
"""

from __future__ import annotations

import inspect

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.registry import get_op
from kerasflow.optimizers import kernels

__all__ = ["adagrad_update", "adam_update", "momentum_update", "rmsprop_update",
           "sgd_update", "sparse_adam_update"]

prange = range  # the loops run as plain Python until jit.kernels compiles them
# Variables from this many elements take the fused kernel (serial below
# jit.PARALLEL_MIN): even a bias of 10 is cheaper as one compiled call (a few
# us of dispatch) than as the numpy kernel's dozen ufunc calls.
MIN_SIZE = 1
# Updates are memory bound (7 arrays streamed, ~28 bytes per float32 element,
# ~10 flops): on our 2-core machine one core already takes what the memory
# gives, and a parallel launch only adds the pool's wake-up and a second
# thread competing with the BLAS threads that spin between GEMMs. Adam,
# min (median) ms, serial vs 2 threads, load ~4.5: 2^18 elements 0.112
# (0.118) vs 0.172 (0.210); 784x512 0.173 (0.183) vs 0.238 (0.273); 2^21 2.36
# (2.79) vs 2.66 (6.21); 2^23 18.6 (20.9) vs 19.7 (23.6). So updates stay
# serial below this many elements (jit.PARALLEL_MIN is for compute-bound
# kernels), parallel above, where more memory channels may pay on bigger hosts.
PARALLEL_MIN = 1 << 22


# -- element loops (compiled by numba; plain Python until then) --------------------
def sgd_update(w, g, out, lr, wd, use_wd):
    for i in prange(w.size):
        x = w[i]
        if use_wd:
            x = x - x * wd
        out[i] = x - g[i] * lr


def momentum_update(w, g, m, out, lr, mu, nesterov, wd, use_wd):
    for i in prange(w.size):
        step = g[i] * lr
        mi = m[i] * mu - step
        m[i] = mi
        x = w[i]
        if use_wd:
            x = x - x * wd
        if nesterov:
            out[i] = x + (mi * mu - step)
        else:
            out[i] = x + mi


def adam_update(w, g, m, v, vhat, out, alpha, c1, c2, eps, amsgrad, wd, use_wd):
    for i in prange(w.size):
        gi = g[i]
        mi = m[i] + (gi - m[i]) * c1
        m[i] = mi
        vi = v[i] + (gi * gi - v[i]) * c2
        v[i] = vi
        if amsgrad:
            h = vhat[i]
            if vi > h or vi != vi:  # noqa: PLR0124  (np.maximum's NaN rule)
                h = vi
            vhat[i] = h
            vi = h
        step = mi / (np.sqrt(vi) + eps) * alpha
        x = w[i]
        if use_wd:
            x = x - x * wd
        out[i] = x - step


def rmsprop_update(w, g, v, mom, mg, out, lr, rho, c, mu, eps, centered,
                   use_mom, wd, use_wd):
    for i in prange(w.size):
        gi = g[i]
        vi = v[i] * rho + gi * gi * c
        v[i] = vi
        if centered:
            mgi = mg[i] * rho + gi * c
            mg[i] = mgi
            den = vi - mgi * mgi + eps
        else:
            den = vi + eps
        step = gi / np.sqrt(den) * lr
        x = w[i]
        if use_wd:
            x = x - x * wd
        if use_mom:
            step = mom[i] * mu + step
            mom[i] = step
        out[i] = x - step


def adagrad_update(w, g, acc, out, lr, eps, wd, use_wd):
    for i in prange(w.size):
        gi = g[i]
        a = acc[i] + gi * gi
        acc[i] = a
        x = w[i]
        if use_wd:
            x = x - x * wd
        out[i] = x - gi / np.sqrt(a + eps) * lr


def sparse_adam_update(w, g, ids, m, v, vhat, alpha, c1, c2, eps, amsgrad):
    # Returns -1, or the position of an id outside [0, rows) (nothing written).
    # A first pass finds the distinct ids with an open-addressing hash table
    # (linear probing, at most half full: O(len(ids)), whatever the table's
    # size, where a sort costs more than the update) and sums each id's
    # gradient rows as they come, in order (the order of numpy's stable sort
    # + add.reduceat, row by row); then adam_update's arithmetic on each
    # touched row of the table and its slots, in place, one row per
    # iteration.
    rows, d = w.shape
    n = ids.size
    for i in range(n):
        if ids[i] < 0 or ids[i] >= rows:
            return i
    cap = 16
    while cap < 2 * n:
        cap *= 2
    mask = cap - 1
    table = np.full(cap, -1, np.int64)  # -1 or the entry in ``touched``
    touched = np.empty(n, np.int64)  # the distinct ids, as they first come
    sums = np.empty((n, d), w.dtype)  # their summed gradient rows
    k = 0
    for i in range(n):
        r = ids[i]
        slot = ((r * 2654435761) >> 7) & mask  # Knuth's multiplicative hash
        while table[slot] >= 0 and touched[table[slot]] != r:
            slot = (slot + 1) & mask
        e = table[slot]
        if e < 0:
            table[slot] = k
            touched[k] = r
            for j in range(d):
                sums[k, j] = g[i, j]
            k += 1
        else:
            for j in range(d):
                sums[e, j] += g[i, j]
    for e in prange(k):
        r = touched[e]
        for j in range(d):
            gi = sums[e, j]
            mi = m[r, j] + (gi - m[r, j]) * c1
            m[r, j] = mi
            vi = v[r, j] + (gi * gi - v[r, j]) * c2
            v[r, j] = vi
            if amsgrad:
                h = vhat[r, j]
                if vi > h or vi != vi:  # noqa: PLR0124  (np.maximum's NaN rule)
                    h = vi
                vhat[r, j] = h
                vi = h
            w[r, j] = w[r, j] - mi / (np.sqrt(vi) + eps) * alpha
    return -1


# -- kernels with the numpy kernels' signatures ------------------------------------
def _flat(var, grad, slots):
    """1-D views of value, gradient and slots, or None when unsupported."""
    w = var.value
    if (not isinstance(w, np.ndarray) or w.dtype.kind != "f" or w.dtype.itemsize < 4
            or not w.flags.c_contiguous or w.size < MIN_SIZE):
        return None
    g = np.asarray(grad)
    if g.shape != w.shape:
        return None
    g = np.ascontiguousarray(g, dtype=w.dtype).reshape(-1)
    flat = []
    for s in slots:
        kernels._check_slot(var, s)
        if s.shape != w.shape or s.dtype != w.dtype or not s.flags.c_contiguous:
            return None
        flat.append(s.reshape(-1))
    return w.reshape(-1), g, flat


def _spare(var, w):
    """The numpy kernels' output buffer (``_output_buffer``), C-contiguous."""
    new = kernels._output_buffer(np, var)
    # A spare handed in by set_update_target or kept from a non-contiguous
    # value would flatten to a copy, and the update would be lost.
    return new if new.flags.c_contiguous else np.empty(w.shape, w.dtype)


class _Checked:
    """What one node's first fused update checked and derived, reused while
    its inputs stay the same kind: the value's and gradient's dtype and shape
    (C-contiguous numpy arrays, checked per step: the value alternates
    between two buffers), the slot arrays (by identity: assigning, loading
    or restoring a slot Variable replaces its array, and the next step checks
    again), their flat views as the loop's arguments, and the constants."""

    __slots__ = ("dtype", "shape", "slots", "slot_args", "tail", "consts",
                 "parallel")

    def __init__(self, w, slots, flat, picks, consts, use_wd):
        self.dtype, self.shape, self.slots = w.dtype, w.shape, tuple(slots)
        # An unused slot argument gets slot 0: the loop never reads it, and
        # numba sees one array type (no second compilation).
        self.slot_args = tuple(flat[0] if i is None else flat[i] for i in picks)
        self.consts = consts
        self.tail = None if use_wd else consts + (w.dtype.type(0.0), False)
        self.parallel = w.size >= PARALLEL_MIN


def _make(numpy_kernel, pyfunc, picks_of, consts_of):
    """A kernel factory for the fusion registry (None on GPU: numpy/cupy stays).

    ``pyfunc(w, g, *slot_args, out, scalar, *consts, wd, use_wd)``: its slot
    arguments are ``picks_of(attrs)`` (the slot's index, None for an argument
    the attributes leave unused) and its constants ``consts_of(dtype, attrs)``.
    """

    def factory(xp, attrs):
        if xp is not np or jit.numba_module() is None:
            return None
        fns = jit.kernels(inspect.getsource(pyfunc), pyfunc.__name__)
        serial = fns[0]
        decay = attrs.get("decay", False)
        picks = tuple(picks_of(attrs))
        seen = [None]  # the _Checked of the latest fused update

        def checked_run(var, grad, scalar, wd, slots):
            views = _flat(var, grad, slots)
            if views is None:
                return None
            w, g, flat = views
            dt = w.dtype.type
            c = seen[0] = _Checked(var.value, slots, flat, picks,
                                   consts_of(dt, attrs), wd is not None)
            new = _spare(var, var.value)
            tail = c.tail if wd is None else c.consts + (dt(wd), True)
            size = w.size if c.parallel else 0  # 0: jit.launch runs serial
            jit.launch(fns, size, w, g, *c.slot_args, new.reshape(-1), dt(scalar),
                       *tail)
            return kernels._publish(var, new)

        def kernel(var, grad, scalar, *rest):
            if decay:
                wd, slots = rest[0], rest[1:]
            else:
                wd, slots = None, rest
            w = var.value
            c = seen[0]
            # Per step only what can change between steps is checked: the
            # buffers (double-buffered value, the plan's gradient) and the
            # identity of the slot arrays.
            if (c is not None and type(w) is np.ndarray
                    and type(grad) is np.ndarray and w.dtype is c.dtype
                    and grad.dtype is c.dtype and w.shape == c.shape
                    and grad.shape == c.shape and w.flags.c_contiguous
                    and grad.flags.c_contiguous and not c.parallel):
                for s, k in zip(slots, c.slots):
                    if s is not k:
                        break
                else:
                    new = _spare(var, w)
                    tail = c.tail if wd is None else c.consts + (
                        c.dtype.type(wd), True)
                    serial(w.ravel(), grad.ravel(), *c.slot_args,
                           new.ravel(), c.dtype.type(scalar), *tail)
                    return kernels._publish(var, new)
            out = checked_run(var, grad, scalar, wd, slots)
            if out is None:
                seen[0] = None
                return numpy_kernel(np, var, grad, scalar, *rest, **attrs)
            return out

        return kernel

    return factory


def _no_slots(attrs):
    return ()


def _no_consts(dt, attrs):
    return ()


def _one_slot(attrs):
    return (0,)


def _momentum_consts(dt, attrs):
    return dt(attrs["momentum"]), attrs["nesterov"]


def _adam_slots(attrs):
    return 0, 1, (2 if attrs["amsgrad"] else None)


def _adam_consts(dt, attrs):
    return (dt(1.0 - attrs["beta_1"]), dt(1.0 - attrs["beta_2"]),
            dt(attrs["epsilon"]), attrs["amsgrad"])


def _rmsprop_slots(attrs):
    return (0, 1 if attrs["momentum"] > 0 else None,
            -1 if attrs["centered"] else None)


def _rmsprop_consts(dt, attrs):
    rho = attrs["rho"]
    return (dt(rho), dt(1.0 - rho), dt(attrs["momentum"]), dt(attrs["epsilon"]),
            attrs["centered"], attrs["momentum"] > 0)


def _adagrad_consts(dt, attrs):
    return (dt(attrs["epsilon"]),)


def _sparse_adam(xp, attrs):
    """The fused ``SparseApply`` of Adam (lazy rows, as ``optimizers.sparse``):
    one pass over the ids and one per distinct id, instead of numpy's unique,
    sort, gather, dense kernel and scatter (~10 passes over the touched rows)."""
    dense = attrs.get("dense_attrs", {})
    if (xp is not np or attrs.get("dense_op") != "ApplyAdam" or dense.get("decay")
            or jit.numba_module() is None):
        return None
    fn = jit.kernels(inspect.getsource(sparse_adam_update), "sparse_adam_update")
    numpy_kernel = get_op("SparseApply").kernel

    def kernel(var, values, ids, alpha, *slots):
        table = var.value
        ok = (isinstance(table, np.ndarray) and table.dtype.kind == "f"
              and table.dtype.itemsize >= 4 and table.ndim >= 1
              and table.flags.c_contiguous and table.flags.writeable
              and var.constraint is None and values.dtype == table.dtype
              and all(s.shape == table.shape and s.dtype == table.dtype
                      and s.flags.c_contiguous for s in slots))
        if not ok:
            return numpy_kernel(np, var, values, ids, alpha, *slots, **attrs)
        for s in slots:
            kernels._check_slot(var, s)
        rows = table.shape[0]
        w = table.reshape(rows, -1)
        flat = np.asarray(ids).reshape(-1).astype(np.int64, copy=False)
        g = np.ascontiguousarray(values).reshape(flat.shape[0], w.shape[1])
        m, v = slots[0].reshape(w.shape), slots[1].reshape(w.shape)
        vhat = slots[2].reshape(w.shape) if dense["amsgrad"] else m
        dt = w.dtype.type
        size = g.size if g.size >= PARALLEL_MIN else 0
        bad = jit.launch(fn, size, w, g, flat, m, v, vhat, dt(alpha),
                         dt(1.0 - dense["beta_1"]), dt(1.0 - dense["beta_2"]),
                         dt(dense["epsilon"]), dense["amsgrad"])
        if bad >= 0:  # the numpy kernel raises its error for the bad id
            return numpy_kernel(np, var, values, ids, alpha, *slots, **attrs)
        return table

    return kernel


fusion.register_fused_kernel("SparseApply", _sparse_adam)
fusion.register_fused_kernel("ApplyGradientDescent", _make(
    kernels._apply_gradient_descent, sgd_update, _no_slots, _no_consts))
fusion.register_fused_kernel("ApplyMomentum", _make(
    kernels._apply_momentum, momentum_update, _one_slot, _momentum_consts))
fusion.register_fused_kernel("ApplyAdam", _make(
    kernels._apply_adam, adam_update, _adam_slots, _adam_consts))
fusion.register_fused_kernel("ApplyRMSProp", _make(
    kernels._apply_rmsprop, rmsprop_update, _rmsprop_slots, _rmsprop_consts))
fusion.register_fused_kernel("ApplyAdagrad", _make(
    kernels._apply_adagrad, adagrad_update, _one_slot, _adagrad_consts))
