"""TF's "Multi-worker training with Keras" tutorial: a small convnet on MNIST,
``model.fit`` on a ``Dataset`` under ``MultiWorkerMirroredStrategy``, one OS
process per worker, each with its own ``TF_CONFIG`` (``import tensorflow as
tf`` -> ``import kerasflow as kf``; the Keras names are kerasflow's own).

Two workers on one machine (two terminals, or ``&``)::

    CLUSTER='"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:23456"]}'
    TF_CONFIG="{$CLUSTER, \\"task\\": {\\"type\\": \\"worker\\", \\"index\\": 0}}" \\
        python examples/tutorial_multi_worker_keras.py &
    TF_CONFIG="{$CLUSTER, \\"task\\": {\\"type\\": \\"worker\\", \\"index\\": 1}}" \\
        python examples/tutorial_multi_worker_keras.py

On two hosts, their addresses in the cluster and the same
``$KERASFLOW_CLUSTER_SECRET`` on both (``kerasflow/distribute/job_secret.py``).
Without ``TF_CONFIG`` the same script trains in one process (the tutorial's
single-worker start). As in the tutorial the global batch is
``per_worker_batch_size * num_workers``; each worker sets no thread
variables, so each takes its share of the host's cores (cores // the
cluster's tasks on this host; ``distribute/task_threads.py``).

Every worker prints ``RESULT {json}``: the global batch, the samples/s of the
timed epochs (every epoch after the first, which builds the step), the final
loss, and on the chief (worker 0) the test accuracy. The chief saves the model
to ``--model_path``; the other workers save to a temporary folder and delete
it (the tutorial's ``write_filepath``).

Run: KERASFLOW_DATA_DIR=../shared/data python examples/tutorial_multi_worker_keras.py
(3 epochs of 70 steps: 0.919 test accuracy in one process, global batch 64;
0.919 with two workers, global batch 128; ~10 s each on 2 cores.
``benchmarks/bench_tutorial_multi_worker.py`` compares their samples/s.)
"""

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np

import kerasflow as kf


def mnist_dataset(batch_size):
    (x_train, y_train), _ = kf.datasets.mnist.load_data()
    # The `x` arrays are in uint8 and have values in the [0, 255] range.
    # You need to convert them to float32 with values in the [0, 1] range.
    x_train = x_train / np.float32(255)
    y_train = y_train.astype(np.int64)
    return kf.data.Dataset.from_tensor_slices(
        (x_train, y_train)).shuffle(60000).repeat().batch(batch_size)


def test_dataset(batch_size=1000):
    _, (x_test, y_test) = kf.datasets.mnist.load_data()
    return kf.data.Dataset.from_tensor_slices(
        (x_test / np.float32(255), y_test.astype(np.int64))).batch(batch_size)


def build_and_compile_cnn_model(learning_rate):
    model = kf.Sequential([
        kf.layers.InputLayer(input_shape=(28, 28)),
        kf.layers.Reshape(target_shape=(28, 28, 1)),
        kf.layers.Conv2D(32, 3, activation="relu"),
        kf.layers.Flatten(),
        kf.layers.Dense(128, activation="relu"),
        kf.layers.Dense(10),
    ])
    model.compile(loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=kf.optimizers.SGD(learning_rate=learning_rate),
                  metrics=["accuracy"])
    return model


class Throughput(kf.callbacks.Callback):
    """Samples/s of every epoch after the first (the first builds the step)."""

    def __init__(self, global_batch, steps_per_epoch):
        super().__init__()
        self.samples = global_batch * steps_per_epoch
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._t0 = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._t0)

    def rate(self):
        timed = self.seconds[1:] or self.seconds
        return self.samples * len(timed) / sum(timed)


def write_filepath(model_path, task_type, task_id):
    """The chief writes to ``model_path``; the others to a temporary folder."""
    if task_type is None or task_type == "chief" or (
            task_type == "worker" and task_id == 0):
        return model_path
    return os.path.join(tempfile.mkdtemp(), os.path.basename(model_path))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps_per_epoch", type=int, default=70)
    p.add_argument("--per_worker_batch_size", type=int, default=64)
    # The tutorial's 0.001 shows the mechanics; 0.05 reaches ~0.9 in 210 steps.
    p.add_argument("--learning_rate", type=float, default=0.05)
    p.add_argument("--model_path", default=None,
                   help="the chief saves the trained model here (.keras)")
    args = p.parse_args(argv)

    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    num_workers = len(tf_config.get("cluster", {}).get("worker", [])) or 1
    task = tf_config.get("task", {})
    # Without TF_CONFIG: one process, the default strategy (TF's would be a
    # one-worker MultiWorkerMirroredStrategy; kerasflow's would start Ray).
    strategy = (kf.distribute.MultiWorkerMirroredStrategy() if tf_config
                else kf.distribute.get_strategy())
    # Every worker reads the same shuffled global batches and keeps its share
    # of each (tf.data's DATA auto-sharding): the workers must seed alike.
    kf.utils.set_random_seed(1)
    global_batch_size = args.per_worker_batch_size * num_workers
    options = kf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        kf.data.experimental.AutoShardPolicy.DATA)
    multi_worker_dataset = mnist_dataset(global_batch_size).with_options(options)
    with strategy.scope():
        # Model building/compiling need to be within `strategy.scope()`.
        multi_worker_model = build_and_compile_cnn_model(args.learning_rate)
    meter = Throughput(global_batch_size, args.steps_per_epoch)
    history = multi_worker_model.fit(multi_worker_dataset, epochs=args.epochs,
                                     steps_per_epoch=args.steps_per_epoch,
                                     callbacks=[meter], verbose=0)
    rank = getattr(strategy, "task_rank", 0)
    result = dict(task=rank, workers=num_workers, global_batch=global_batch_size,
                  samples_per_s=meter.rate(), epoch_seconds=meter.seconds,
                  loss=float(history.history["loss"][-1]),
                  threads=getattr(strategy, "threads", None))
    if rank == 0:
        result["test_accuracy"] = float(
            multi_worker_model.evaluate(test_dataset(), verbose=0)[1])
    if args.model_path:
        path = write_filepath(args.model_path, task.get("type"), task.get("index"))
        multi_worker_model.save(path)
        if path != args.model_path:
            shutil.rmtree(os.path.dirname(path))
    print("RESULT " + json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
