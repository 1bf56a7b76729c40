"""A TF 2 custom loop that checkpoints every step with ``tf.train.Checkpoint``
and ``CheckpointManager`` and resumes where it stopped when restarted (kill it
at any point: the newest complete checkpoint is restored).

Run: python examples/checkpoint_custom_loop.py --dir /tmp/kf_ckpt --steps 40
(run it again after a Ctrl-C or kill -9: it resumes; synthetic data, ~2 s.)
"""

import argparse
import json

import numpy as np

import kerasflow as kf


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--out", default=None, help="save the final weights here (.npz)")
    args = p.parse_args(argv)
    kf.backend.set_floatx("float64")
    rng = np.random.RandomState(0)
    x = rng.standard_normal((512, 6))
    y = (x[:, 0] - x[:, 2] > 0).astype("int64")

    kf.utils.set_random_seed(3)
    model = kf.Sequential([kf.layers.Dense(8, activation="tanh", input_shape=(6,)),
                           kf.layers.Dense(2)])
    optimizer = kf.optimizers.Adam(0.01)
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    step = kf.Variable(0, dtype="int64", trainable=False, name="step")
    ckpt = kf.train.Checkpoint(step=step, optimizer=optimizer, model=model)
    manager = kf.train.CheckpointManager(ckpt, args.dir, max_to_keep=3)
    restored = manager.restore_or_initialize()
    print(f"START step {int(step.numpy())} from {restored}", flush=True)
    while int(step.numpy()) < args.steps:
        i = int(step.numpy())
        rows = slice((i * 32) % 512, (i * 32) % 512 + 32)  # batch i: a function of i
        with kf.GradientTape() as tape:
            loss = loss_fn(y[rows], model(x[rows], training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        step.assign(i + 1)
        manager.save()
        print(f"STEP {i + 1} loss {float(loss):.6f}", flush=True)
    if args.out:
        np.savez(args.out, *model.get_weights())
    print("RESULT " + json.dumps({"step": int(step.numpy()),
                                  "kept": len(manager.checkpoints)}), flush=True)


if __name__ == "__main__":
    main()
