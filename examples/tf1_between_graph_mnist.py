"""The lecture's distributed TF1 program: between-graph replication, async SGD
on MNIST with 1 ps and 2 workers (``import tensorflow as tf`` ->
``import kerasflow.compat.v1 as tf``; otherwise TF 1.x's own API:
``ClusterSpec``, ``Server``, ``replica_device_setter``, ``Supervisor``).

Every task runs this same script with its own ``--job_name/--task_index``.

On 4 machines (ps on h0, workers on h1..h3; port 2222 on each)::

    # h0:  python tf1_between_graph_mnist.py --ps_hosts=h0:2222 \\
    #          --worker_hosts=h1:2222,h2:2222,h3:2222 --job_name=ps --task_index=0
    # hK:  python tf1_between_graph_mnist.py --ps_hosts=h0:2222 \\
    #          --worker_hosts=h1:2222,h2:2222,h3:2222 --job_name=worker --task_index=K-1

The ps task 0 starts a Ray head whose GCS listens on h0:2222; the workers
join it (each of their hosts joins the Ray cluster as a node). Open h0:2222
to the workers, and Ray's node ports between all hosts (object manager,
node manager, worker ports 10002-19999 by default). The workers' own ports
are only names. With a Ray cluster already running, set ``RAY_ADDRESS`` on
every task and it is joined instead.

On one machine (three terminals, or ``&``)::

    python examples/tf1_between_graph_mnist.py --job_name=ps --task_index=0 &
    python examples/tf1_between_graph_mnist.py --job_name=worker --task_index=0 &
    python examples/tf1_between_graph_mnist.py --job_name=worker --task_index=1
    kill %1     # the ps serves until SIGTERM/SIGINT, then stops its Ray

``--sync_replicas`` wraps the optimizer in ``tf.train.SyncReplicasOptimizer``
(one gradient per worker averaged per step; global step = aggregated steps).
``--monitored`` uses ``tf.train.MonitoredTrainingSession`` (the chief
restores from / checkpoints into ``logs_path/ckpt``; a restarted chief
resumes). ``--job_name=single`` trains the same model in one process with a plain
``tf.Session()`` (the baseline). Each worker prints ``RESULT {json}``:
its steps, the final global step, test accuracy, steps/s and the share of
its ``sess.run`` time spent pulling and pushing ps variables.
"""

import argparse
import json
import time

import numpy as np

import kerasflow.compat.v1 as tf
from kerasflow.datasets import mnist


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ps_hosts", default="127.0.0.1:2222")
    p.add_argument("--worker_hosts", default="127.0.0.1:2223,127.0.0.1:2224")
    p.add_argument("--job_name", default="worker", help="ps | worker | single")
    p.add_argument("--task_index", type=int, default=0)
    p.add_argument("--steps", type=int, default=300, help="batches per worker")
    p.add_argument("--batch_size", type=int, default=100)
    p.add_argument("--learning_rate", type=float, default=0.5)
    p.add_argument("--logs_path", default="/tmp/kf_mnist_between_graph")
    p.add_argument("--sync_replicas", action="store_true",
                   help="SyncReplicasOptimizer: aggregate one gradient per worker")
    p.add_argument("--replicas_to_aggregate", type=int, default=None,
                   help="with --sync_replicas: gradients per step (default: "
                        "every worker's)")
    p.add_argument("--monitored", action="store_true",
                   help="MonitoredTrainingSession(checkpoint_dir=logs_path/ckpt, "
                        "StopAtStepHook(last_step=steps * workers)) instead of "
                        "a Supervisor")
    p.add_argument("--save_steps", type=int, default=50,
                   help="with --monitored: the chief's checkpoint interval")
    p.add_argument("--clip_norm", type=float, default=None,
                   help="compute_gradients, clip_by_global_norm, apply_gradients "
                        "instead of minimize")
    p.add_argument("--log_every", type=int, default=100,
                   help="print progress every this many steps")
    return p.parse_args(argv)


def load_mnist():
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    x_train = x_train.reshape(-1, 784).astype(np.float32) / 255.0
    x_test = x_test.reshape(-1, 784).astype(np.float32) / 255.0
    eye = np.eye(10, dtype=np.float32)
    return x_train, eye[y_train], x_test, eye[y_test]


def build_model(learning_rate, sync_replicas=0, to_aggregate=None, clip_norm=None):
    """The lecture's model: 784-100 sigmoid-10 softmax, cross entropy, SGD."""
    global_step = tf.get_variable("global_step", [], dtype=tf.int64,
                                  initializer=tf.constant_initializer(0),
                                  trainable=False)
    with tf.name_scope("input"):
        x = tf.placeholder(tf.float32, shape=[None, 784], name="x-input")
        y_ = tf.placeholder(tf.float32, shape=[None, 10], name="y-input")
    tf.set_random_seed(1)
    with tf.name_scope("weights"):
        W1 = tf.Variable(tf.truncated_normal([784, 100], stddev=0.1))
        W2 = tf.Variable(tf.truncated_normal([100, 10], stddev=0.1))
    with tf.name_scope("biases"):
        b1 = tf.Variable(tf.zeros([100]))
        b2 = tf.Variable(tf.zeros([10]))
    with tf.name_scope("softmax"):
        a2 = tf.nn.sigmoid(tf.add(tf.matmul(x, W1), b1))
        y = tf.nn.softmax(tf.add(tf.matmul(a2, W2), b2))
    with tf.name_scope("cross_entropy"):
        cross_entropy = tf.reduce_mean(
            -tf.reduce_sum(y_ * tf.log(y + 1e-10), reduction_indices=[1]))
    with tf.name_scope("train"):
        grad_op = tf.train.GradientDescentOptimizer(learning_rate)
        if sync_replicas:
            grad_op = tf.train.SyncReplicasOptimizer(
                grad_op, replicas_to_aggregate=to_aggregate or sync_replicas,
                total_num_replicas=sync_replicas)
        if clip_norm is None:
            train_op = grad_op.minimize(cross_entropy, global_step=global_step)
        else:
            grads, variables = zip(*grad_op.compute_gradients(cross_entropy))
            grads, _ = tf.clip_by_global_norm(grads, clip_norm)
            train_op = grad_op.apply_gradients(zip(grads, variables),
                                               global_step=global_step)
    with tf.name_scope("Accuracy"):
        correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    tf.summary.scalar("cost", cross_entropy)
    tf.summary.scalar("accuracy", accuracy)
    return dict(global_step=global_step, x=x, y_=y_, train_op=train_op,
                cross_entropy=cross_entropy, accuracy=accuracy,
                summary_op=tf.summary.merge_all(),
                init_op=tf.global_variables_initializer())


def train(sess, m, data, args, writer, task, num_workers, should_stop=None):
    """Runs this worker's batches: ``args.steps`` of them, or until
    ``should_stop()`` (a MonitoredTrainingSession's stop hook)."""
    x_train, y_train, x_test, y_test = data
    n, bs = len(x_train), args.batch_size
    step = i = 0
    first = int(sess.run(m["global_step"]))
    print(f"START task {task} global_step {first}", flush=True)
    t0 = time.perf_counter()
    while (i < args.steps) if should_stop is None else not should_stop():
        at = ((i * num_workers + task) * bs) % (n - bs)  # this worker's batches
        _, cost, summary, step = sess.run(
            [m["train_op"], m["cross_entropy"], m["summary_op"], m["global_step"]],
            feed_dict={m["x"]: x_train[at:at + bs], m["y_"]: y_train[at:at + bs]})
        writer.add_summary(summary, step)
        i += 1
        if i % args.log_every == 0:
            print(f"Step: {i}, global_step: {step}, cost: {cost:.4f}", flush=True)
    seconds = time.perf_counter() - t0
    acc = float(sess.run(m["accuracy"], feed_dict={m["x"]: x_test, m["y_"]: y_test}))
    final = int(sess.run(m["global_step"]))
    timing = getattr(sess, "timing", None)
    result = dict(task=task, steps=i, global_step=final, accuracy=acc,
                  first_global_step=first, steps_per_s=i / seconds, cost=float(cost))
    if timing:
        total = timing["pull"] + timing["compute"] + timing["push"]
        result.update(pull_share=timing["pull"] / total,
                      push_share=timing["push"] / total)
    print("RESULT " + json.dumps(result), flush=True)
    return result


def main(argv=None):
    args = parse_args(argv)
    data = load_mnist()
    if args.job_name == "single":
        m = build_model(args.learning_rate)
        with tf.Session() as sess:
            sess.run(m["init_op"])
            writer = tf.summary.FileWriter(args.logs_path + "/single", sess.graph)
            train(sess, m, data, args, writer, 0, 1)
            writer.close()
        return
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","),
                                    "worker": args.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=args.job_name,
                             task_index=args.task_index)
    if args.job_name == "ps":
        print(f"Serving {server.target} (/job:ps/task:{args.task_index})", flush=True)
        server.join()
        return
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % args.task_index, cluster=cluster)):
        num_workers = cluster.num_tasks("worker")
        m = build_model(args.learning_rate,
                        num_workers if args.sync_replicas else 0,
                        args.replicas_to_aggregate, args.clip_norm)
    logdir = args.logs_path + "/worker%d" % args.task_index
    if args.monitored:
        hooks = [tf.train.StopAtStepHook(last_step=args.steps * num_workers)]
        with tf.train.MonitoredTrainingSession(
                master=server.target, is_chief=(args.task_index == 0),
                checkpoint_dir=args.logs_path + "/ckpt", hooks=hooks,
                save_checkpoint_steps=args.save_steps) as sess:
            writer = tf.summary.FileWriter(logdir, graph=tf.get_default_graph())
            train(sess, m, data, args, writer, args.task_index, num_workers,
                  sess.should_stop)
            writer.close()
        server.stop()
        return
    sv = tf.train.Supervisor(is_chief=(args.task_index == 0),
                             global_step=m["global_step"], init_op=m["init_op"])
    with sv.prepare_or_wait_for_session(server.target) as sess:
        writer = tf.summary.FileWriter(logdir, graph=tf.get_default_graph())
        train(sess, m, data, args, writer, args.task_index, num_workers)
        writer.close()
    sv.stop()
    server.stop()


if __name__ == "__main__":
    main()
