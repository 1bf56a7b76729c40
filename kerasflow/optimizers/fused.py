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
"""

from __future__ import annotations

import functools
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


def sparse_adam_update(w, g, ids, order, m, v, vhat, alpha, c1, c2, eps,
                       amsgrad):
    # Returns -1, or the position of an id outside [0, rows) (nothing written).
    # ``order`` sorts the ids (numpy's stable argsort: numba's is 5x slower),
    # then one iteration per distinct id: its
    # duplicate gradient rows summed in that order (numpy's add.reduceat
    # order), then adam_update's arithmetic on that row of the table and its
    # slots, in place.
    rows, d = w.shape
    for i in range(ids.size):
        if ids[i] < 0 or ids[i] >= rows:
            return i
    starts = np.empty(ids.size + 1, np.int64)
    k = 0
    for i in range(ids.size):
        if i == 0 or ids[order[i]] != ids[order[i - 1]]:
            starts[k] = i
            k += 1
    starts[k] = ids.size
    # Narrow rows sum into one buffer (an allocation per id would cost more
    # than the row's work); wide rows into their own.
    narrow = d < 16
    sums = np.empty((k if narrow else 0, d), w.dtype)
    for s in prange(k):
        lo = starts[s]
        hi = starts[s + 1]
        first = order[lo]
        r = ids[first]
        acc = sums[s] if narrow else np.empty(d, w.dtype)
        for j in range(d):
            acc[j] = g[first, j]
        for q in range(lo + 1, hi):
            kk = order[q]
            for j in range(d):
                acc[j] += g[kk, j]
        for j in range(d):
            gi = acc[j]
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


def _run(fn, var, grad, slots, wd, body):
    """Shared frame: flatten, get the spare buffer, run ``body``, publish."""
    views = _flat(var, grad, slots)
    if views is None:
        return None
    w, g, flat = views
    new = kernels._output_buffer(np, var)
    dt = w.dtype.type
    use_wd = wd is not None
    size = w.size if w.size >= PARALLEL_MIN else 0  # 0: jit.launch runs serial
    body(functools.partial(jit.launch, fn, size), w, g, flat, new.reshape(-1), dt,
         dt(wd if use_wd else 0.0), use_wd)
    return kernels._publish(var, new)


def _make(numpy_kernel, pyfunc, body):
    """A kernel factory for the fusion registry (None on GPU: numpy/cupy stays)."""

    def factory(xp, attrs):
        if xp is not np or jit.numba_module() is None:
            return None
        fn = jit.kernels(inspect.getsource(pyfunc), pyfunc.__name__)
        decay = attrs.get("decay", False)

        def kernel(var, grad, scalar, *rest):
            wd, slots = kernels._split_decay(rest, decay)
            out = _run(fn, var, grad, slots, wd,
                       functools.partial(body, scalar=scalar, attrs=attrs))
            if out is None:
                return numpy_kernel(np, var, grad, scalar, *rest, **attrs)
            return out

        return kernel

    return factory


def _sgd_body(fn, w, g, s, new, dt, wd, use_wd, scalar, attrs):
    fn(w, g, new, dt(scalar), wd, use_wd)


def _momentum_body(fn, w, g, s, new, dt, wd, use_wd, scalar, attrs):
    fn(w, g, s[0], new, dt(scalar), dt(attrs["momentum"]), attrs["nesterov"], wd,
       use_wd)


def _adam_body(fn, w, g, s, new, dt, wd, use_wd, scalar, attrs):
    vhat = s[2] if attrs["amsgrad"] else new
    fn(w, g, s[0], s[1], vhat, new, dt(scalar), dt(1.0 - attrs["beta_1"]),
       dt(1.0 - attrs["beta_2"]), dt(attrs["epsilon"]), attrs["amsgrad"], wd,
       use_wd)


def _rmsprop_body(fn, w, g, s, new, dt, wd, use_wd, scalar, attrs):
    use_mom = attrs["momentum"] > 0
    mom = s[1] if use_mom else new
    mg = s[-1] if attrs["centered"] else new
    rho = attrs["rho"]
    fn(w, g, s[0], mom, mg, new, dt(scalar), dt(rho), dt(1.0 - rho),
       dt(attrs["momentum"]), dt(attrs["epsilon"]), attrs["centered"], use_mom, wd,
       use_wd)


def _adagrad_body(fn, w, g, s, new, dt, wd, use_wd, scalar, attrs):
    fn(w, g, s[0], new, dt(scalar), dt(attrs["epsilon"]), wd, use_wd)


def _sparse_adam(xp, attrs):
    """The fused ``SparseApply`` of Adam (lazy rows, as ``optimizers.sparse``):
    one pass per distinct id instead of numpy's unique, gather, dense kernel
    and scatter (~10 passes over the touched rows)."""
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
        order = np.argsort(flat, kind="stable")
        bad = jit.launch(fn, size, w, g, flat, order, m, v, vhat, dt(alpha),
                         dt(1.0 - dense["beta_1"]), dt(1.0 - dense["beta_2"]),
                         dt(dense["epsilon"]), dense["amsgrad"])
        if bad >= 0:  # the numpy kernel raises its error for the bad id
            return numpy_kernel(np, var, values, ids, alpha, *slots, **attrs)
        return table

    return kernel


fusion.register_fused_kernel("SparseApply", _sparse_adam)
fusion.register_fused_kernel("ApplyGradientDescent", _make(
    kernels._apply_gradient_descent, sgd_update, _sgd_body))
fusion.register_fused_kernel("ApplyMomentum", _make(
    kernels._apply_momentum, momentum_update, _momentum_body))
fusion.register_fused_kernel("ApplyAdam", _make(
    kernels._apply_adam, adam_update, _adam_body))
fusion.register_fused_kernel("ApplyRMSProp", _make(
    kernels._apply_rmsprop, rmsprop_update, _rmsprop_body))
fusion.register_fused_kernel("ApplyAdagrad", _make(
    kernels._apply_adagrad, adagrad_update, _adagrad_body))
