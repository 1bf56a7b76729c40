"""``Hashing`` (Keras 3's ``keras.layers.Hashing``: same arguments and the
same bins, from the same hashes), an eager numpy layer."""

from __future__ import annotations

import numpy as np

from kerasflow.layers.preprocessing.base import EagerArrayLayer
from kerasflow.layers.preprocessing.encoding import encode_categorical
from kerasflow.layers.preprocessing.hash_functions import hash_bucket

__all__ = ["Hashing"]


class Hashing(EagerArrayLayer):
    """Hashes strings or integers into ``num_bins`` bins (Keras 3's
    ``keras.layers.Hashing``): ``farmhash64(str(x)) % num_bins`` (FarmHash
    ``Fingerprint64``, TF's ``to_hash_bucket_fast``), or keyed SipHash-2-4
    with ``salt`` (TF's ``to_hash_bucket_strong``). Integers hash as their
    decimal text and floats are truncated to integers first, as Keras.

    Args:
        num_bins: the number of bins, including the mask bin 0 when
            ``mask_value`` is set.
        mask_value: inputs equal to it map to 0 (others to 1..num_bins-1).
        salt: an int k (the key (k, k)) or a pair of ints: SipHash's key.
        output_mode: 'int' (int64 bins, the input's shape), 'one_hot',
            'multi_hot' or 'count' (vectors of ``num_bins`` in the layer's
            dtype, float32 by default, encoding axis 1 as
            ``CategoryEncoding``).

    Input: str/bytes/int/float arrays of any shape.

    Raises:
        ValueError: num_bins None or < 1, a malformed salt, an unknown mode,
            sparse=True, or an integer dtype with a non-'int' mode mismatch.
        TypeError: a symbolic input (this layer runs on arrays).

    Example::

        >>> Hashing(num_bins=3)(np.array([["A"], ["B"], ["C"]]))  # [[1], [0], [1]]
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int",
                 sparse=False, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else None
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(f"The `num_bins` for `Hashing` cannot be `None` or "
                             f"non-positive values. Received: num_bins={num_bins}.")
        if output_mode == "int" and self.dtype not in ("int32", "int64"):
            raise ValueError(f"When `output_mode=\"int\"`, `dtype` should be an "
                             f"integer type, 'int32' or 'in64'. Received: "
                             f"dtype={self.dtype}")
        modes = ("int", "one_hot", "multi_hot", "count")
        if output_mode not in modes:
            raise ValueError(f"Invalid value for argument `output_mode`. Expected "
                             f"one of {modes}. Received: output_mode={output_mode}")
        if sparse:
            raise ValueError("`sparse=True` is not supported by kerasflow. "
                             "Received: sparse=True.")
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2:
                salt = list(salt)
            elif isinstance(salt, int):
                salt = [salt, salt]
            else:
                raise ValueError(f"The `salt` argument for `Hashing` can only be a "
                                 f"tuple of size 2 integers, or a single integer. "
                                 f"Received: salt={salt}.")
        self.num_bins, self.mask_value, self.salt = int(num_bins), mask_value, salt
        self.output_mode, self.sparse = output_mode, False

    def _call_numpy(self, inputs):
        x = np.asarray(inputs, dtype=object) if isinstance(inputs, list) and any(
            isinstance(v, (bytes, str)) for v in np.ravel(np.asarray(
                inputs, dtype=object))) else np.asarray(inputs)
        if x.dtype.kind not in "iufUSO":
            raise TypeError(f"Layer '{self.name}' (Hashing) expects string or "
                            f"numeric inputs. Received: dtype={x.dtype}.")
        if self.output_mode == "one_hot" and x.ndim > 0 and x.shape[-1] == 1:
            x = x[..., 0]
        bins = self.num_bins
        mask = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mv = self.mask_value
            if x.dtype.kind in "SO" and isinstance(mv, str):
                mv = mv.encode()
            mask = x == mv if x.dtype.kind != "O" else np.vectorize(
                lambda v: v == self.mask_value or v == mv, otypes=[bool])(x)
        out = hash_bucket(x, bins, self.salt)
        if mask is not None:
            out = np.where(mask, 0, out + 1)
        if self.output_mode == "int":
            return out.astype(self.dtype)
        return np.asarray(encode_categorical(out, self.output_mode, self.num_bins,
                                             self.dtype))

    def compute_output_shape(self, input_shape):
        """The input shape ('int'), else the last axis replaced by num_bins."""
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        return shape[:-1] + (self.num_bins,) if shape else (self.num_bins,)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins,
                "salt": self.salt, "mask_value": self.mask_value,
                "output_mode": self.output_mode, "sparse": self.sparse}
