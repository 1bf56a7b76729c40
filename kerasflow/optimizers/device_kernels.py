"""One CUDA kernel per variable for the optimizers' update on the GPU (cupy).

On cupy every array operation is a kernel launch with a few microseconds of
host work; Adam's update as ``kernels._apply_adam`` writes it (eleven ``out=``
operations) costs eleven launches per variable per step, and the launches, not
the arithmetic, bound a small model's step. Here the same update is ONE
elementwise kernel (cuDNN / PyTorch's ``fused=True`` Adam idea): it reads the
gradient, the value and both moments once and writes the moments and the new
value once.

Values: the arithmetic of ``kernels._apply_adam`` in its order
(``m += (1 - b1)(g - m)``, ``v += (1 - b2)(g^2 - v)``,
``new = w - alpha * m / (sqrt(v) + eps)``), so float64 results equal the
unfused path's to rounding (the compiler may contract a multiply-add).
Only the plain case runs here (no weight decay, no AMSGrad, one dtype for the
value, gradient and slots); the caller runs the unfused ops otherwise.
"""

from __future__ import annotations

__all__ = ["adam_update"]

_KERNEL = None


def _adam_kernel():
    global _KERNEL
    if _KERNEL is None:
        import cupy  # noqa: PLC0415  (only reached with cupy arrays)

        _KERNEL = cupy.ElementwiseKernel(
            "T g, T w, T alpha, T c1, T c2, T eps",
            "T m, T v, T out",
            """
            T mm = m + c1 * (g - m);
            T vv = v + c2 * (g * g - v);
            m = mm;
            v = vv;
            out = w - alpha * mm / (sqrt(vv) + eps);
            """,
            "kerasflow_adam_update")
    return _KERNEL


def adam_update(grad, w, alpha, m, v, new, beta_1, beta_2, epsilon):
    """Adam's step on cupy arrays in one launch; returns False (nothing done)
    unless every array is a cupy array of ``w``'s dtype, float32 or float64.

    Args:
        grad, w: gradient and current value, any shape (same shape).
        alpha: 0-d array, ``lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)``.
        m, v: the moment slots, updated in place.
        new: output buffer shaped like ``w`` (not ``w`` itself): receives the
            updated value.
        beta_1, beta_2, epsilon: floats.
    """
    dt, kind = w.dtype, type(w)
    if dt.name not in ("float32", "float64") or any(
            type(a) is not kind or a.dtype != dt for a in (grad, alpha, m, v, new)):
        return False
    _adam_kernel()(grad, w, alpha, dt.type(1.0 - beta_1), dt.type(1.0 - beta_2),
                   dt.type(epsilon), m, v, new)
    return True
