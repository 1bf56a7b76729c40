"""Port of a classic TF1 program: softmax (logistic) regression on MNIST.

Source: Aymeric Damien, TensorFlow-Examples, examples/2_BasicModels/
logistic_regression.py,
https://github.com/aymericdamien/TensorFlow-Examples/blob/master/examples/2_BasicModels/logistic_regression.py
(MIT license). Changed: the import (``import kerasflow.compat.v1 as tf``), the
data source (``input_data.read_data_sets`` from this folder reads the shared
MNIST files, keeping ``train_size`` training images), the body wrapped in
``main()`` with the epochs as an argument and the results returned.
"""

from __future__ import annotations

import kerasflow.compat.v1 as tf
from tests.compat import input_data


def main(data_dir, training_epochs=25, train_size=None):
    # Import MNIST data
    mnist = input_data.read_data_sets(data_dir, one_hot=True, train_size=train_size)

    # Parameters
    learning_rate = 0.01
    batch_size = 100
    display_step = 1

    # tf Graph Input
    x = tf.placeholder(tf.float32, [None, 784]) # mnist data image of shape 28*28=784
    y = tf.placeholder(tf.float32, [None, 10]) # 0-9 digits recognition => 10 classes

    # Set model weights
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))

    # Construct model
    pred = tf.nn.softmax(tf.matmul(x, W) + b) # Softmax

    # Minimize error using cross entropy
    cost = tf.reduce_mean(-tf.reduce_sum(y*tf.log(pred), reduction_indices=1))
    # Gradient Descent
    optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)

    # Initialize the variables (i.e. assign their default value)
    init = tf.global_variables_initializer()

    costs = []
    # Start training
    with tf.Session() as sess:

        # Run the initializer
        sess.run(init)

        # Training cycle
        for epoch in range(training_epochs):
            avg_cost = 0.
            total_batch = int(mnist.train.num_examples/batch_size)
            # Loop over all batches
            for i in range(total_batch):
                batch_xs, batch_ys = mnist.train.next_batch(batch_size)
                # Run optimization op (backprop) and cost op (to get loss value)
                _, c = sess.run([optimizer, cost], feed_dict={x: batch_xs,
                                                              y: batch_ys})
                # Compute average loss
                avg_cost += c / total_batch
                costs.append(c)
            # Display logs per epoch step
            if (epoch+1) % display_step == 0:
                print("Epoch:", '%04d' % (epoch+1), "cost=", "{:.9f}".format(avg_cost))

        print("Optimization Finished!")

        # Test model
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        # Calculate accuracy for 3000 examples
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
        acc = accuracy.eval({x: mnist.test.images[:3000], y: mnist.test.labels[:3000]})
        print("Accuracy:", acc)
        return costs, float(acc)


def test_logistic_regression_on_mnist(mnist_dir):
    costs, acc = main(mnist_dir, training_epochs=5, train_size=10000)  # 500 steps
    assert len(costs) == 500
    assert abs(costs[0] - 2.302585) < 1e-4   # ln(10): zero weights, uniform pred
    assert sum(costs[-50:]) / 50 < 0.5 * costs[0]
    assert acc > 0.75                        # 500 of the original 13,750 steps
