"""Ports of two classic TF1 utility programs: ``tf.train.Saver`` save/restore
and ``tf.summary.FileWriter`` with scalar summaries.

Sources: Aymeric Damien, TensorFlow-Examples (MIT license),
examples/4_Utils/save_restore_model.py,
https://github.com/aymericdamien/TensorFlow-Examples/blob/master/examples/4_Utils/save_restore_model.py
and examples/4_Utils/tensorboard_basic.py,
https://github.com/aymericdamien/TensorFlow-Examples/blob/master/examples/4_Utils/tensorboard_basic.py
Changed: the import (``import kerasflow.compat.v1 as tf``), the data source
(``input_data.read_data_sets`` from this folder, ``train_size`` and
``test_size`` images), the
bodies wrapped in functions with the epochs and paths as arguments, and the
results returned; in the save/restore program the accuracy is also measured
right after ``restore`` (to check the round trip exactly).
"""

from __future__ import annotations

import os

import numpy as np

import kerasflow.compat.v1 as tf
from kerasflow.summary import read_events
from tests.compat import input_data


def save_restore_model(data_dir, model_path, first_epochs=3, second_epochs=7,
                       train_size=None, test_size=None):
    mnist = input_data.read_data_sets(data_dir, one_hot=True, train_size=train_size,
                                      test_size=test_size)
    out = {}

    # Parameters
    learning_rate = 0.001
    batch_size = 100
    display_step = 1

    # Network Parameters
    n_hidden_1 = 256 # 1st layer number of features
    n_hidden_2 = 256 # 2nd layer number of features
    n_input = 784 # MNIST data input (img shape: 28*28)
    n_classes = 10 # MNIST total classes (0-9 digits)

    # tf Graph input
    x = tf.placeholder("float", [None, n_input])
    y = tf.placeholder("float", [None, n_classes])


    # Create model
    def multilayer_perceptron(x, weights, biases):
        # Hidden layer with RELU activation
        layer_1 = tf.add(tf.matmul(x, weights['h1']), biases['b1'])
        layer_1 = tf.nn.relu(layer_1)
        # Hidden layer with RELU activation
        layer_2 = tf.add(tf.matmul(layer_1, weights['h2']), biases['b2'])
        layer_2 = tf.nn.relu(layer_2)
        # Output layer with linear activation
        out_layer = tf.matmul(layer_2, weights['out']) + biases['out']
        return out_layer

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

    # Construct model
    pred = multilayer_perceptron(x, weights, biases)

    # Define loss and optimizer
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(cost)

    # Initialize the variables (i.e. assign their default value)
    init = tf.global_variables_initializer()

    # 'Saver' op to save and restore all the variables
    saver = tf.train.Saver()

    # Running first session
    print("Starting 1st session...")
    with tf.Session() as sess:

        # Run the initializer
        sess.run(init)
        out['initial_accuracy'] = tf.reduce_mean(tf.cast(tf.equal(
            tf.argmax(pred, 1), tf.argmax(y, 1)), "float")).eval(
            {x: mnist.test.images, y: mnist.test.labels})

        # Training cycle
        for epoch in range(first_epochs):
            avg_cost = 0.
            total_batch = int(mnist.train.num_examples/batch_size)
            # Loop over all batches
            for i in range(total_batch):
                batch_x, batch_y = mnist.train.next_batch(batch_size)
                # Run optimization op (backprop) and cost op (to get loss value)
                _, c = sess.run([optimizer, cost], feed_dict={x: batch_x,
                                                              y: batch_y})
                # Compute average loss
                avg_cost += c / total_batch
            # Display logs per epoch step
            if epoch % display_step == 0:
                print("Epoch:", '%04d' % (epoch+1), "cost=", \
                    "{:.9f}".format(avg_cost))
        print("First Optimization Finished!")

        # Test model
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        # Calculate accuracy
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
        out['saved_accuracy'] = accuracy.eval(
            {x: mnist.test.images, y: mnist.test.labels})
        print("Accuracy:", out['saved_accuracy'])

        # Save model weights to disk
        save_path = saver.save(sess, model_path)
        print("Model saved in file: %s" % save_path)

    # Running a new session
    print("Starting 2nd session...")
    with tf.Session() as sess:
        # Initialize variables
        sess.run(init)
        out['reinitialized_accuracy'] = accuracy.eval(
            {x: mnist.test.images, y: mnist.test.labels})

        # Restore model weights from previously saved model
        load_path = saver.restore(sess, model_path)
        print("Model restored from file: %s" % save_path)
        out['load_path'] = load_path
        out['restored_accuracy'] = accuracy.eval(
            {x: mnist.test.images, y: mnist.test.labels})

        # Resume training
        for epoch in range(second_epochs):
            avg_cost = 0.
            total_batch = int(mnist.train.num_examples / batch_size)
            # Loop over all batches
            for i in range(total_batch):
                batch_x, batch_y = mnist.train.next_batch(batch_size)
                # Run optimization op (backprop) and cost op (to get loss value)
                _, c = sess.run([optimizer, cost], feed_dict={x: batch_x,
                                                              y: batch_y})
                # Compute average loss
                avg_cost += c / total_batch
            # Display logs per epoch step
            if epoch % display_step == 0:
                print("Epoch:", '%04d' % (epoch + 1), "cost=", \
                    "{:.9f}".format(avg_cost))
        print("Second Optimization Finished!")

        # Test model
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        # Calculate accuracy
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
        out['final_accuracy'] = accuracy.eval(
            {x: mnist.test.images, y: mnist.test.labels})
        print("Accuracy:", out['final_accuracy'])
    out['save_path'] = save_path
    return out


def tensorboard_basic(data_dir, logs_path, training_epochs=25, train_size=None):
    mnist = input_data.read_data_sets(data_dir, one_hot=True, train_size=train_size)

    # Parameters
    learning_rate = 0.01
    batch_size = 100
    display_step = 1

    # tf Graph Input
    # mnist data image of shape 28*28=784
    x = tf.placeholder(tf.float32, [None, 784], name='InputData')
    # 0-9 digits recognition => 10 classes
    y = tf.placeholder(tf.float32, [None, 10], name='LabelData')

    # Set model weights
    W = tf.Variable(tf.zeros([784, 10]), name='Weights')
    b = tf.Variable(tf.zeros([10]), name='Bias')

    # Construct model and encapsulating all ops into scopes, making
    # Tensorboard's Graph visualization more convenient
    with tf.name_scope('Model'):
        # Model
        pred = tf.nn.softmax(tf.matmul(x, W) + b) # Softmax
    with tf.name_scope('Loss'):
        # Minimize error using cross entropy
        cost = tf.reduce_mean(-tf.reduce_sum(y*tf.log(pred), reduction_indices=1))
    with tf.name_scope('SGD'):
        # Gradient Descent
        optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)
    with tf.name_scope('Accuracy'):
        # Accuracy
        acc = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        acc = tf.reduce_mean(tf.cast(acc, tf.float32))

    # Initialize the variables (i.e. assign their default value)
    init = tf.global_variables_initializer()

    # Create a summary to monitor cost tensor
    tf.summary.scalar("loss", cost)
    # Create a summary to monitor accuracy tensor
    tf.summary.scalar("accuracy", acc)
    # Merge all summaries into a single op
    merged_summary_op = tf.summary.merge_all()

    # Start training
    with tf.Session() as sess:

        # Run the initializer
        sess.run(init)

        # op to write logs to Tensorboard
        summary_writer = tf.summary.FileWriter(logs_path, graph=tf.get_default_graph())

        costs = []
        # Training cycle
        for epoch in range(training_epochs):
            avg_cost = 0.
            total_batch = int(mnist.train.num_examples/batch_size)
            # Loop over all batches
            for i in range(total_batch):
                batch_xs, batch_ys = mnist.train.next_batch(batch_size)
                # Run optimization op (backprop), cost op (to get loss value)
                # and summary nodes
                _, c, summary = sess.run([optimizer, cost, merged_summary_op],
                                         feed_dict={x: batch_xs, y: batch_ys})
                # Write logs at every iteration
                summary_writer.add_summary(summary, epoch * total_batch + i)
                # Compute average loss
                avg_cost += c / total_batch
                costs.append(float(c))
            # Display logs per epoch step
            if (epoch+1) % display_step == 0:
                print("Epoch:", '%04d' % (epoch+1), "cost=", "{:.9f}".format(avg_cost))

        print("Optimization Finished!")

        # Test model
        # Calculate accuracy
        accuracy = acc.eval({x: mnist.test.images, y: mnist.test.labels})
        print("Accuracy:", accuracy)

        print("Run the command line:\n" \
              "--> tensorboard --logdir=/tmp/tensorflow_logs " \
              "\nThen open http://0.0.0.0:6006/ into your web browser")
        summary_writer.close()
    return costs, float(accuracy)


def test_save_restore_model_round_trip(mnist_dir, tmp_path):
    model_path = str(tmp_path / "model.ckpt")
    r = save_restore_model(mnist_dir, model_path, first_epochs=2, second_epochs=1,
                           train_size=5000, test_size=2000)  # 100 + 50 steps
    assert r['save_path'] == model_path
    assert r['load_path'] is None  # TF1's Saver.restore returns None
    assert os.path.isfile(model_path)  # one file per checkpoint
    assert tf.train.latest_checkpoint(str(tmp_path)) == model_path
    assert r['saved_accuracy'] > r['initial_accuracy'] + 0.3
    # init in the 2nd session resets the weights (TF1), restore brings back
    # exactly the saved ones.
    assert abs(r['reinitialized_accuracy'] - r['initial_accuracy']) < 1e-6
    assert r['restored_accuracy'] == r['saved_accuracy']
    assert r['final_accuracy'] > r['saved_accuracy']   # training resumed from it


def test_tensorboard_basic_writes_graph_and_scalars(mnist_dir, tmp_path):
    logs = tmp_path / "example"
    costs, accuracy = tensorboard_basic(mnist_dir, str(logs), training_epochs=3,
                                        train_size=10000)  # 300 steps
    assert accuracy > 0.7
    events = read_events(logs)
    graphs = [e for e in events if e.HasField("graph_def")]
    assert len(graphs) == 1
    from tensorboardX.proto import graph_pb2
    nodes = {n.name: n for n in graph_pb2.GraphDef.FromString(graphs[0].graph_def).node}
    # (Names are unique per process: "InputData_3" if the suite made others.)
    assert any(n.startswith("InputData") and nodes[n].op == "Placeholder"
               for n in nodes)
    assert any(n.startswith("Model/") for n in nodes)
    assert any(n.startswith("Loss/") for n in nodes)
    assert any(n.startswith("SGD/") for n in nodes)
    scalars = {}
    for e in events:
        for v in e.summary.value:
            scalars.setdefault(v.tag, []).append((e.step, v.simple_value))
    assert sorted(scalars) == ["accuracy", "loss"]
    loss = scalars["loss"]
    assert [s for s, _ in loss] == list(range(300))
    # The logged losses are the ones the program fetched in the same run.
    np.testing.assert_allclose([v for _, v in loss], costs, rtol=1e-6)
    assert np.mean([v for _, v in loss[-30:]]) < 0.5 * loss[0][1]
