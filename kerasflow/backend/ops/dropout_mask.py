"""The dropout mask op: 0 or 1 / (1 - rate) per element, from one keyed hash.

``DropoutMask`` draws one 64-bit key per run from the node's generator (so
seeds, ``set_random_seed`` and the saved generator states of a compiled
``Function`` behave as for every random op), then derives each element's
32-bit value from its flat index ``i`` and the key's halves ``lo, hi`` by a
counter-based hash, ``h(h((i * 0x9E3779B9) ^ lo) + hi)`` in uint32
arithmetic, where ``h`` is the "lowbias32" integer hash (xorshift-multiply,
found by C. Wellons' hash-prospector; a bijection of uint32 with low
avalanche bias). The element is kept when its value is
``>= round(rate * 2**32)``. For one key the values are distinct over 2**32
consecutive indices. Counter-based draws need no sequential state
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), so
the fused CPU kernel (numba, registered with ``register_fused_kernel``) is one
vectorized, parallel pass (~1 ns per element on one core here, where
``Generator.uniform`` + compare + cast took ~10); the ``xp`` kernel computes
the same values with whole-array uint32 arithmetic (numpy or cupy). In a
compiled plan with fusion on, ``DropoutMask(x)`` followed by ``Mul(x, mask)``
runs as one ``DropoutApply`` pass writing both the mask and the product.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.ops.random import _next_seed, draw_key
from kerasflow.backend.registry import apply, register_op

__all__ = ["dropout_mask"]

_GOLDEN = 0x9E3779B9
_MIX1 = 0x7FEB352D
_MIX2 = 0x846CA68B
# Below this many elements the xp kernel runs (no compile; as fast).
MIN_SIZE = 4096

# np.uint32(...) around each step: numba widens integer arithmetic to 64 bits,
# and the hash needs uint32 wrap-around (it also lets LLVM vectorize).
_KERNEL = '''
def dropout_mask(out, lo, hi, threshold, scale):
    golden, m1, m2 = np.uint32(0x9E3779B9), np.uint32(0x7FEB352D), np.uint32(0x846CA68B)
    s15, s16 = np.uint32(15), np.uint32(16)
    for i in prange(out.shape[0]):
        z = np.uint32(np.uint32(i) * golden) ^ lo
        z = np.uint32((z ^ (z >> s16)) * m1)
        z = np.uint32((z ^ (z >> s15)) * m2)
        z = np.uint32((z ^ (z >> s16)) + hi)
        z = np.uint32((z ^ (z >> s16)) * m1)
        z = np.uint32((z ^ (z >> s15)) * m2)
        z = np.uint32(z ^ (z >> s16))
        out[i] = scale * np.float32(z >= threshold)
'''


# The mask and its product with x in one pass (the plan rewrite below).
_KERNEL_APPLY = _KERNEL.replace(
    "def dropout_mask(out, lo, hi, threshold, scale):",
    "def dropout_apply(x, out, y, lo, hi, threshold, scale):").replace(
    "        out[i] = scale * np.float32(z >= threshold)\n",
    "        m = scale * np.float32(z >= threshold)\n"
    "        out[i] = m\n"
    "        y[i] = x[i] * m\n")


def _threshold(rate):
    """The uint32 threshold: values below it are dropped."""
    return min(int(round(float(rate) * 2.0**32)), 2**32 - 1)


def _key_halves(rng):
    key = draw_key(rng)
    return key & 0xFFFFFFFF, key >> 32


def _hash_bits(xp, n, lo, hi):
    """The ``n`` uint32 values of the hash stream (the numba kernel's, in xp)."""
    u32 = xp.uint32

    def h(z):
        z = (z ^ (z >> u32(16))) * u32(_MIX1)
        z = (z ^ (z >> u32(15))) * u32(_MIX2)
        return z ^ (z >> u32(16))

    z = xp.arange(n, dtype=u32) * u32(_GOLDEN) ^ u32(lo)
    return h(h(z) + u32(hi))


def _infer(x, rate, seed):
    return x.shape, x.dtype


# The same hash as one CUDA kernel (cupy): one launch where the whole-array
# uint32 arithmetic of _hash_bits takes about twenty.
_CUDA_BODY = """
unsigned int z = ((unsigned int)i * 0x9E3779B9u) ^ lo;
z = (z ^ (z >> 16)) * 0x7FEB352Du;
z = (z ^ (z >> 15)) * 0x846CA68Bu;
z = (z ^ (z >> 16)) + hi;
z = (z ^ (z >> 16)) * 0x7FEB352Du;
z = (z ^ (z >> 15)) * 0x846CA68Bu;
z = z ^ (z >> 16);
out = z >= threshold ? scale : (T)0;
"""
_CUDA = []


def _device_mask(x, rate, lo, hi):
    if not _CUDA:
        import cupy  # noqa: PLC0415  (only reached with cupy arrays)

        _CUDA.append(cupy.ElementwiseKernel(
            "uint32 lo, uint32 hi, uint32 threshold, T scale", "T out", _CUDA_BODY,
            "kerasflow_dropout_mask"))
    out = type(x)(x.shape, x.dtype)  # cupy.ndarray(shape, dtype): uninitialized
    _CUDA[0](np.uint32(lo), np.uint32(hi), np.uint32(_threshold(rate)),
             x.dtype.type(1.0 / (1.0 - rate)), out)
    return out


@register_op("DropoutMask", _infer, random=True, differentiable=False)
def _dropout_mask(xp, x, rate, seed, rng):
    if xp is not np and x.dtype.kind == "f":
        return _device_mask(x, rate, *_key_halves(rng))
    bits = _hash_bits(xp, int(x.size), *_key_halves(rng))
    keep = bits >= xp.uint32(_threshold(rate))
    scale = x.dtype.type(1.0 / (1.0 - rate))
    return (keep * scale).astype(x.dtype, copy=False).reshape(x.shape)


def _fused_factory(xp, attrs, apply_to_x=False):
    if xp is not np or jit.numba_module() is None:
        return None
    rng, rate = attrs["rng"], attrs["rate"]
    threshold = np.uint32(_threshold(rate))

    def kernel(x):
        if (type(x) is not np.ndarray or x.size < MIN_SIZE
                or x.dtype not in (np.float32, np.float64)):
            op = _dropout_apply if apply_to_x else _dropout_mask
            return op(np, x, **attrs)
        lo, hi = _key_halves(rng)
        args = (np.uint32(lo), np.uint32(hi), threshold,
                x.dtype.type(1.0 / (1.0 - rate)))
        mask = np.empty(x.shape, x.dtype)
        if not apply_to_x:
            jit.launch(jit.kernels(_KERNEL, "dropout_mask"), x.size,
                       mask.reshape(-1), *args)
            return mask
        y = np.empty(x.shape, x.dtype)
        jit.launch(jit.kernels(_KERNEL_APPLY, "dropout_apply"), x.size,
                   np.ascontiguousarray(x).reshape(-1), mask.reshape(-1),
                   y.reshape(-1), *args)
        return y, mask

    return kernel


fusion.register_fused_kernel("DropoutMask", _fused_factory)


@register_op("DropoutApply", lambda x, rate, seed: [(x.shape, x.dtype)] * 2,
             random=True, differentiable=False)
def _dropout_apply(xp, x, rate, seed, rng):
    """(x * mask, mask) with DropoutMask's mask, op by op."""
    mask = _dropout_mask(xp, x, rate, seed, rng)
    return x * mask, mask


fusion.register_fused_kernel("DropoutApply", lambda xp, attrs: _fused_factory(
    xp, attrs, apply_to_x=True))


def rewrite(order, keep, xp):
    """``order`` with each DropoutMask(x) -> Mul(x, mask) pair as one
    DropoutApply node at the Mul's place (the mask stays an output: the
    gradient reads it)."""
    pos = {id(n): i for i, n in enumerate(order)}
    users = fusion.readers(order)
    replace, drop = {}, set()
    for node in order:
        if node.op != "DropoutMask":
            continue
        x, mask = node.inputs[0], node.outputs[0]
        # Identity tests: == on symbolic tensors builds an Equal op.
        muls = [u for u in users.get(mask, ()) if u.op == "Mul"
                and {id(t) for t in u.inputs} == {id(x), id(mask)}
                and u.outputs[0].shape == x.shape]
        if not muls or x.shape is None:
            continue
        mul = min(muls, key=lambda u: pos[id(u)])
        if any(pos[id(u)] < pos[id(mul)] for u in users[mask]):
            continue
        replace[id(mul)] = fusion.MergedNode(
            "DropoutApply", (x,), (mul.outputs[0], mask), dict(node.attrs), mul)
        drop.add(id(node))
    if not replace:
        return order
    return [replace.get(id(n), n) for n in order if id(n) not in drop]


fusion.register_rewrite(rewrite)


def dropout_mask(x, rate, seed=None):
    """Inverted-dropout mask with the runtime shape of ``x``.

    Args:
        x: float32/float64 tensor or array; only its shape and dtype are read.
        rate: drop probability in (0, 1).
        seed: op seed; None takes the next one from ``set_random_seed``'s
            sequence.

    Returns:
        x's shape and dtype: ``1 / (1 - rate)`` where kept, 0 where dropped
        (each element kept with probability ``1 - rate``, to 2**-32).

    Raises:
        ValueError: rate outside (0, 1).
    """
    if not 0.0 < float(rate) < 1.0:
        raise ValueError(f"dropout_mask expects a rate in (0, 1). Received: "
                         f"rate={rate}.")
    return apply("DropoutMask", x, rate=float(rate), seed=_next_seed(seed))
