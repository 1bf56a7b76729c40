"""Wide & deep on the Adult census data with TF's tutorial feature columns.

The wide part (FTRL) sees the sparse base columns and their crosses
(education x occupation, age buckets x education x occupation, native country
x occupation); the deep part (Adagrad, [100, 50]) sees indicator and embedding
columns plus the continuous features. Trained on adult.data, evaluated on
adult.test (TF's ``wide_deep`` tutorial).

Input is a tf.data pipeline written the way TF's official census example
writes it: ``TextLineDataset`` -> ``shuffle`` -> ``repeat`` -> ``batch`` ->
``map(parse_csv)``, where ``parse_csv`` calls ``tf.decode_csv`` on a batch of
lines (batching before the map parses 40 lines per call instead of one).
The raw UCI files put a space after each comma, and adult.test starts with a
junk line ("|1x3 Cross validator") and ends its labels with ".".

Run: KERASFLOW_DATA_DIR=../shared/data python examples/census_wide_deep.py
(prints the test accuracy; >= 0.84)
"""

import os
import tempfile

import numpy as np

import kerasflow as kf
import kerasflow.compat.v1 as tf

fc = kf.feature_column

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num",
           "marital_status", "occupation", "relationship", "race", "gender",
           "capital_gain", "capital_loss", "hours_per_week", "native_country",
           "income_bracket"]
DEFAULTS = [[0.0], [""], [0.0], [""], [0.0], [""], [""], [""], [""], [""],
            [0.0], [0.0], [0.0], [""], [""]]
NUMERIC = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
NUM_TRAIN = 32561


def parse_csv(lines):
    """A batch of CSV lines -> (features dict, labels 0/1 int64)."""
    columns = tf.decode_csv(lines, record_defaults=DEFAULTS)
    features = {name: tf.strings.strip(col) if col.dtype == object else col
                for name, col in zip(COLUMNS, columns)}
    labels = features.pop("income_bracket")
    return features, np.array([v.rstrip(b".") == b">50K" for v in labels],
                              np.int64)


def input_fn(path, num_epochs, shuffle, batch_size, skip=0, limit=None, seed=0):
    """TF's census ``input_fn`` on kerasflow.data (``tf.data``)."""
    dataset = tf.data.TextLineDataset(path).skip(skip).filter(
        lambda line: len(line.strip()) > 0)  # the files end with a blank line
    if limit:
        dataset = dataset.take(limit)
    if shuffle:
        dataset = dataset.shuffle(buffer_size=NUM_TRAIN, seed=seed)
    return dataset.repeat(num_epochs).batch(batch_size).map(parse_csv)


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
    wide, deep = build_columns()
    model = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir or tempfile.mkdtemp(prefix="census_model_"),
        linear_feature_columns=wide,
        dnn_feature_columns=deep,
        dnn_hidden_units=[100, 50],
        config=tf.estimator.RunConfig(tf_random_seed=seed))

    model.train(input_fn=lambda: input_fn(
        os.path.join(data, "adult.data"), epochs, True, 40, limit=train_limit,
        seed=seed))
    results = model.evaluate(input_fn=lambda: input_fn(
        os.path.join(data, "adult.test"), 1, False, 1000, skip=1))
    for key in sorted(results):
        print(f"{key}: {results[key]}")
    return results["accuracy"]


if __name__ == "__main__":
    main()
