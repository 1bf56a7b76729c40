"""One generic op for numpy functions that carry no gradient (bitwise ops,
``isclose``, ``searchsorted``, ``argpartition``, window functions...): the
graph keeps the function's name and keyword arguments as plain attributes, so
it still pickles and runs on numpy or cupy.

Shapes are inferred by running the function on zero-filled probes of the
static input shapes (unknown dimensions probed at two sizes: the output
dimensions that differ are unknown).
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.graph import is_symbolic
from kerasflow.backend.registry import apply, register_op, register_op_family

__all__ = ["host", "numpy_call", "register_kernel", "require_eager"]

# Kernels of NumpyCall written here ("kf.<name>"), each fn(xp, *arrays, **kw).
_KERNELS: dict = {}


def register_kernel(name):
    """Decorator: ``fn(xp, *arrays, **kwargs)`` callable by ``numpy_call`` as
    ``"kf.<name>"`` (for numpy code that is more than one numpy function)."""
    def wrap(fn):
        _KERNELS[name] = fn
        return fn
    return wrap


def host(x):
    """``x`` as a numpy array (a cupy array copied to the host)."""
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else \
        np.asarray(x)


def _on_host(xp, fn):
    """``fn`` (a numpy function) run on host copies, results moved to ``xp``."""
    def call(*arrays, **kwargs):
        out = fn(*[host(a) for a in arrays], **kwargs)
        return tuple(xp.asarray(o) for o in out) if isinstance(out, tuple) else \
            xp.asarray(out)
    return call


def _resolve(xp, fn):
    import functools  # noqa: PLC0415

    if fn.startswith("kf."):  # numpy code: on the host for cupy
        kernel = functools.partial(_KERNELS[fn[3:]], np)
        return kernel if xp is np else _on_host(xp, kernel)
    out, ref = xp, np
    for part in fn.split("."):
        out, ref = getattr(out, part, None), getattr(ref, part)
    # A function cupy lacks (linalg.eig, nanquantile, ...) runs on the host.
    return out if out is not None else _on_host(xp, ref)


def _probe(specs, fn, kwargs, size):
    arrays = [np.zeros(tuple(size if d is None else d for d in s.shape), s.dtype)
              for s in specs]
    with np.errstate(all="ignore"):
        out = _resolve(np, fn)(*arrays, **dict(kwargs))
    return out if isinstance(out, tuple) else (out,)


def _infer(*specs, fn, kwargs=(), n=1):
    if any(s.shape is None for s in specs):
        return [(None, None)] * n if n > 1 else (None, None)
    try:
        a, b = _probe(specs, fn, kwargs, 2), _probe(specs, fn, kwargs, 3)
    except (ValueError, TypeError, np.linalg.LinAlgError) as e:
        raise ValueError(f"{fn} cannot take inputs of "
                         f"{[(s.shape, s.dtype.name) for s in specs]}: {e}") from None
    specs_out = []
    for u, v in zip(a, b):
        u, v = np.asarray(u), np.asarray(v)
        shape = tuple(d if d == e else None for d, e in zip(u.shape, v.shape))
        specs_out.append((shape, u.dtype))
    return specs_out if n > 1 else specs_out[0]


def _kernel(xp, *arrays, fn, kwargs=(), n=1):
    out = _resolve(xp, fn)(*arrays, **dict(kwargs))
    return tuple(xp.asarray(o) for o in out) if n > 1 else xp.asarray(out)


register_op("NumpyCall", _infer, differentiable=False)(_kernel)
_MULTI: set[str] = set()


def _register(n):
    name = f"NumpyCall{n}"
    if name not in _MULTI:
        _MULTI.add(name)
        register_op(name, _infer, num_outputs=n, differentiable=False)(_kernel)
    return name


register_op_family("NumpyCall", _register)


def _plain(v):
    if isinstance(v, (list, tuple)):
        return tuple(_plain(e) for e in v)
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.dtype):
        return v.name
    return v


def numpy_call(fn, *arrays, num_outputs=1, **kwargs):
    """``numpy.<fn>(*arrays, **kwargs)`` as an op without gradient: run now on
    arrays, a graph node on symbolic tensors.

    Args:
        fn: the function's name under numpy ("bitwise_and", "linalg.qr").
        arrays: the tensor arguments (positional); ``kwargs`` plain values
            (numbers, strings, tuples).
        num_outputs: how many arrays the function returns.

    Returns:
        A tensor (a tuple of them for ``num_outputs > 1``).
    """
    kw = tuple(sorted((k, _plain(v)) for k, v in kwargs.items()))
    name = "NumpyCall" if num_outputs == 1 else _register(num_outputs)
    return apply(name, *arrays, fn=fn, kwargs=kw, n=num_outputs)


def require_eager(name, *tensors):
    """Raises for ops whose output shape depends on the values.

    Raises:
        ValueError: a symbolic tensor among ``tensors``, naming ``name``.
    """
    for t in tensors:
        if is_symbolic(t):
            raise ValueError(
                f"`{name}` returns a shape that depends on the values of its "
                f"input, so it runs eagerly only (on arrays), not on symbolic "
                f"tensors. Received: {t!r}.")
