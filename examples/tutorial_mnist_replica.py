"""TF's distributed MNIST program ``mnist_replica.py`` (TF 1.x
``tensorflow/tools/dist_test/python``): between-graph replication, one
hidden layer built with ``tf.nn.xw_plus_b``, Adam, a ``tf.train.Supervisor``
loop, async or ``--sync_replicas`` (``import tensorflow as tf`` ->
``import kerasflow.compat.v1 as tf``; otherwise TF 1.x's own API).

Every task runs this same script with its own ``--job_name/--task_index``;
on one machine, 1 ps and 2 workers (three terminals, or ``&``)::

    H="--ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224"
    python examples/tutorial_mnist_replica.py $H --job_name=ps --task_index=0 &
    python examples/tutorial_mnist_replica.py $H --job_name=worker --task_index=0 &
    python examples/tutorial_mnist_replica.py $H --job_name=worker --task_index=1
    kill %1     # the ps serves until SIGTERM/SIGINT

The ps task 0 starts a Ray head on its ClusterSpec address and the workers
join it (``examples/tf1_between_graph_mnist.py`` says which ports to open
across hosts); variables live on the ps, the workers pull them and push
gradients. Training stops when the shared ``global_step`` reaches
``--train_steps``; each worker then prints the validation cross entropy
(TF's last line) and ``RESULT {json}`` with its local steps, the final
global step and the test accuracy.

Run: KERASFLOW_DATA_DIR=../shared/data (200 global steps of 100 images:
0.937 test accuracy async, 0.956 with ``--sync_replicas``; ~30 s in all, most
of it the ps task's Ray head starting).
"""

import argparse
import json
import math
import sys
import tempfile
import time

import numpy as np

import kerasflow.compat.v1 as tf
from kerasflow.datasets import mnist

IMAGE_PIXELS = 28


class DataSet:
    """TF1's ``input_data`` DataSet: ``next_batch`` over a reshuffled epoch."""

    def __init__(self, images, labels, seed):
        self.images, self.labels = images, labels
        self._rng = np.random.RandomState(seed)
        self._order, self._at = self._rng.permutation(len(images)), 0

    def next_batch(self, batch_size):
        if self._at + batch_size > len(self._order):
            self._order, self._at = self._rng.permutation(len(self.images)), 0
        rows = self._order[self._at:self._at + batch_size]
        self._at += batch_size
        return self.images[rows], self.labels[rows]


def read_data_sets(seed):
    """MNIST as TF1's ``input_data.read_data_sets(one_hot=True)``: the first
    5,000 training images are the validation set."""
    (x, y), (x_test, y_test) = mnist.load_data()
    eye = np.eye(10, dtype=np.float32)
    x = x.reshape(-1, 784).astype(np.float32) / 255.0
    x_test = x_test.reshape(-1, 784).astype(np.float32) / 255.0
    return argparse.Namespace(train=DataSet(x[5000:], eye[y[5000:]], seed),
                              validation=DataSet(x[:5000], eye[y[:5000]], seed),
                              test=DataSet(x_test, eye[y_test], seed))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task_index", type=int, default=None,
                   help="Worker task index, should be >= 0. task_index=0 is the "
                        "master worker task that performs the variable "
                        "initialization")
    p.add_argument("--replicas_to_aggregate", type=int, default=None,
                   help="Number of replicas to aggregate before parameter update "
                        "is applied (for sync_replicas mode only; default: "
                        "num_workers)")
    p.add_argument("--hidden_units", type=int, default=100,
                   help="Number of units in the hidden layer of the NN")
    p.add_argument("--train_steps", type=int, default=200,
                   help="Number of (global) training steps to perform")
    p.add_argument("--batch_size", type=int, default=100, help="Training batch size")
    p.add_argument("--learning_rate", type=float, default=0.01, help="Learning rate")
    p.add_argument("--sync_replicas", action="store_true",
                   help="Use the sync_replicas (synchronized replicas) mode, "
                        "wherein the parameter updates from workers are "
                        "aggregated before applied to avoid stale gradients")
    p.add_argument("--ps_hosts", default="127.0.0.1:2222",
                   help="Comma-separated list of hostname:port pairs")
    p.add_argument("--worker_hosts", default="127.0.0.1:2223,127.0.0.1:2224",
                   help="Comma-separated list of hostname:port pairs")
    p.add_argument("--job_name", default=None, help="job name: worker or ps")
    p.add_argument("--train_dir", default=None,
                   help="the Supervisor's logdir (default: a new temporary folder)")
    return p.parse_args(argv)


def main(argv=None):
    FLAGS = parse_args(argv)
    if FLAGS.job_name is None or FLAGS.job_name == "":
        raise ValueError("Must specify an explicit `job_name`")
    if FLAGS.task_index is None or FLAGS.task_index == "":
        raise ValueError("Must specify an explicit `task_index`")
    print("job name = %s" % FLAGS.job_name)
    print("task index = %d" % FLAGS.task_index)

    # Construct the cluster and start the server
    ps_spec = FLAGS.ps_hosts.split(",")
    worker_spec = FLAGS.worker_hosts.split(",")
    num_workers = len(worker_spec)
    cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name,
                             task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return None

    mnist_data = read_data_sets(seed=FLAGS.task_index)
    is_chief = FLAGS.task_index == 0
    worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index
    # The device setter will automatically place Variables ops on separate
    # parameter servers (ps). The non-Variable ops will be placed on the workers.
    with tf.device(tf.train.replica_device_setter(
            worker_device=worker_device, ps_device="/job:ps/cpu:0",
            cluster=cluster)):
        tf.set_random_seed(1)
        global_step = tf.Variable(0, name="global_step", trainable=False)

        # Variables of the hidden layer
        hid_w = tf.Variable(
            tf.truncated_normal([IMAGE_PIXELS * IMAGE_PIXELS, FLAGS.hidden_units],
                                stddev=1.0 / IMAGE_PIXELS), name="hid_w")
        hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")

        # Variables of the softmax layer
        sm_w = tf.Variable(
            tf.truncated_normal([FLAGS.hidden_units, 10],
                                stddev=1.0 / math.sqrt(FLAGS.hidden_units)),
            name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")

        # Ops: located on the worker specified with FLAGS.task_index
        x = tf.placeholder(tf.float32, [None, IMAGE_PIXELS * IMAGE_PIXELS])
        y_ = tf.placeholder(tf.float32, [None, 10])

        hid_lin = tf.nn.xw_plus_b(x, hid_w, hid_b)
        hid = tf.nn.relu(hid_lin)

        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
        correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

        opt = tf.train.AdamOptimizer(FLAGS.learning_rate)

        if FLAGS.sync_replicas:
            if FLAGS.replicas_to_aggregate is None:
                replicas_to_aggregate = num_workers
            else:
                replicas_to_aggregate = FLAGS.replicas_to_aggregate

            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=replicas_to_aggregate,
                total_num_replicas=num_workers, name="mnist_sync_replicas")

        train_step = opt.minimize(cross_entropy, global_step=global_step)

        if FLAGS.sync_replicas:
            local_init_op = opt.local_step_init_op
            if is_chief:
                local_init_op = opt.chief_init_op

            ready_for_local_init_op = opt.ready_for_local_init_op

            # Initial token and chief queue runners required by the sync_replicas mode
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()

        init_op = tf.global_variables_initializer()
        train_dir = FLAGS.train_dir or tempfile.mkdtemp()

        if FLAGS.sync_replicas:
            sv = tf.train.Supervisor(
                is_chief=is_chief, logdir=train_dir, init_op=init_op,
                local_init_op=local_init_op,
                ready_for_local_init_op=ready_for_local_init_op,
                recovery_wait_secs=1, global_step=global_step)
        else:
            sv = tf.train.Supervisor(
                is_chief=is_chief, logdir=train_dir, init_op=init_op,
                recovery_wait_secs=1, global_step=global_step)

        sess_config = tf.ConfigProto(
            allow_soft_placement=True, log_device_placement=False,
            device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])

        # The chief worker (task_index==0) session will prepare the session,
        # while the remaining workers will wait for the preparation to complete.
        if is_chief:
            print("Worker %d: Initializing session..." % FLAGS.task_index)
        else:
            print("Worker %d: Waiting for session to be initialized..." %
                  FLAGS.task_index)

        sess = sv.prepare_or_wait_for_session(server.target, config=sess_config)

        print("Worker %d: Session initialization complete." % FLAGS.task_index)

        if FLAGS.sync_replicas and is_chief:
            # Chief worker will start the chief queue runner and call the init op.
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])

        # Perform training
        time_begin = time.time()
        print("Training begins @ %f" % time_begin)

        local_step = 0
        while True:
            # Training feed
            batch_xs, batch_ys = mnist_data.train.next_batch(FLAGS.batch_size)
            train_feed = {x: batch_xs, y_: batch_ys}

            _, step = sess.run([train_step, global_step], feed_dict=train_feed)
            local_step += 1

            now = time.time()
            print("%f: Worker %d: training step %d done (global step: %d)" %
                  (now, FLAGS.task_index, local_step, step))

            if step >= FLAGS.train_steps:
                break

        time_end = time.time()
        print("Training ends @ %f" % time_end)
        training_time = time_end - time_begin
        print("Training elapsed time: %f s" % training_time)

        # Validation feed
        val_feed = {x: mnist_data.validation.images, y_: mnist_data.validation.labels}
        val_xent = sess.run(cross_entropy, feed_dict=val_feed)
        print("After %d training step(s), validation cross entropy = %g" %
              (FLAGS.train_steps, val_xent))
        test_feed = {x: mnist_data.test.images, y_: mnist_data.test.labels}
        test_accuracy, final_step = sess.run([accuracy, global_step],
                                             feed_dict=test_feed)
        result = dict(task=FLAGS.task_index, local_steps=local_step,
                      global_step=int(final_step), test_accuracy=float(test_accuracy),
                      validation_cross_entropy=float(val_xent),
                      seconds=training_time)
        print("RESULT " + json.dumps(result), flush=True)
    sv.stop()
    server.stop()
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
