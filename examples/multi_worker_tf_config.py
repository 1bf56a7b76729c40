"""Multi-worker training as TF's multi-worker guide launches it: the same
script once per worker, each with its own ``TF_CONFIG``; each process is one
replica of ``MultiWorkerMirroredStrategy`` (kerasflow's SPMD mode).

On two machines (port 12345 open between them)::

    # h0:  TF_CONFIG='{"cluster": {"worker": ["h0:12345", "h1:12345"]},
    #                  "task": {"type": "worker", "index": 0}}' python multi_worker_tf_config.py
    # h1:  ... "task": {"type": "worker", "index": 1} ...

On one machine, two terminals (or ``&``) with 127.0.0.1 addresses; each
process takes its share of the cores for its BLAS and numba threads (cores
// the tasks on this host, logged once; ``OMP_NUM_THREADS`` set by you wins).
Without
``TF_CONFIG`` the script trains in one process on the same global batches
(the baseline). The processes find each other through the TF_CONFIG
addresses (each task's gradient ring listens on its own address); no Ray is
started. Every task trains on its share of each global batch and ends with
the same weights; the chief (task 0) prints the test accuracy and, with
``--out``, every task saves its weights to ``OUT.task<N>.npz``. ``RESULT``
names what summed the gradients (``transport``: ``shm`` when every task is on
this host, else ``tcp``; ``KERASFLOW_COLLECTIVE=tcp`` keeps the TCP ring).

Run: KERASFLOW_DATA_DIR=../shared/data python examples/multi_worker_tf_config.py
(MNIST, 784-128-10, 3 epochs of 12,000 samples, global batch 64: ~0.93
test accuracy in ~10 s per process on 2 cores.)
"""

import argparse
import json
import os

import numpy as np

import kerasflow as kf


def train_estimator(args, strategy, rank, x, y, x_test, y_test):
    """The same job as an Estimator: ``train_and_evaluate`` with the strategy
    in ``RunConfig(train_distribute=...)``; the chief checkpoints and
    evaluates, the other workers only train."""
    default = kf.distribute.get_strategy()
    config = kf.estimator.RunConfig(
        model_dir=args.estimator_dir, tf_random_seed=7, save_checkpoints_steps=50,
        train_distribute=None if strategy is default else strategy)
    est = kf.estimator.DNNClassifier(
        hidden_units=[64], n_classes=10, config=config,
        feature_columns=[kf.feature_column.numeric_column("x", shape=(784,))],
        optimizer=kf.optimizers.SGD(0.1))
    steps = args.epochs * (len(x) // args.batch_size)

    def train_input_fn():
        return kf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(
            args.batch_size)

    def eval_input_fn():
        return kf.data.Dataset.from_tensor_slices(({"x": x_test}, y_test)).batch(1000)

    result, _ = kf.estimator.train_and_evaluate(
        est, kf.estimator.TrainSpec(train_input_fn, max_steps=steps),
        kf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=10 ** 6))
    out = dict(task=rank, replicas=strategy.num_replicas_in_sync)
    if result is not None:
        out.update(test_accuracy=float(result["accuracy"]),
                   global_step=int(result["global_step"]))
    if args.out and rank == 0:  # the chief's checkpoint holds the job's weights
        names = [n for n in est.get_variable_names() if "dnn/" in n]
        np.savez(f"{args.out}.task{rank}.npz", *[est.get_variable_value(n) for n in names])
    print("RESULT " + json.dumps(out), flush=True)
    return out


def train_custom_loop(args, strategy, rank, x, y):
    """The same job as a custom loop: ``strategy.run(train_step)`` on the
    distributed dataset; each process runs its share of every global batch."""
    kf.utils.set_random_seed(7)
    with strategy.scope():
        model = kf.Sequential([kf.layers.Dense(128, activation="relu", input_shape=(784,)),
                               kf.layers.Dense(10)])
        optimizer = kf.optimizers.SGD(0.1, momentum=0.9)
        loss_obj = kf.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                           reduction="none")

    def train_step(images, labels):
        with kf.GradientTape() as tape:
            loss = kf.distribute.compute_average_loss(
                loss_obj(labels, model(images, training=True)),
                global_batch_size=args.batch_size)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    ds = kf.data.Dataset.from_tensor_slices((x, y)).batch(args.batch_size)
    losses = []
    with strategy.scope():
        for _ in range(args.epochs):
            total = 0.0
            for images, labels in strategy.experimental_distribute_dataset(ds):
                per_replica = strategy.run(train_step, args=(images, labels))
                total += strategy.reduce(kf.distribute.ReduceOp.SUM, per_replica)
            losses.append(total)
    if args.out:
        np.savez(f"{args.out}.task{rank}.npz", *model.get_weights())
    out = dict(task=rank, replicas=strategy.num_replicas_in_sync, loss=losses,
               transport=getattr(strategy, "transport", None))
    print("RESULT " + json.dumps(out), flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=12000)
    p.add_argument("--batch_size", type=int, default=64, help="the global batch")
    p.add_argument("--float64", action="store_true")
    p.add_argument("--out", default=None)
    p.add_argument("--log_epochs", action="store_true", help="print EPOCH n lines")
    p.add_argument("--estimator_dir", default=None,
                   help="train a canned DNNClassifier there with train_and_evaluate "
                        "(RunConfig(train_distribute=strategy)) instead of fit")
    p.add_argument("--custom_loop", action="store_true",
                   help="train with strategy.run(train_step) instead of fit")
    p.add_argument("--backup_dir", default=None,
                   help="BackupAndRestore: a restarted job resumes from the last epoch")
    args = p.parse_args(argv)
    if args.float64:
        kf.backend.set_floatx("float64")
    (x, y), (x_test, y_test) = kf.datasets.mnist.load_data()
    dtype = kf.backend.floatx()
    x = x[:args.samples].reshape(-1, 784).astype(dtype) / 255.0
    y = y[:args.samples]
    x_test = x_test.reshape(-1, 784).astype(dtype) / 255.0

    strategy = (kf.distribute.MultiWorkerMirroredStrategy()
                if os.environ.get("TF_CONFIG") else kf.distribute.get_strategy())
    rank = getattr(strategy, "task_rank", 0)
    if args.estimator_dir:
        return train_estimator(args, strategy, rank, x, y, x_test, y_test)
    if args.custom_loop:
        return train_custom_loop(args, strategy, rank, x, y)
    kf.utils.set_random_seed(7)  # the same initial weights and shuffles everywhere
    with strategy.scope():
        model = kf.Sequential([kf.layers.Dense(128, activation="relu", input_shape=(784,)),
                               kf.layers.Dense(10)])
        model.compile(optimizer=kf.optimizers.SGD(0.1, momentum=0.9),
                      loss=kf.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        log = kf.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: print(f"EPOCH {epoch}", flush=True))
        callbacks = [log] if args.log_epochs else []
        if args.backup_dir:
            callbacks.append(kf.callbacks.BackupAndRestore(args.backup_dir))
        hist = model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs,
                         verbose=0, callbacks=callbacks)
    result = dict(task=rank, replicas=strategy.num_replicas_in_sync,
                  loss=[float(v) for v in hist.history["loss"]],
                  transport=getattr(strategy, "transport", None))
    if rank == 0:
        result["test_accuracy"] = float(model.evaluate(x_test, y_test, verbose=0)[1])
    if args.out:
        np.savez(f"{args.out}.task{rank}.npz", *model.get_weights())
    print("RESULT " + json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
