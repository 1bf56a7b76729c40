"""Port of a classic TF1 program: "Deep MNIST for Experts", a raw-ops convnet
with ``tf.nn.dropout(keep_prob)``.

Source: TensorFlow r1.15, tensorflow/examples/tutorials/mnist/mnist_deep.py,
https://github.com/tensorflow/tensorflow/blob/r1.15/tensorflow/examples/tutorials/mnist/mnist_deep.py
(Apache License 2.0). Changed: the import (``import kerasflow.compat.v1 as
tf``), the data source (``input_data.read_data_sets`` from this folder), the
number of steps, the batch size and the layer widths made arguments of
``main()`` (defaults: the original 20000, 50, 1e-4 and 32/64/1024), the
test-set size an argument, the loss recorded every 25 steps, and the results
returned. TF1 semantics used: name scopes,
``tf.nn.conv2d``/``max_pool`` with ``[1, s, s, 1]`` strides, ``keep_prob`` a
placeholder fed 0.5 for training and 1.0 for evaluation, ``train_step.run()``
and ``accuracy.eval()`` on the default session, ``tf.losses``, and
``FileWriter.add_graph(tf.get_default_graph())``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import pytest

import kerasflow.compat.v1 as tf
from kerasflow.summary import read_events
from tests.compat import input_data

FLAGS = None
WIDTHS = (32, 64, 1024)


def deepnn(x):
  """deepnn builds the graph for a deep net for classifying digits.

  Args:
    x: an input tensor with the dimensions (N_examples, 784), where 784 is the
    number of pixels in a standard MNIST image.

  Returns:
    A tuple (y, keep_prob). y is a tensor of shape (N_examples, 10), with values
    equal to the logits of classifying the digit into one of 10 classes (the
    digits 0-9). keep_prob is a scalar placeholder for the probability of
    dropout.
  """
  c1, c2, fc = WIDTHS
  # Reshape to use within a convolutional neural net.
  # Last dimension is for "features" - there is only one here, since images are
  # grayscale -- it would be 3 for an RGB image, 4 for RGBA, etc.
  with tf.name_scope('reshape'):
    x_image = tf.reshape(x, [-1, 28, 28, 1])

  # First convolutional layer - maps one grayscale image to 32 feature maps.
  with tf.name_scope('conv1'):
    W_conv1 = weight_variable([5, 5, 1, c1])
    b_conv1 = bias_variable([c1])
    h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1)

  # Pooling layer - downsamples by 2X.
  with tf.name_scope('pool1'):
    h_pool1 = max_pool_2x2(h_conv1)

  # Second convolutional layer -- maps 32 feature maps to 64.
  with tf.name_scope('conv2'):
    W_conv2 = weight_variable([5, 5, c1, c2])
    b_conv2 = bias_variable([c2])
    h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2)

  # Second pooling layer.
  with tf.name_scope('pool2'):
    h_pool2 = max_pool_2x2(h_conv2)

  # Fully connected layer 1 -- after 2 round of downsampling, our 28x28 image
  # is down to 7x7x64 feature maps -- maps this to 1024 features.
  with tf.name_scope('fc1'):
    W_fc1 = weight_variable([7 * 7 * c2, fc])
    b_fc1 = bias_variable([fc])

    h_pool2_flat = tf.reshape(h_pool2, [-1, 7*7*c2])
    h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)

  # Dropout - controls the complexity of the model, prevents co-adaptation of
  # features.
  with tf.name_scope('dropout'):
    keep_prob = tf.placeholder(tf.float32)
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)

  # Map the 1024 features to 10 classes, one for each digit
  with tf.name_scope('fc2'):
    W_fc2 = weight_variable([fc, 10])
    b_fc2 = bias_variable([10])

    y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
  return y_conv, keep_prob


def conv2d(x, W):
  """conv2d returns a 2d convolution layer with full stride."""
  return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding='SAME')


def max_pool_2x2(x):
  """max_pool_2x2 downsamples a feature map by 2X."""
  return tf.nn.max_pool(x, ksize=[1, 2, 2, 1],
                        strides=[1, 2, 2, 1], padding='SAME')


def weight_variable(shape):
  """weight_variable generates a weight variable of a given shape."""
  initial = tf.truncated_normal(shape, stddev=0.1)
  return tf.Variable(initial)


def bias_variable(shape):
  """bias_variable generates a bias variable of a given shape."""
  initial = tf.constant(0.1, shape=shape)
  return tf.Variable(initial)


def main(_, steps=20000, batch_size=50, test_size=None, learning_rate=1e-4,
         result=None):
  # Import data
  mnist = input_data.read_data_sets(FLAGS.data_dir, test_size=test_size)

  # Create the model
  x = tf.placeholder(tf.float32, [None, 784])

  # Define loss and optimizer
  y_ = tf.placeholder(tf.int64, [None])

  # Build the graph for the deep net
  y_conv, keep_prob = deepnn(x)

  with tf.name_scope('loss'):
    cross_entropy = tf.losses.sparse_softmax_cross_entropy(
        labels=y_, logits=y_conv)
  cross_entropy = tf.reduce_mean(cross_entropy)

  with tf.name_scope('adam_optimizer'):
    train_step = tf.train.AdamOptimizer(learning_rate).minimize(cross_entropy)

  with tf.name_scope('accuracy'):
    correct_prediction = tf.equal(tf.argmax(y_conv, 1), y_)
    correct_prediction = tf.cast(correct_prediction, tf.float32)
  accuracy = tf.reduce_mean(correct_prediction)

  graph_location = tempfile.mkdtemp()
  print('Saving graph to: %s' % graph_location)
  train_writer = tf.summary.FileWriter(graph_location)
  train_writer.add_graph(tf.get_default_graph())

  result = {} if result is None else result
  result.update(graph_location=graph_location, losses=[])
  with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(steps):
      batch = mnist.train.next_batch(batch_size)
      if i % 100 == 0:
        train_accuracy = accuracy.eval(feed_dict={
            x: batch[0], y_: batch[1], keep_prob: 1.0})
        print('step %d, training accuracy %g' % (i, train_accuracy))
      if i % 25 == 0:
        result['losses'].append(cross_entropy.eval(feed_dict={
            x: batch[0], y_: batch[1], keep_prob: 1.0}))
      train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})

    result['test_accuracy'] = accuracy.eval(feed_dict={
        x: mnist.test.images, y_: mnist.test.labels, keep_prob: 1.0})
    print('test accuracy %g' % result['test_accuracy'])
  train_writer.close()
  return result


def run(data_dir, argv_extra=(), **kwargs):
  global FLAGS
  parser = argparse.ArgumentParser()
  parser.add_argument('--data_dir', type=str,
                      default='/tmp/tensorflow/mnist/input_data',
                      help='Directory for storing input data')
  FLAGS, unparsed = parser.parse_known_args(['--data_dir', str(data_dir),
                                             *argv_extra])
  result = {}
  with pytest.raises(SystemExit):
    tf.app.run(main=lambda argv: main(argv, result=result, **kwargs),
               argv=[sys.argv[0]] + unparsed)
  return result


def test_mnist_deep_short(mnist_dir):
  global WIDTHS
  WIDTHS = (8, 16, 64)   # narrower layers: the default suite runs on 2 cores
  try:
    r = run(mnist_dir, steps=150, batch_size=32, test_size=500,
            learning_rate=1e-3)
  finally:
    WIDTHS = (32, 64, 1024)
  losses = r['losses']
  assert sum(losses[-2:]) / 2 < 0.5 * losses[0]   # steps 100 and 125 vs 0
  assert r['test_accuracy'] > 0.80
  # The graph went to TensorBoard: its name scopes and ops are in the event file.
  graphs = [e.graph_def for e in read_events(r['graph_location'])
            if e.HasField('graph_def')]
  assert len(graphs) == 1
  from tensorboardX.proto import graph_pb2
  names = {n.name for n in graph_pb2.GraphDef.FromString(graphs[0]).node}
  assert any(n.startswith('conv1/') for n in names)
  assert any(n.startswith('adam_optimizer/') for n in names)


@pytest.mark.slow
def test_mnist_deep_original_widths(mnist_dir):
  r = run(mnist_dir, steps=1000, batch_size=50)
  assert r['test_accuracy'] > 0.95
