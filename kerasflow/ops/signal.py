"""Fourier transforms and related ops of Keras 3's ``keras.ops``: ``fft``,
``fft2``, ``ifft2``, ``rfft``, ``irfft``, ``stft``, ``istft``,
``extract_sequences``, ``cdist``, ``view_as_real``/``view_as_complex``,
``polar`` and ``rearrange`` (einops' pattern syntax).

Complex values travel as Keras does, as (real, imaginary) pairs of float
tensors. The transforms are products with DFT matrices (cosines and sines),
so they run in graphs and have gradients (O(n^2) per axis: meant for the
modest lengths of audio frames and tests, not for long signals).
Source: Keras 3's ops (numpy backend: ``numpy.fft``, ``scipy.signal``).
"""

from __future__ import annotations

import re

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.ops.npcall import host, require_eager
from kerasflow.ops.common import dtype_of, rank, tensor, to_float

__all__ = ["cdist", "extract_sequences", "fft", "fft2", "ifft2", "irfft", "istft",
           "polar", "rearrange", "rfft", "stft", "view_as_complex", "view_as_real"]


def _pair(x, name):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"Input `x` should be a tuple of two tensors - real and "
                         f"imaginary. Received: x={x}")
    re_, im = tensor(x[0]), tensor(x[1])
    if tuple(re_.shape) != tuple(im.shape):
        raise ValueError(f"{name}: the real and imaginary parts should have the same "
                         f"shape. Received: {tuple(re_.shape)}, {tuple(im.shape)}")
    if dtype_of(re_).kind != "f" or dtype_of(im).kind != "f":
        raise ValueError(f"At least one tensor in input `x` is not of type float. "
                         f"Received: dtypes {dtype_of(re_)}, {dtype_of(im)}.")
    return re_, im


def _dft(n_in, n_out, dtype, sign=-1.0):
    """(n_in, n_out) cos and sign * sin of 2 pi j k / n_in."""
    ang = 2.0 * np.pi * np.outer(np.arange(n_in), np.arange(n_out)) / n_in
    return np.cos(ang).astype(dtype), (sign * np.sin(ang)).astype(dtype)


def _last(x, m):
    return K.tensordot(x, m, axes=1)


def _fft_last(re_, im, inverse=False):
    n = re_.shape[-1]
    c, s = _dft(n, n, dtype_of(re_), 1.0 if inverse else -1.0)
    out_re = _last(re_, c) - _last(im, s)
    out_im = _last(im, c) + _last(re_, s)
    if inverse:
        out_re, out_im = out_re / float(n), out_im / float(n)
    return out_re, out_im


def _swap_last(x):
    n = rank(x)
    return K.transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def fft(x):
    """The DFT along the last axis of ``x = (real, imag)``; returns (real,
    imag). Differentiable."""
    return _fft_last(*_pair(x, "fft"))


def fft2(x):
    """The 2-D DFT over the last two axes of ``x = (real, imag)``."""
    re_, im = _fft_last(*_pair(x, "fft2"))
    re_, im = _fft_last(_swap_last(re_), _swap_last(im))
    return _swap_last(re_), _swap_last(im)


def ifft2(x):
    """The inverse 2-D DFT over the last two axes of ``x = (real, imag)``."""
    re_, im = _fft_last(*_pair(x, "ifft2"), inverse=True)
    re_, im = _fft_last(_swap_last(re_), _swap_last(im), inverse=True)
    return _swap_last(re_), _swap_last(im)


def _fit(x, n):
    """``x`` cut or zero-padded to ``n`` along the last axis."""
    m = x.shape[-1]
    if m > n:
        return x[..., :n]
    if m < n:
        return K.pad(x, [[0, 0]] * (rank(x) - 1) + [[0, n - m]])
    return x


def rfft(x, fft_length=None):
    """The DFT of real ``x`` along its last axis, ``fft_length // 2 + 1``
    frequencies (input cut or zero-padded to ``fft_length``); (real, imag) in
    x's dtype."""
    x = to_float(x)
    n = x.shape[-1] if fft_length is None else int(fft_length)
    c, s = _dft(n, n // 2 + 1, dtype_of(x))
    x = _fit(x, n)
    return _last(x, c), _last(x, s)  # s holds -sin


def irfft(x, fft_length=None):
    """The inverse of ``rfft``: ``fft_length`` (default ``2 * (m - 1)``) real
    samples from ``m`` non-negative frequencies ``x = (real, imag)``."""
    re_, im = _pair(x, "irfft")
    m = re_.shape[-1]
    n = 2 * (m - 1) if fft_length is None else int(fft_length)
    k = n // 2 + 1
    re_, im = _fit(re_, k), _fit(im, k)
    w = np.full(k, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    ang = 2.0 * np.pi * np.outer(np.arange(k), np.arange(n)) / n
    dt = dtype_of(re_)
    c = (w[:, None] * np.cos(ang) / n).astype(dt)
    s = (w[:, None] * np.sin(ang) / n).astype(dt)
    return _last(re_, c) - _last(im, s)


def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of ``sequence_length`` every ``sequence_stride`` samples along
    the last axis: (..., num_frames, sequence_length). A gather:
    differentiable."""
    x = tensor(x)
    n, length, stride = x.shape[-1], int(sequence_length), int(sequence_stride)
    frames = (n - (length - stride)) // stride
    idx = (np.arange(frames)[:, None] * stride + np.arange(length)).astype("int64")
    return K.gather(x, idx, axis=rank(x) - 1)


def _window(window, length, dtype):
    if window is None:
        return np.ones(length, dtype)
    if isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError(f'If a string is passed to `window`, it must be one of '
                             f'`"hann"`, `"hamming"`. Received: window={window}')
        a = 0.5 if window == "hann" else 0.54
        # Periodic windows, as scipy.signal.get_window.
        return (a - (1.0 - a) * np.cos(2.0 * np.pi * np.arange(length) / length)
                ).astype(dtype)
    win = host(K.to_numpy(window)).astype(dtype)
    if win.shape != (length,):
        raise ValueError(f"The shape of `window` must be equal to [sequence_length]."
                         f"Received: window shape={win.shape}")
    return win


def _padded_window(window, sequence_length, fft_length, dtype):
    win = _window(window, sequence_length, dtype)
    lo = (fft_length - sequence_length) // 2
    return np.pad(win, (lo, fft_length - sequence_length - lo))


def stft(x, sequence_length, sequence_stride, fft_length, window="hann",
         center=True):
    """Short-time Fourier transform of real ``x`` along its last axis:
    windowed frames (reflect-padded by ``fft_length // 2`` when ``center``)
    through ``rfft``; (real, imag) of shape (..., frames, fft_length // 2 + 1).

    Raises:
        TypeError: a non-float32/64 input. ValueError: ``fft_length <
            sequence_length`` or a bad window.
    """
    x = tensor(x)
    if dtype_of(x).name not in ("float32", "float64"):
        raise TypeError(f"Invalid input type. Expected `float32` or `float64`. "
                        f"Received: input type={dtype_of(x).name}")
    if fft_length < sequence_length:
        raise ValueError(f"`fft_length` must equal or larger than `sequence_length`. "
                         f"Received: sequence_length={sequence_length}, "
                         f"fft_length={fft_length}")
    if center:
        p, n = fft_length // 2, x.shape[-1]
        idx = np.abs(np.arange(-p, n + p))
        idx = np.where(idx > n - 1, 2 * (n - 1) - idx, idx)  # reflect
        x = K.gather(x, idx.astype("int64"), axis=rank(x) - 1)
    win = _padded_window(window, sequence_length, fft_length, dtype_of(x))
    frames = K.multiply(extract_sequences(x, fft_length, sequence_stride), win)
    return rfft(frames, fft_length)


def istft(x, sequence_length, sequence_stride, fft_length, length=None,
          window="hann", center=True):
    """Inverse of ``stft``: frames from ``irfft``, windowed and overlap-added,
    divided by the overlap-added squared window (``scipy.signal.istft``)."""
    re_, im = _pair(x, "istft")
    dt = dtype_of(re_)
    frames = irfft((re_, im), fft_length)  # (..., nframes, fft_length)
    win = _padded_window(window, sequence_length, fft_length, dt)
    nframes, stride = re_.shape[-2], int(sequence_stride)
    total = fft_length + stride * (nframes - 1)
    # Overlap-add as one matrix: frame f's sample j lands at f * stride + j.
    ola = np.zeros((nframes * fft_length, total), dt)
    for f in range(nframes):
        ola[f * fft_length + np.arange(fft_length), f * stride + np.arange(
            fft_length)] = 1.0
    norm = np.tile(win ** 2, nframes) @ ola
    flat = K.reshape(frames * win, tuple(-1 if d is None else d for d in
                                        frames.shape[:-2]) + (nframes * fft_length,))
    out = _last(flat, ola) / np.where(norm > 1e-10, norm, 1.0).astype(dt)
    if window is None:  # Keras divides by the stride, not by sum(window)
        out = out * (float(fft_length) / stride)
    start = fft_length // 2 if center else 0
    if length is not None:
        end = start + int(length)
    elif center:
        end = total - fft_length // 2
    else:
        end = total
    return out[..., start:end]


def cdist(x, y):
    """Euclidean distances between the rows of ``x`` (..., m, d) and ``y``
    (..., n, d): (..., m, n)."""
    x, y = tensor(x), tensor(y)
    if rank(x) < 2 or rank(y) < 2:
        raise ValueError("`cdist` inputs must have rank >= 2")
    if x.shape[-1] != y.shape[-1]:
        raise ValueError("Last dimension of inputs to `cdist` must match")
    diff = K.expand_dims(x, -2) - K.expand_dims(y, -3)
    return K.sqrt(K.sum(diff * diff, axis=-1))


def view_as_real(x):
    """A complex array as real pairs on a new last axis (eager)."""
    require_eager("view_as_real", x)
    x = host(x)
    return np.stack([x.real, x.imag], axis=-1)


def view_as_complex(x):
    """Real pairs on the last axis (size 2) as a complex array (eager).

    Raises:
        ValueError: a last axis of size other than 2.
    """
    require_eager("view_as_complex", x)
    x = host(x)
    if x.shape[-1] != 2:
        raise ValueError(f"view_as_complex needs a last axis of size 2. Received: "
                         f"x.shape={x.shape}")
    return x[..., 0] + 1j * x[..., 1]


def polar(abs_, angle):
    """The complex number ``abs_ * (cos(angle) + i sin(angle))`` (eager: a
    complex array)."""
    require_eager("polar", abs_, angle)
    a, t = host(abs_), host(angle)
    return a * np.cos(t) + 1j * (a * np.sin(t))


def _groups(side):
    """einops groups of one side of a pattern: "b (h w) c" -> [[b], [h, w], [c]]."""
    return [g.strip("()").split() for g in re.findall(r"\w+|\(.*?\)", side)]


def rearrange(tensor_, pattern, **axes_lengths):
    """einops' ``rearrange``: axes split (``(h h1)``), permuted and merged
    by ``pattern`` ("b (h h1) w c -> b h (w h1) c", h1=2), as reshape and
    transpose. Differentiable."""
    x = tensor(tensor_)
    src, dst = re.split(r"\s*->\s*", pattern)
    ins, outs = _groups(src), _groups(dst)
    sizes = dict(axes_lengths)
    for group, dim in zip(ins, x.shape):
        unknown = [a for a in group if a not in sizes]
        known = int(np.prod([sizes[a] for a in group if a in sizes]))
        if unknown:
            sizes[unknown[0]] = None if dim is None else dim // known
    flat_in = [a for g in ins for a in g]
    y = K.reshape(x, tuple(-1 if sizes[a] is None else sizes[a] for a in flat_in))
    flat_out = [a for g in outs for a in g]
    y = K.transpose(y, tuple(flat_in.index(a) for a in flat_out))
    shape = []
    for g in outs:
        dims = [sizes[a] for a in g]
        shape.append(-1 if None in dims else int(np.prod(dims)))
    return K.reshape(y, tuple(shape))
