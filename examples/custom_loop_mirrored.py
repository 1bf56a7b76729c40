"""A custom training loop under MirroredStrategy(2), written as TF 2's guide
"Custom training with tf.distribute.Strategy" writes it: a distributed
dataset, ``strategy.run(train_step, args=(inputs,))`` and
``strategy.reduce(ReduceOp.SUM, ...)``; ``train_step`` uses a
``GradientTape``, ``compute_average_loss`` and ``optimizer.apply_gradients``.

``train_step`` is traced once and runs on the two replica actors; each
replica's loss comes back per replica, the gradients are summed across them.
Test accuracy is measured in this process after training (the weights come
back from the replicas after each step).

Run: KERASFLOW_DATA_DIR=../shared/data python examples/custom_loop_mirrored.py
(Fashion-MNIST, MLP 784-256-10, 3 epochs at global batch 128: 0.865 test
accuracy after 57 s of training on 2 cores, shared with other work.)
"""

import argparse
import time

import numpy as np

import kerasflow as kf


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch_size", type=int, default=128, help="the global batch")
    p.add_argument("--replicas", type=int, default=2)
    args = p.parse_args(argv)
    (x, y), (x_test, y_test) = kf.datasets.fashion_mnist.load_data()
    x = x.reshape(-1, 784).astype("float32") / 255.0
    x_test = x_test.reshape(-1, 784).astype("float32") / 255.0

    strategy = kf.distribute.MirroredStrategy(num_replicas=args.replicas)
    global_batch = args.batch_size
    train_ds = kf.data.Dataset.from_tensor_slices((x, y)).shuffle(
        60000, seed=1).batch(global_batch)
    dist_ds = strategy.experimental_distribute_dataset(train_ds)

    with strategy.scope():
        kf.utils.set_random_seed(1)
        model = kf.Sequential([kf.layers.Dense(256, activation="relu", input_shape=(784,)),
                               kf.layers.Dense(10)])
        loss_object = kf.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                              reduction="none")
        optimizer = kf.optimizers.Adam(1e-3)
        train_accuracy = kf.metrics.SparseCategoricalAccuracy(name="train_accuracy")

    def train_step(images, labels):
        with kf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = kf.distribute.compute_average_loss(
                loss_object(labels, logits), global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        train_accuracy.update_state(labels, logits)
        return loss

    start = time.perf_counter()
    with strategy.scope():
        for epoch in range(args.epochs):
            total, batches = 0.0, 0
            for images, labels in dist_ds:
                per_replica = strategy.run(train_step, args=(images, labels))
                total += strategy.reduce(kf.distribute.ReduceOp.SUM, per_replica)
                batches += 1
            print(f"Epoch {epoch + 1}, loss {total / batches:.4f}, train accuracy "
                  f"{float(train_accuracy.result()):.4f}", flush=True)
            train_accuracy.reset_state()
    seconds = time.perf_counter() - start
    logits = model.predict(x_test, batch_size=1000, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    print(f"Test accuracy: {accuracy:.4f} ({seconds:.0f} s of training)")
    return accuracy


if __name__ == "__main__":
    main()
