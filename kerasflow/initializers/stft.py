"""The ``STFT`` initializer (Keras 3's ``keras.initializers.STFT``): a conv
kernel whose filters are the windowed real or imaginary parts of the discrete
Fourier basis, so a strided ``Conv1D`` computes a short-time Fourier transform.
"""

from __future__ import annotations

import numpy as np

from kerasflow.initializers.base import Initializer, _float_dtype

__all__ = ["STFT", "window"]

# Windows numpy computes itself (symmetric, of length n); others need scipy.
_NUMPY_WINDOWS = {"hann": np.hanning, "hanning": np.hanning,
                  "hamming": np.hamming, "blackman": np.blackman,
                  "bartlett": np.bartlett, "boxcar": np.ones, "ones": np.ones,
                  "rect": np.ones, "rectangular": np.ones}


def window(name: str, length: int, periodic: bool = False) -> np.ndarray:
    """A window function of ``length`` samples, float64, as
    ``scipy.signal.get_window(name, length, fftbins=periodic)``.

    Periodic windows (for spectral analysis) are the symmetric window of
    ``length + 1`` samples without its last one.

    Raises:
        ImportError: a window other than hann, hamming, blackman, bartlett or
            boxcar without scipy installed.
        ValueError: an unknown window name (from scipy).
    """
    if name in _NUMPY_WINDOWS:
        fn = _NUMPY_WINDOWS[name]
        return fn(length + 1)[:-1] if periodic else fn(length)
    try:
        import scipy.signal  # noqa: PLC0415
    except ImportError as e:
        raise ImportError(f"The '{name}' window needs scipy (numpy provides "
                          f"{sorted(_NUMPY_WINDOWS)}). Received: window={name!r}."
                          ) from e
    return np.asarray(scipy.signal.get_window(name, length, periodic), np.float64)


class STFT(Initializer):
    """Kernel of shape (frame_length, 1, fft_length // 2 + 1) for an STFT as a
    convolution (Keras 3's ``STFT``/``STFTInitializer``).

    Entry ``[t, 0, f]`` is ``cos`` (side "real") or ``sin`` (side "imag") of
    ``-2 pi t f / F`` with ``F = 2 (bins - 1)``, times ``window[t]`` divided by
    the window's scaling.

    Args:
        side: "real" or "imag".
        window: a window name ("hann", "hamming", ..., scipy's names), an
            array of frame_length values, or None for no window.
        scaling: "density" (divide by the window's L2 norm), "spectrum" (by
            its L1 norm) or None.
        periodic: periodic (True) or symmetric (False) named windows.

    Raises:
        ValueError: another side or scaling; (on call) a window array whose
            length is not frame_length.

    Example:
        >>> STFT("real", "hann")((16, 1, 9)).shape
        (16, 1, 9)
    """

    def __init__(self, side="real", window="hann", scaling="density",
                 periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"side should be 'real' or 'imag', not {side}")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"Scaling is invalid, it must be `None`, 'density' or "
                             f"'spectrum'. Received scaling={scaling}")
        if isinstance(window, str) and window not in _NUMPY_WINDOWS:
            globals()["window"](window, 1)  # an unknown name fails here
        self.side, self.window = side, window
        self.scaling, self.periodic = scaling, periodic

    def __call__(self, shape, dtype=None):
        dtype = _float_dtype(dtype, "STFT")
        if len(shape) != 3:
            raise ValueError(f"STFT initializer needs a shape (frame_length, "
                             f"input_channels, bins). Received: shape={shape}.")
        frame_length, _, bins = shape
        fft_length = (bins - 1) * 2
        freq = np.arange(bins, dtype=dtype).reshape(1, 1, bins) / fft_length
        time = np.arange(frame_length, dtype=dtype).reshape(frame_length, 1, 1)
        args = (-2 * time * freq) * np.arccos(np.asarray(-1, dtype))
        kernel = (np.cos if self.side == "real" else np.sin)(args).astype(dtype)
        if self.window is None:
            return kernel
        win = self.window
        if isinstance(win, str):
            win = window(win, frame_length, self.periodic)
        win = np.asarray(win, dtype)
        if win.ndim != 1 or win.shape[-1] != frame_length:
            raise ValueError(f"The shape of `window` must be equal to "
                             f"[frame_length]. Received: window shape={win.shape}")
        win = win.reshape(frame_length, 1, 1)
        scaling = 1
        if self.scaling == "density":
            scaling = np.sqrt(np.sum(np.square(win)))
        elif self.scaling == "spectrum":
            scaling = np.sum(np.abs(win))
        return (kernel * win / scaling).astype(dtype)

    def get_config(self):
        return {"side": self.side, "window": self.window, "periodic": self.periodic,
                "scaling": self.scaling}
