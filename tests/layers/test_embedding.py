"""Embedding: lookup gradients (float64), sparse updates equal to dense ones on
the touched rows, masks, contract, errors; pretrained ``weights=`` and
``build`` from an input shape."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from kerasflow.backend.ops.embedding import unique_rows
from tests.backend.gradcheck import check_gradients


def test_embedding_lookup_gradient_is_the_scatter_sum(float64):
    rng = np.random.RandomState(0)
    params = rng.randn(6, 3)
    ids = np.array([[1, 4, 1], [0, 4, 4]])  # duplicates are summed
    check_gradients(lambda p, i: K.embedding_lookup(p, i), [params, ids])
    # second order: the dense conversion's own gradient
    from tests.backend.gradcheck import grad_fn

    check_gradients(grad_fn(lambda p, i: K.embedding_lookup(p, i) ** 2),
                    [params, ids])


def test_unique_rows_sums_duplicates():
    values = np.arange(12, dtype=np.float64).reshape(4, 3)
    rows, summed = unique_rows(np, values, np.array([3, 1, 3, 0]), (3,))
    np.testing.assert_array_equal(rows, [0, 1, 3])
    np.testing.assert_array_equal(summed, [values[3], values[1],
                                           values[0] + values[2]])


def _one_model(optimizer, ids_batches, dense):
    table = K.Variable(np.random.RandomState(0).randn(10, 4).astype("float32"))
    ids = K.placeholder("int64", (None,))
    loss = K.sum(K.square(K.embedding_lookup(table, ids) - 1.0))
    (g,) = K.gradients(loss, [table])
    if dense:
        g = K.identity(g)  # any transformation makes the gradient dense
    updates = optimizer.apply_gradients([(g, table)])
    fn = K.Function([ids], loss, updates=updates)
    ops = {n.op for n in fn._lines}
    assert ("SparseApply" in ops) != dense
    assert ("IndexedSlicesToDense" in ops) == dense
    for batch in ids_batches:
        fn(np.asarray(batch))
    return table.numpy()


@pytest.mark.parametrize("make", [lambda: kf.optimizers.SGD(0.1),
                                  lambda: kf.optimizers.Adagrad(0.1)])
def test_sparse_update_equals_dense_for_sgd_and_adagrad(make):
    batches = [[1, 3, 3], [3, 7], [0, 1, 1, 1]]
    np.testing.assert_allclose(_one_model(make(), batches, dense=False),
                               _one_model(make(), batches, dense=True), rtol=1e-5)


def test_sparse_weight_decay_applies_to_touched_rows():
    make = lambda: kf.optimizers.SGD(0.1, weight_decay=0.01)  # noqa: E731
    sparse = _one_model(make(), [[1, 3, 3]], dense=False)
    dense = _one_model(make(), [[1, 3, 3]], dense=True)
    np.testing.assert_allclose(sparse[[1, 3]], dense[[1, 3]], rtol=1e-5)
    initial = np.random.RandomState(0).randn(10, 4).astype("float32")
    np.testing.assert_array_equal(sparse[[0, 2]], initial[[0, 2]])


@pytest.mark.parametrize("make", [lambda: kf.optimizers.Adam(0.1),
                                  lambda: kf.optimizers.RMSprop(0.1),
                                  lambda: kf.optimizers.SGD(0.1, momentum=0.9)])
def test_sparse_updates_are_lazy_for_moment_optimizers(make):
    # Step 1: identical everywhere. Rows touched at every step stay identical;
    # a row touched only at step 1 keeps still afterwards (lazy), dense moves it.
    first = [[2, 5, 5]]
    np.testing.assert_allclose(_one_model(make(), first, False),
                               _one_model(make(), first, True), rtol=1e-5)
    batches = [[2, 5, 5], [5, 8], [5, 2]]
    sparse = _one_model(make(), batches, False)
    dense = _one_model(make(), batches, True)
    np.testing.assert_allclose(sparse[5], dense[5], rtol=1e-5)
    after_first = _one_model(make(), first, False)
    np.testing.assert_array_equal(sparse[[0, 1, 3]], after_first[[0, 1, 3]])


def test_big_table_step_touches_only_batch_rows():
    n = 200_000
    layer = L.Embedding(n, 8)
    model = kf.Sequential([kf.layers.InputLayer(shape=(5,), dtype="int64"), layer,
                           L.GlobalAveragePooling1D(), L.Dense(1)])
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="mse")
    before = layer.embeddings.numpy().copy()
    ids = np.array([[1, 2, 3, 4, 5], [199_999, 7, 7, 7, 7]])
    model.train_on_batch(ids, np.ones((2, 1), "float32"))
    after = layer.embeddings.numpy()
    changed = np.nonzero(np.any(after != before, axis=1))[0]
    np.testing.assert_array_equal(changed, [1, 2, 3, 4, 5, 7, 199_999])


def test_mask_zero_masks_global_average():
    layer = L.Embedding(5, 2, mask_zero=True, embeddings_initializer="ones")
    x = K.placeholder("int64", (None, 4))
    pooled = L.GlobalAveragePooling1D()(layer(x) * 1.0)  # mask lost through *
    masked = L.GlobalAveragePooling1D()(layer(x))
    fn = K.Function([x], [pooled, masked])
    layer.embeddings.assign(np.arange(10, dtype="float32").reshape(5, 2))
    a, b = fn(np.array([[1, 2, 0, 0]]))
    np.testing.assert_allclose(a, [[(2 + 4 + 0 + 0) / 4, (3 + 5 + 1 + 1) / 4]])
    np.testing.assert_allclose(b, [[3.0, 4.0]])
    np.testing.assert_array_equal(layer.compute_mask(np.array([[1, 0]])),
                                  [[True, False]])


@pytest.mark.parametrize("make,in_shape,out_shape", [
    (lambda: L.Embedding(7, 3), (2, 4), (2, 4, 3)),
    (lambda: L.Embedding(7, 2, mask_zero=True, embeddings_regularizer="l2"),
     (2, 3), (2, 3, 2)),
])
def test_contract(make, in_shape, out_shape, tmp_path):
    check_contract(make, in_shape, out_shape, tmp_path, dtype="int64", high=7)


def test_embedding_index_errors():
    layer = L.Embedding(4, 2, name="tokens")
    with pytest.raises(ValueError, match=r"Layer 'tokens' expects indices in "
                                         r"\[0, input_dim=4\). Received: indices "
                                         r"from 0 to 4"):
        layer(np.array([[0, 4]]))
    with pytest.raises(ValueError, match=r"from -1 to 1"):
        layer(np.array([[-1, 1]]))
    with pytest.raises(ValueError, match="positive"):
        L.Embedding(0, 2)


def test_embedding_takes_pretrained_weights():
    table = np.arange(30, dtype="float32").reshape(10, 3)
    for weights in ([table], table):
        layer = kf.layers.Embedding(10, 3, weights=weights, trainable=False)
        assert layer.built and not layer.trainable_weights
        np.testing.assert_array_equal(layer(np.array([[1, 2]]))[0], table[[1, 2]])
    with pytest.raises(ValueError, match=r"expects shape \(10, 3\).*\(9, 3\)"):
        kf.layers.Embedding(10, 3, weights=[np.ones((9, 3))])


def test_embedding_build_with_an_input_shape():
    layer = kf.layers.Embedding(7, 2)
    layer.build((None, 5))
    assert layer.embeddings.shape == (7, 2)
