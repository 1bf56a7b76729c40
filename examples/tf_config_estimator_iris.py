"""A TF 1.x distributed Estimator program: the canned DNNClassifier on iris,
``tf.estimator.train_and_evaluate`` in one process per task, the cluster
given by ``TF_CONFIG`` (``import tensorflow as tf`` ->
``import kerasflow.compat.v1 as tf``; otherwise TF 1.x's own API).

Every task runs this same script with its own ``TF_CONFIG``; all of them
share ``--model_dir`` (a shared file system across hosts)::

    CLUSTER='"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222"], "ps": ["h2:2222"]}'
    # h2:  TF_CONFIG="{$CLUSTER, \\"task\\": {\\"type\\": \\"ps\\", \\"index\\": 0}}" python ...
    # h0:  ... \\"type\\": \\"chief\\" ...;  h1: ... \\"type\\": \\"worker\\" ...
    # h3:  ... \\"type\\": \\"evaluator\\" ...  (not in the cluster, reads model_dir)

The ps task 0 starts a Ray head on its ClusterSpec address (open that port
and Ray's node ports between the hosts, as ``tf1_between_graph_mnist.py``
says); chief and worker join it, pull the variables from the ps and push
gradients (async); the chief writes checkpoints; the evaluator evaluates
each new checkpoint and prints ``RESULT {json}`` with the final accuracy.
The ps serves until SIGTERM/SIGINT. Without TF_CONFIG the same script
trains and evaluates in one process.

Run: KERASFLOW_DATA_DIR=../shared/data python examples/tf_config_estimator_iris.py
"""

import argparse
import json
import os
import tempfile

import numpy as np

import kerasflow.compat.v1 as tf

COLUMNS = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth"]


def load_data(path, seed=0):
    """Stratified 120/30 split of iris.csv: ((features, labels), (features, labels))."""
    rows = tf.data.experimental.CsvDataset(path, [np.float32] * 4 + [np.int64],
                                           header=True)
    *columns, y = (np.stack(c) for c in zip(*rows))
    rng = np.random.RandomState(seed)
    test = np.concatenate([rng.permutation(np.where(y == c)[0])[:10]
                           for c in range(3)])
    train = np.setdiff1d(np.arange(len(y)), test)
    return [({n: c[r] for n, c in zip(COLUMNS, columns)}, y[r]) for r in (train, test)]


class StepCounter(tf.train.SessionRunHook):
    """Counts the training steps this task ran (its share of global_step)."""

    def __init__(self):
        self.steps = 0

    def after_run(self, run_context, run_values):
        self.steps += 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_dir", default=os.path.join(tempfile.gettempdir(),
                                                       "kf_tf_config_iris"))
    p.add_argument("--max_steps", type=int, default=1500)
    p.add_argument("--batch_size", type=int, default=32)
    args = p.parse_args(argv)
    data = os.path.join(os.environ.get("KERASFLOW_DATA_DIR", "../shared/data"),
                        "iris", "iris.csv")
    (train_x, train_y), (test_x, test_y) = load_data(data)

    config = tf.estimator.RunConfig(model_dir=args.model_dir, tf_random_seed=2,
                                    save_checkpoints_steps=250)
    classifier = tf.estimator.DNNClassifier(
        feature_columns=[tf.feature_column.numeric_column(k) for k in COLUMNS],
        hidden_units=[10, 10], n_classes=3, config=config)

    def train_input_fn():
        ds = tf.data.Dataset.from_tensor_slices((dict(train_x), train_y))
        # Each task shuffles with its own seed: different batches per worker.
        return ds.shuffle(1000, seed=config.task_id).repeat().batch(args.batch_size)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices((dict(test_x), test_y)).batch(100)

    counter = StepCounter()
    train_spec = tf.estimator.TrainSpec(train_input_fn, max_steps=args.max_steps,
                                        hooks=[counter])
    eval_spec = tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0,
                                      throttle_secs=0)
    result, _ = tf.estimator.train_and_evaluate(classifier, train_spec, eval_spec)
    if result is not None:
        print("RESULT " + json.dumps({"task": config.task_type,
                                      "accuracy": float(result["accuracy"]),
                                      "global_step": int(result["global_step"])}),
              flush=True)
    elif config.task_type != "ps":
        print("RESULT " + json.dumps({"task": config.task_type,
                                      "local_steps": counter.steps}), flush=True)
    return result


if __name__ == "__main__":
    main()
