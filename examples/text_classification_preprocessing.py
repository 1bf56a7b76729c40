"""Text classification with Keras 3's preprocessing layers: ``TextVectorization``
adapted on a small in-repo corpus, applied in a ``kerasflow.data`` pipeline
(``dataset.map``, as keras.io recommends for string layers), feeding a
bag-of-bigrams model; ``StringLookup`` turns the string labels into indices.

Run: python examples/text_classification_preprocessing.py
(prints the held-out accuracy, 1.0 on this corpus)
"""

import numpy as np

import kerasflow as kf
from kerasflow import layers

POSITIVE = ["a wonderful film, full of heart", "great acting and a great story",
            "I loved every minute of it", "funny, warm and beautifully shot",
            "the best movie this year", "a delightful and moving story",
            "brilliant performances all round", "I would happily watch it again",
            "charming, clever and great fun", "a real joy to watch"]
NEGATIVE = ["a dull and boring film", "terrible acting and a weak story",
            "I hated every minute of it", "slow, cold and badly shot",
            "the worst movie this year", "a tedious and pointless story",
            "awful performances all round", "I would never watch it again",
            "clumsy, stupid and no fun", "a real chore to watch"]
HELD_OUT = [("great fun and a wonderful story", "pos"),
            ("boring, dull and terrible", "neg"),
            ("I loved the brilliant acting", "pos"),
            ("I hated the awful story", "neg")]


def main(epochs=60, seed=0, verbose=0):
    kf.utils.set_random_seed(seed)
    texts = np.array(POSITIVE + NEGATIVE)
    names = np.array(["pos"] * len(POSITIVE) + ["neg"] * len(NEGATIVE))

    vectorize = layers.TextVectorization(max_tokens=200, ngrams=2,
                                         output_mode="tf_idf")
    vectorize.adapt(kf.data.Dataset.from_tensor_slices(texts).batch(8))
    label_index = layers.StringLookup(vocabulary=["neg", "pos"], num_oov_indices=0)

    def preprocess(text, label):
        return vectorize(text).astype("float32"), label_index(label)

    train = (kf.data.Dataset.from_tensor_slices((texts, names))
             .shuffle(len(texts), seed=seed).batch(4).map(preprocess))
    model = kf.Sequential([
        layers.InputLayer(shape=(vectorize.vocabulary_size(),)),
        layers.Dropout(0.2), layers.Dense(2, activation="softmax")])
    model.compile(optimizer=kf.optimizers.Adam(0.05),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(train, epochs=epochs, verbose=verbose)

    test_x, test_y = preprocess(np.array([t for t, _ in HELD_OUT]),
                                np.array([y for _, y in HELD_OUT]))
    _, accuracy = model.evaluate(test_x, test_y, verbose=0)
    print(f"vocabulary: {vectorize.vocabulary_size()} tokens and bigrams; "
          f"held-out accuracy {accuracy:.2f}")
    return accuracy


if __name__ == "__main__":
    main()
