"""The project's source lecture, a TF1 linear regression, verbatim except for
its import (``import tensorflow as tf`` -> ``import kerasflow.compat.v1 as tf``).

Learns w in y = w * x from 101 noisy points with y about 2x, one sample per
step, 100 epochs of plain gradient descent; prints w (close to 2).

Run: python examples/tf1_lecture.py
"""

import kerasflow.compat.v1 as tf
import numpy as np


def main():
    learning_rate = 0.01
    training_epochs = 100

    x_train = np.linspace(-1, 1, 101)
    y_train = 2 * x_train + np.random.randn(*x_train.shape) * 0.33

    X = tf.placeholder("float")
    Y = tf.placeholder("float")

    def model(X, w):
        return tf.multiply(X, w)

    w = tf.Variable(0.0, name="weights")

    y_model = model(X, w)
    cost = tf.square(Y - y_model)

    train_op = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)

    with tf.Session() as sess:
        tf.global_variables_initializer().run()

        for epoch in range(training_epochs):
            for (x, y) in zip(x_train, y_train):
                sess.run(train_op, feed_dict={X: x, Y: y})

        w_val = sess.run(w)
        print(w_val)
    return float(w_val)


if __name__ == "__main__":
    main()
