"""Differential checks of ``kerasflow.ops`` against Keras 3's ``keras.ops``
(numpy backend): one op, one set of arguments, eagerly and (where the op
supports it) inside a graph, the array arguments fed through placeholders."""

from __future__ import annotations

import numpy as np

import kerasflow as kf
from kerasflow import backend as K
from tests.keras_oracle import keras_numpy


def _flat(out):
    if isinstance(out, (list, tuple)):
        return [v for o in out for v in _flat(o)]
    return [out]


def _resolve(root, name):
    for part in name.split("."):
        root = getattr(root, part)
    return root


def assert_matches_keras(name, args, kwargs=None, symbolic=True, rtol=1e-5,
                         atol=1e-6, check_dtype=True, namespace="ops"):
    """kerasflow's ``<namespace>.<name>(*args, **kwargs)`` equals Keras' in
    value (and dtype), eagerly and, with ``symbolic``, through K.Function
    with the ndarray arguments as placeholders of their static shapes."""
    kwargs = kwargs or {}
    keras = keras_numpy()
    # Keras' convert_to_tensor makes float64/int64 arrays float32/int32;
    # kerasflow keeps them: there only the values are compared.
    check_dtype = check_dtype and not any(
        isinstance(a, np.ndarray) and a.dtype in (np.float64, np.int64) for a in args)
    # Copies: Keras' numpy scatter_update writes into its input.
    theirs = [np.asarray(v) for v in _flat(_resolve(keras, namespace + "." + name)(
        *[a.copy() if isinstance(a, np.ndarray) else a for a in args], **kwargs))]
    fn = _resolve(kf, namespace + "." + name)
    ours = [np.asarray(K.to_numpy(v)) for v in _flat(fn(*args, **kwargs))]
    _compare(name, ours, theirs, rtol, atol, check_dtype)
    if not symbolic:
        return
    feeds, sym_args = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            ph = K.placeholder(a.dtype.name, a.shape)
            feeds.append((ph, a))
            sym_args.append(ph)
        else:
            sym_args.append(a)
    outs = _flat(fn(*sym_args, **kwargs))
    run = K.Function([p for p, _ in feeds], outs)
    got = run(*[v for _, v in feeds])
    got = [np.asarray(K.to_numpy(v)) for v in (got if isinstance(got, list)
                                               else [got])]
    _compare(name + " (graph)", got, theirs, rtol, atol, check_dtype)


def _compare(name, ours, theirs, rtol, atol, check_dtype):
    assert len(ours) == len(theirs), f"{name}: {len(ours)} outputs, Keras {len(theirs)}"
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape, f"{name}: shape {o.shape} != Keras {t.shape}"
        if check_dtype:
            assert o.dtype == t.dtype, f"{name}: dtype {o.dtype} != Keras {t.dtype}"
        if t.dtype.kind in "fc":
            np.testing.assert_allclose(o, t, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=name)
        else:
            np.testing.assert_array_equal(o, t, err_msg=name)
