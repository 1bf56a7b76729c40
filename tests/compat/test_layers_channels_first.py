"""tf.layers with data_format='channels_first' (NCHW): the same values as the
channels_last program on transposed data (they used to ignore the argument)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow.compat.v1 as tf


def test_nchw_program_equals_nhwc_program():
    x = np.random.RandomState(0).rand(2, 8, 8, 3).astype("float32")
    outs = {}
    for fmt, data in (("channels_last", x), ("channels_first",
                                             x.transpose(0, 3, 1, 2))):
        tf.reset_default_graph()
        tf.set_random_seed(0)
        ph = tf.placeholder(tf.float32, data.shape)
        h = tf.layers.conv2d(ph, 4, 3, padding="same", data_format=fmt,
                             kernel_initializer=tf.ones_initializer())
        m = tf.layers.max_pooling2d(h, 2, 2, data_format=fmt)
        a = tf.layers.average_pooling2d(h, 2, 2, data_format=fmt)
        f = tf.layers.flatten(m + a, data_format=fmt)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            outs[fmt] = sess.run(f, {ph: data})
    np.testing.assert_allclose(outs["channels_first"], outs["channels_last"],
                               rtol=1e-5)
    with pytest.raises(ValueError, match="data_format"):
        tf.layers.max_pooling2d(tf.placeholder(tf.float32, (1, 4, 4, 1)), 2, 2,
                                data_format="NHWC")
