"""Port of a classic TF1 program: a two-hidden-layer perceptron on MNIST.

Source: Aymeric Damien, TensorFlow-Examples, examples/3_NeuralNetworks/
multilayer_perceptron.py,
https://github.com/aymericdamien/TensorFlow-Examples/blob/master/examples/3_NeuralNetworks/multilayer_perceptron.py
(MIT license). Changed: the import (``import kerasflow.compat.v1 as tf``), the
data source (``input_data.read_data_sets`` from this folder, ``train_size``
training and ``test_size`` test images), the body wrapped in ``main()`` with the epochs as an
argument and the results returned. The program's layers have no activation,
as in the original.
"""

from __future__ import annotations

import kerasflow.compat.v1 as tf
from tests.compat import input_data


def main(data_dir, training_epochs=15, train_size=None, test_size=None):
    mnist = input_data.read_data_sets(data_dir, one_hot=True, train_size=train_size,
                                      test_size=test_size)

    # Parameters
    learning_rate = 0.001
    batch_size = 100
    display_step = 1

    # Network Parameters
    n_hidden_1 = 256 # 1st layer number of neurons
    n_hidden_2 = 256 # 2nd layer number of neurons
    n_input = 784 # MNIST data input (img shape: 28*28)
    n_classes = 10 # MNIST total classes (0-9 digits)

    # tf Graph input
    X = tf.placeholder("float", [None, n_input])
    Y = tf.placeholder("float", [None, n_classes])

    # Store layers weight & bias
    weights = {
        'h1': tf.Variable(tf.random_normal([n_input, n_hidden_1])),
        'h2': tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2])),
        'out': tf.Variable(tf.random_normal([n_hidden_2, n_classes]))
    }
    biases = {
        'b1': tf.Variable(tf.random_normal([n_hidden_1])),
        'b2': tf.Variable(tf.random_normal([n_hidden_2])),
        'out': tf.Variable(tf.random_normal([n_classes]))
    }


    # Create model
    def multilayer_perceptron(x):
        # Hidden fully connected layer with 256 neurons
        layer_1 = tf.add(tf.matmul(x, weights['h1']), biases['b1'])
        # Hidden fully connected layer with 256 neurons
        layer_2 = tf.add(tf.matmul(layer_1, weights['h2']), biases['b2'])
        # Output fully connected layer with a neuron for each class
        out_layer = tf.matmul(layer_2, weights['out']) + biases['out']
        return out_layer

    # Construct model
    logits = multilayer_perceptron(X)

    # Define loss and optimizer
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(
        logits=logits, labels=Y))
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    train_op = optimizer.minimize(loss_op)
    # Initializing the variables
    init = tf.global_variables_initializer()

    costs = []
    with tf.Session() as sess:
        sess.run(init)

        # Training cycle
        for epoch in range(training_epochs):
            avg_cost = 0.
            total_batch = int(mnist.train.num_examples/batch_size)
            # Loop over all batches
            for i in range(total_batch):
                batch_x, batch_y = mnist.train.next_batch(batch_size)
                # Run optimization op (backprop) and cost op (to get loss value)
                _, c = sess.run([train_op, loss_op], feed_dict={X: batch_x,
                                                                Y: batch_y})
                # Compute average loss
                avg_cost += c / total_batch
                costs.append(c)
            # Display logs per epoch step
            if epoch % display_step == 0:
                print("Epoch:", '%04d' % (epoch+1), "cost={:.9f}".format(avg_cost))
        print("Optimization Finished!")

        # Test model
        pred = tf.nn.softmax(logits)  # Apply softmax to logits
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(Y, 1))
        # Calculate accuracy
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
        acc = accuracy.eval({X: mnist.test.images, Y: mnist.test.labels})
        print("Accuracy:", acc)
        return costs, float(acc)


def test_multilayer_perceptron_on_mnist(mnist_dir):
    costs, acc = main(mnist_dir, training_epochs=2, train_size=10000,
                      test_size=2000)        # 200 steps
    first, last = sum(costs[:20]) / 20, sum(costs[-20:]) / 20
    assert last < 0.25 * first               # N(0, 1) weights start far off
    assert acc > 0.70                         # 200 of the original 8,250 steps
