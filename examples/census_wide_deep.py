"""Wide & deep on the Adult census data with TF's tutorial feature columns.

The wide part (FTRL) sees the sparse base columns and their crosses
(education x occupation, age buckets x education x occupation, native country
x occupation); the deep part (Adagrad, [100, 50]) sees indicator and embedding
columns plus the continuous features. Trained on adult.data, evaluated on
adult.test (TF's ``wide_deep`` tutorial).

Run: KERASFLOW_DATA_DIR=../shared/data python examples/census_wide_deep.py
(prints the test accuracy; >= 0.84)
"""

import csv
import os
import tempfile

import numpy as np

import kerasflow as kf

fc = kf.feature_column

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num",
           "marital_status", "occupation", "relationship", "race", "gender",
           "capital_gain", "capital_loss", "hours_per_week", "native_country",
           "income_bracket"]
NUMERIC = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]


def load_adult(path):
    """(features dict, labels 0/1) of one Adult file; '?' stays a category."""
    rows = []
    with open(path, newline="") as f:
        for row in csv.reader(f, skipinitialspace=True):
            if len(row) == len(COLUMNS):
                rows.append(row)
    cols = list(zip(*rows))
    features = {}
    for name, values in zip(COLUMNS, cols):
        if name == "income_bracket":
            continue
        features[name] = (np.asarray(values, np.float32) if name in NUMERIC
                          else np.asarray(values))
    labels = np.array([v.rstrip(".") == ">50K" for v in cols[-1]], np.int64)
    return features, labels


def build_columns():
    gender = fc.categorical_column_with_vocabulary_list("gender", ["Female", "Male"])
    education = fc.categorical_column_with_vocabulary_list("education", [
        "Bachelors", "HS-grad", "11th", "Masters", "9th", "Some-college",
        "Assoc-acdm", "Assoc-voc", "7th-8th", "Doctorate", "Prof-school",
        "5th-6th", "10th", "1st-4th", "Preschool", "12th"])
    marital_status = fc.categorical_column_with_vocabulary_list("marital_status", [
        "Married-civ-spouse", "Divorced", "Married-spouse-absent", "Never-married",
        "Separated", "Married-AF-spouse", "Widowed"])
    relationship = fc.categorical_column_with_vocabulary_list("relationship", [
        "Husband", "Not-in-family", "Wife", "Own-child", "Unmarried",
        "Other-relative"])
    workclass = fc.categorical_column_with_vocabulary_list("workclass", [
        "Self-emp-not-inc", "Private", "State-gov", "Federal-gov", "Local-gov", "?",
        "Self-emp-inc", "Without-pay", "Never-worked"])
    occupation = fc.categorical_column_with_hash_bucket("occupation", 1000)
    native_country = fc.categorical_column_with_hash_bucket("native_country", 1000)
    age = fc.numeric_column("age")
    age_buckets = fc.bucketized_column(age, [18, 25, 30, 35, 40, 45, 50, 55, 60, 65])

    wide = [gender, native_country, education, marital_status, occupation,
            workclass, relationship, age_buckets,
            fc.crossed_column(["education", "occupation"], 1000),
            fc.crossed_column([age_buckets, "education", "occupation"], 1000),
            fc.crossed_column(["native_country", "occupation"], 1000)]
    deep = [fc.indicator_column(workclass), fc.indicator_column(education),
            fc.indicator_column(gender), fc.indicator_column(relationship),
            fc.embedding_column(native_country, dimension=8),
            fc.embedding_column(occupation, dimension=8),
            age] + [fc.numeric_column(k) for k in NUMERIC[1:]]
    return wide, deep


def main(epochs=12, data=None, model_dir=None, seed=0, train_limit=None):
    data = data or os.path.join(os.environ.get("KERASFLOW_DATA_DIR",
                                               "../shared/data"), "adult")
    x_train, y_train = load_adult(os.path.join(data, "adult.data"))
    x_test, y_test = load_adult(os.path.join(data, "adult.test"))
    if train_limit:
        x_train = {k: v[:train_limit] for k, v in x_train.items()}
        y_train = y_train[:train_limit]

    wide, deep = build_columns()
    model = kf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir or tempfile.mkdtemp(prefix="census_model_"),
        linear_feature_columns=wide,
        dnn_feature_columns=deep,
        dnn_hidden_units=[100, 50],
        config=kf.estimator.RunConfig(tf_random_seed=seed))

    train_input_fn = kf.estimator.inputs.numpy_input_fn(
        x_train, y_train, batch_size=40, num_epochs=epochs, shuffle=True, seed=seed)
    model.train(input_fn=train_input_fn)

    test_input_fn = kf.estimator.inputs.numpy_input_fn(
        x_test, y_test, batch_size=1000, num_epochs=1, shuffle=False)
    results = model.evaluate(input_fn=test_input_fn)
    for key in sorted(results):
        print(f"{key}: {results[key]}")
    return results["accuracy"]


if __name__ == "__main__":
    main()
