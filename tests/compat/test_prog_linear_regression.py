"""Port of a classic TF1 program: linear regression by gradient descent.

Source: Aymeric Damien, TensorFlow-Examples, examples/2_BasicModels/
linear_regression.py,
https://github.com/aymericdamien/TensorFlow-Examples/blob/master/examples/2_BasicModels/linear_regression.py
(MIT license). Changed: the import (``import kerasflow.compat.v1 as tf``), the
plotting lines dropped (no display in tests), the body wrapped in ``main()``
with ``training_epochs`` as an argument and the costs returned.
"""

from __future__ import annotations

import numpy

import kerasflow.compat.v1 as tf

rng = numpy.random


def main(training_epochs=1000, seed=0):
    rng.seed(seed)
    # Parameters
    learning_rate = 0.01
    display_step = 50

    # Training Data
    train_X = numpy.asarray([3.3,4.4,5.5,6.71,6.93,4.168,9.779,6.182,7.59,2.167,
                             7.042,10.791,5.313,7.997,5.654,9.27,3.1])
    train_Y = numpy.asarray([1.7,2.76,2.09,3.19,1.694,1.573,3.366,2.596,2.53,1.221,
                             2.827,3.465,1.65,2.904,2.42,2.94,1.3])
    n_samples = train_X.shape[0]

    # tf Graph Input
    X = tf.placeholder("float")
    Y = tf.placeholder("float")

    # Set model weights
    W = tf.Variable(rng.randn(), name="weight")
    b = tf.Variable(rng.randn(), name="bias")

    # Construct a linear model
    pred = tf.add(tf.multiply(X, W), b)

    # Mean squared error
    cost = tf.reduce_sum(tf.pow(pred-Y, 2))/(2*n_samples)
    # Gradient descent
    #  Note, minimize() knows to modify W and b because Variable objects are trainable=True by default
    optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)

    # Initialize the variables (i.e. assign their default value)
    init = tf.global_variables_initializer()

    # Start training
    with tf.Session() as sess:

        # Run the initializer
        sess.run(init)
        initial_cost = sess.run(cost, feed_dict={X: train_X, Y: train_Y})

        # Fit all training data
        for epoch in range(training_epochs):
            for (x, y) in zip(train_X, train_Y):
                sess.run(optimizer, feed_dict={X: x, Y: y})

            # Display logs per epoch step
            if (epoch+1) % display_step == 0:
                c = sess.run(cost, feed_dict={X: train_X, Y:train_Y})
                print("Epoch:", '%04d' % (epoch+1), "cost=", "{:.9f}".format(c), \
                    "W=", sess.run(W), "b=", sess.run(b))

        print("Optimization Finished!")
        training_cost = sess.run(cost, feed_dict={X: train_X, Y: train_Y})
        print("Training cost=", training_cost, "W=", sess.run(W), "b=", sess.run(b), '\n')

        # Testing example, as requested (Issue #2)
        test_X = numpy.asarray([6.83, 4.668, 8.9, 7.91, 5.7, 8.7, 3.1, 2.1])
        test_Y = numpy.asarray([1.84, 2.273, 3.2, 2.831, 2.92, 3.24, 1.35, 1.03])

        print("Testing... (Mean square loss Comparison)")
        testing_cost = sess.run(
            tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * test_X.shape[0]),
            feed_dict={X: test_X, Y: test_Y})  # same function as cost above
        print("Testing cost=", testing_cost)
        print("Absolute mean square loss difference:", abs(
            training_cost - testing_cost))
        return initial_cost, training_cost, testing_cost, train_X, train_Y


def test_linear_regression_learns_least_squares_fit():
    initial, training, testing, x, y = main(training_epochs=100)  # 1,700 steps
    # The least-squares optimum of the same cost, computed in closed form.
    A = numpy.stack([x, numpy.ones_like(x)], 1)
    w_opt = numpy.linalg.lstsq(A, y, rcond=None)[0]
    best = numpy.sum((A @ w_opt - y) ** 2) / (2 * len(x))
    assert training < 0.5 * initial
    assert training < best * 1.3           # near the optimum (0.0770)
    assert testing < 0.15
