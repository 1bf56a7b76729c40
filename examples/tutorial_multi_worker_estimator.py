"""TF's "Multi-worker training with Estimator" tutorial: a ``model_fn``
wrapping a small Keras convnet, an ``input_fn`` whose ``Dataset.map`` casts
and scales the MNIST images, ``MultiWorkerMirroredStrategy`` in
``RunConfig(train_distribute=...)``, ``tf.estimator.train_and_evaluate``;
one OS process per worker, each with its own ``TF_CONFIG``
(``import tensorflow as tf`` -> ``import kerasflow.compat.v1 as tf``;
``tfds.load('mnist')`` -> ``tf.keras.datasets.mnist``).

Two workers on one machine (two terminals, or ``&``), sharing ``--model_dir``::

    CLUSTER='"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:23456"]}'
    TF_CONFIG="{$CLUSTER, \\"task\\": {\\"type\\": \\"worker\\", \\"index\\": 0}}" \\
        python examples/tutorial_multi_worker_estimator.py &
    TF_CONFIG="{$CLUSTER, \\"task\\": {\\"type\\": \\"worker\\", \\"index\\": 1}}" \\
        python examples/tutorial_multi_worker_estimator.py

Each process is one replica: the workers compute the gradients of their
shares of each global batch, all-reduce them over a ring on their TF_CONFIG
addresses, and apply the same update. Worker 0 is the chief: it writes the
checkpoints to ``--model_dir`` and evaluates; the other workers only train.
One line differs from the tutorial: TF calls ``input_fn`` once per worker
for that worker's shard in batches of ``BATCH_SIZE`` (per replica), while
kerasflow's ``input_fn`` returns the global batches (every worker reads them
all: ``input_context`` names one input pipeline, so the ``shard`` keeps
everything), so it batches ``BATCH_SIZE * num_replicas_in_sync``; each
replica then trains on ``BATCH_SIZE`` rows, as in TF, and the loss the
tutorial scales by ``1 / BATCH_SIZE`` is each replica's mean.
``RunConfig(tf_random_seed=...)`` makes every worker shuffle alike (TF's
graph seed). Without ``TF_CONFIG`` the script trains in one process.

Each process prints ``RESULT {json}``; the chief's has the test accuracy and
the final global step.

Run: KERASFLOW_DATA_DIR=../shared/data python examples/tutorial_multi_worker_estimator.py
(``--train_images=25600``, two workers: 200 global batches of 128, 0.907 test
accuracy in ~10 s on 2 cores.)
"""

import argparse
import json
import os
import tempfile

import numpy as np

import kerasflow.compat.v1 as tf

BUFFER_SIZE = 10000
BATCH_SIZE = 64


def make_input_fn(train_images, batch_size=BATCH_SIZE):
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    # tfds' MNIST: uint8 images of shape (28, 28, 1), int64 labels.
    splits = {tf.estimator.ModeKeys.TRAIN: (x_train[:train_images], y_train),
              tf.estimator.ModeKeys.EVAL: (x_test, y_test)}

    def input_fn(mode, input_context=None):
        images, labels = splits[mode]
        mnist_dataset = tf.data.Dataset.from_tensor_slices(
            (images[..., None], labels[:len(images)].astype(np.int64)))

        def scale(image, label):
            image = tf.cast(image, tf.float32)
            image /= 255
            return image, label

        replicas = 1
        if input_context:
            mnist_dataset = mnist_dataset.shard(input_context.num_input_pipelines,
                                                input_context.input_pipeline_id)
            replicas = input_context.num_replicas_in_sync
        # The one change to the tutorial: TF's input_fn batches per worker,
        # kerasflow's the global batch (each worker trains on its share).
        return mnist_dataset.map(scale).cache().shuffle(BUFFER_SIZE).batch(
            batch_size * replicas)

    return input_fn


def make_model_fn(learning_rate, batch_size=BATCH_SIZE):
    def model_fn(features, labels, mode):
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        logits = model(features, training=False)

        if mode == tf.estimator.ModeKeys.PREDICT:
            predictions = {"logits": logits}
            return tf.estimator.EstimatorSpec(labels=labels, predictions=predictions)

        optimizer = tf.compat.v1.train.GradientDescentOptimizer(
            learning_rate=learning_rate)
        loss = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)(labels, logits)
        loss = tf.reduce_sum(loss) * (1. / batch_size)
        if mode == tf.estimator.ModeKeys.EVAL:
            # The tutorial reports the loss only; the accuracy says it learned.
            accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, axis=1))
            return tf.estimator.EstimatorSpec(
                mode, loss=loss, eval_metric_ops={"accuracy": accuracy})

        return tf.estimator.EstimatorSpec(
            mode=mode, loss=loss,
            train_op=optimizer.minimize(
                loss, tf.compat.v1.train.get_or_create_global_step()))

    return model_fn


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_dir", default=os.path.join(tempfile.gettempdir(),
                                                       "multiworker"))
    p.add_argument("--train_images", type=int, default=60000,
                   help="train on the first this many images (one epoch, as the "
                        "tutorial's input_fn does not repeat)")
    # The tutorial's 1e-4 shows the mechanics; 0.05 learns MNIST in one epoch.
    p.add_argument("--learning_rate", type=float, default=0.05)
    p.add_argument("--batch_size", type=int, default=BATCH_SIZE,
                   help="the batch of each replica (the tutorial's BATCH_SIZE)")
    p.add_argument("--out", default=None,
                   help="the chief saves the trained variables to OUT.npz "
                        "(sorted by name)")
    args = p.parse_args(argv)

    # Without TF_CONFIG: one process, no strategy (MultiWorkerMirroredStrategy
    # would start a one-node Ray for its one worker).
    strategy = (tf.distribute.experimental.MultiWorkerMirroredStrategy()
                if os.environ.get("TF_CONFIG") else None)
    config = tf.estimator.RunConfig(train_distribute=strategy, tf_random_seed=1)
    classifier = tf.estimator.Estimator(
        model_fn=make_model_fn(args.learning_rate, args.batch_size),
        model_dir=args.model_dir,
        config=config)
    input_fn = make_input_fn(args.train_images, args.batch_size)
    result, _ = tf.estimator.train_and_evaluate(
        classifier,
        train_spec=tf.estimator.TrainSpec(input_fn=input_fn),
        eval_spec=tf.estimator.EvalSpec(input_fn=input_fn))
    out = dict(task=getattr(strategy, "task_rank", 0),
               replicas=config.num_replicas_in_sync)
    if result is not None:
        out.update(accuracy=float(result["accuracy"]), loss=float(result["loss"]),
                   global_step=int(result["global_step"]))
        if args.out:
            names = sorted(n for n in classifier.get_variable_names()
                           if n != "global_step")
            np.savez(args.out, **{n.replace("/", "."): classifier.get_variable_value(n)
                                  for n in names})
    print("RESULT " + json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
