"""``pad_sequences``: variable-length sequences to one padded array (Keras 3's
``keras.utils.pad_sequences``)."""

from __future__ import annotations

import numpy as np

__all__ = ["pad_sequences"]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre",
                  truncating="pre", value=0.0):
    """Pads (or truncates) sequences to a common length.

    Args:
        sequences: a list (or other sized iterable) of sequences; each a list
            or array whose items may themselves be arrays of one shape.
        maxlen: the output length; the longest sequence's by default.
        dtype: the output dtype (``object`` or a str dtype for strings).
        padding: "pre" or "post": where to pad shorter sequences.
        truncating: "pre" or "post": which end to cut from longer sequences.
        value: the padding value (a float, or a string with a str dtype).

    Returns:
        A numpy array of shape ``(len(sequences), maxlen) + item_shape``.

    Raises:
        ValueError: ``sequences`` has no length; an unknown ``padding`` or
            ``truncating``; a string ``value`` with a numeric dtype; items of
            another shape than the first sequence's.

    Example::

        >>> pad_sequences([[1], [2, 3], [4, 5, 6]])
        array([[0, 0, 1],
               [0, 2, 3],
               [4, 5, 6]], dtype=int32)
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    lengths, sample_shape, flag = [], (), True
    for x in sequences:
        try:
            lengths.append(len(x))
            if flag and len(x):
                sample_shape = np.asarray(x).shape[1:]
                flag = False
        except TypeError as e:
            raise ValueError(f"`sequences` must be a list of iterables. Found "
                             f"non-iterable: {x}") from e
    maxlen = int(np.max(lengths)) if maxlen is None and lengths else (maxlen or 0)
    is_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.object_)
    if isinstance(value, str) and dtype is not object and not is_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for "
                         f"variable length strings.")
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood')
    out = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        kept = np.asarray(s[-maxlen:] if truncating == "pre" else s[:maxlen],
                          dtype=dtype)
        if kept.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {kept.shape[1:]} of sequence at "
                             f"position {i} is different from expected shape "
                             f"{sample_shape}")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, -len(kept):] = kept
    return out
