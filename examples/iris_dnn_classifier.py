"""Iris with a canned DNNClassifier, as the lecture wrote it (tf.estimator).

Stratified 120/30 split of iris/iris.csv (fixed seed), a [10, 20, 10] network on
one numeric feature column of shape [4], train then evaluate.

Run: KERASFLOW_DATA_DIR=../shared/data python examples/iris_dnn_classifier.py
(prints the test accuracy; >= 0.93)
"""

import os
import tempfile

import numpy as np

import kerasflow as kf


def load_iris(path, seed=0):
    """(x_train, y_train, x_test, y_test): 40 train / 10 test per class."""
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    x, y = data[:, :4].astype(np.float32), data[:, 4].astype(np.int64)
    rng = np.random.RandomState(seed)
    test = np.concatenate([rng.permutation(np.where(y == c)[0])[:10]
                           for c in range(3)])
    train = np.setdiff1d(np.arange(len(y)), test)
    return x[train], y[train], x[test], y[test]


def main(steps=2000, data=None, model_dir=None, seed=2):
    data = data or os.path.join(os.environ.get("KERASFLOW_DATA_DIR",
                                               "../shared/data"), "iris")
    x_train, y_train, x_test, y_test = load_iris(os.path.join(data, "iris.csv"), seed)

    feature_columns = [kf.feature_column.numeric_column("x", shape=[4])]
    classifier = kf.estimator.DNNClassifier(
        feature_columns=feature_columns,
        hidden_units=[10, 20, 10],
        n_classes=3,
        model_dir=model_dir or tempfile.mkdtemp(prefix="iris_model_"),
        config=kf.estimator.RunConfig(tf_random_seed=seed))

    train_input_fn = kf.estimator.inputs.numpy_input_fn(
        x={"x": x_train}, y=y_train, batch_size=32, num_epochs=None, shuffle=True,
        seed=seed)
    classifier.train(input_fn=train_input_fn, steps=steps)

    test_input_fn = kf.estimator.inputs.numpy_input_fn(
        x={"x": x_test}, y=y_test, num_epochs=1, shuffle=False)
    accuracy = classifier.evaluate(input_fn=test_input_fn)["accuracy"]
    print(f"\nTest Accuracy: {accuracy:f}\n")

    new_samples = np.array([[6.4, 3.2, 4.5, 1.5], [5.8, 3.1, 5.0, 1.7]], np.float32)
    predict_input_fn = kf.estimator.inputs.numpy_input_fn(
        x={"x": new_samples}, num_epochs=1, shuffle=False)
    classes = [p["class_ids"][0] for p in classifier.predict(predict_input_fn)]
    print(f"New Samples, Class Predictions: {classes}\n")
    return accuracy


if __name__ == "__main__":
    main()
