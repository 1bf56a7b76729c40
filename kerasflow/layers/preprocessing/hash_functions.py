"""The two string hashes behind Keras' ``Hashing`` and the lookup layers'
out-of-vocabulary buckets: FarmHash's ``Fingerprint64`` (TF's
``tf.strings.to_hash_bucket_fast``) and keyed SipHash-2-4 (TF's
``to_hash_bucket_strong``), in pure Python on unsigned 64-bit integers.

Sources: Google's FarmHash (``farmhashna::Hash64``, which ``Fingerprint64``
is; github.com/google/farmhash) and Aumasson & Bernstein, "SipHash: a fast
short-input PRF" (INDOCRYPT 2012), as in Google's highwayhash ``SipHash``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fingerprint64", "siphash64", "hash_bucket", "as_hash_strings"]

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 4], "little")


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M
        b = _fetch64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _len16((n + (a << 3)) & _M, _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _len17to32(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    return _len16((_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M,
                  (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)


def _len33to64(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _len16(y, (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)
    e = (_fetch64(s, 16) * mul) & _M
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M
    h = ((z + _fetch64(s, n - 24)) * mul) & _M
    return _len16((_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M,
                  (e + _rot((f + a) & _M, 18) + g) & _M, mul)


def _weak32(s: bytes, i: int, a: int, b: int):
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def fingerprint64(s: bytes) -> int:
    """FarmHash ``Fingerprint64`` of ``s`` as an unsigned 64-bit int."""
    n = len(s)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v, w = (0, 0), (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M, 37) * _K1) & _M
        y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M, 42) * _K1) & _M
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _M
        z = (_rot((z + w[0]) & _M, 33) * _K1) & _M
        v = _weak32(s, i, (v[1] * _K1) & _M, (x + w[0]) & _M)
        w = _weak32(s, i + 32, (z + w[1]) & _M, (y + _fetch64(s, i + 16)) & _M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _M
    v0 = (v[0] + w0) & _M
    w0 = (w0 + v0) & _M
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w[1] * 9) & _M
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _M
    z = (_rot((z + w[0]) & _M, 33) * mul) & _M
    v = _weak32(s, i, (v[1] * mul) & _M, (x + w[0]) & _M)
    w = _weak32(s, i + 32, (z + w[1]) & _M, (y + _fetch64(s, i + 16)) & _M)
    z, x = x, z
    return _len16((_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M,
                  (_len16(v[1], w[1], mul) + x) & _M, mul)


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M
    v1 = _rot_l(v1, 13) ^ v0
    v0 = _rot_l(v0, 32)
    v2 = (v2 + v3) & _M
    v3 = _rot_l(v3, 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rot_l(v3, 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rot_l(v1, 17) ^ v2
    v2 = _rot_l(v2, 32)
    return v0, v1, v2, v3


def _rot_l(v: int, b: int) -> int:
    return ((v << b) | (v >> (64 - b))) & _M


def siphash64(key, s: bytes) -> int:
    """SipHash-2-4 of ``s`` under the 128-bit ``key`` = (k0, k1) uint64s."""
    k0, k1 = int(key[0]) & _M, int(key[1]) & _M
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _fetch64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
        v0 ^= m
    m = int.from_bytes(s[full:], "little") | ((n & 0xFF) << 56)
    v3 ^= m
    v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def as_hash_strings(values: np.ndarray) -> np.ndarray:
    """What TF hashes for each value: UTF-8 bytes of strings, the decimal text
    of integers (``tf.as_string``), floats truncated to int64 first (Keras)."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        values = values.astype(np.int64)
    if values.dtype.kind in "iub":
        return np.vectorize(lambda v: str(int(v)).encode(), otypes=[object])(values)
    return np.vectorize(lambda v: v if isinstance(v, bytes) else str(v).encode(),
                        otypes=[object])(values)


def hash_bucket(values, num_buckets: int, key=None) -> np.ndarray:
    """int64 ``hash(value) % num_buckets`` per element: ``fingerprint64``
    without a key, ``siphash64(key)`` with one; each distinct value hashed
    once."""
    strings = as_hash_strings(values)
    uniq, inverse = np.unique(strings.reshape(-1), return_inverse=True)
    fn = fingerprint64 if key is None else (lambda b: siphash64(key, b))
    buckets = np.array([fn(b) % num_buckets for b in uniq], dtype=np.int64)
    return buckets[inverse].reshape(strings.shape)
