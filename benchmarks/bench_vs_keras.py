"""Issue 26's yardstick: kerasflow against Keras 3 (tensorflow, jax, torch backends).

Four models, written once as Keras code (``build`` below) and run with
``lib = kerasflow`` or ``lib = keras``:

* ``mlp``: Dense 512 relu, Dense 512 relu, Dense 10 softmax over (784,) inputs.
* ``convnet``: the classic Keras MNIST convnet (Conv2D 32 3x3 relu, Conv2D 64 3x3
  relu, MaxPooling2D 2, Dropout .25, Flatten, Dense 128 relu, Dropout .5,
  Dense 10 softmax) over (28, 28, 1).
* ``lstm``: LSTM(128) over MNIST rows (28 steps x 28 features), Dense 10 softmax.
* ``autoencoder``: keras.io's convolutional autoencoder (Conv2D 32 3x3 relu same,
  MaxPooling2D 2 same, Conv2D 32 3x3 relu same, MaxPooling2D 2 same,
  Conv2DTranspose 32 3x3 strides 2 relu same (twice), Conv2D 1 3x3 sigmoid same;
  binary crossentropy against its input).
* ``transformer``: keras.io's "Text classification with Transformer" as it is
  written there: token + position Embedding (vocabulary 20,000, length 200,
  64 wide), one transformer block (``MultiHeadAttention(num_heads=2,
  key_dim=64)``, dropout 0.1, two LayerNormalizations, a feed-forward of 64),
  global average pooling, Dropout, Dense 20 relu, Dropout, Dense 2 softmax.
* ``gru``: a GRU text classifier (Embedding 20,000 x 128 over sequences of 200,
  ``GRU(64)``, Dense 2 softmax).
* ``conv1d``: keras.io's "Text classification from scratch" convnet (Embedding
  20,000 x 128 over 200 tokens, Dropout .5, ``Conv1D(128, 7, strides=3, relu)``
  twice, GlobalMaxPooling1D, Dense 128 relu, Dropout .5, Dense 2 softmax).
* ``resnet``: a small residual convnet on CIFAR-shaped (32, 32, 3) inputs: a 3x3
  stem of 32 channels with BatchNormalization and ReLU, three residual blocks
  (3x3 conv, BN, ReLU, 3x3 conv, BN, add the shortcut, ReLU) of 32, 64 (stride 2,
  1x1 projection shortcut) and 64 channels, global average pooling, Dense 10
  softmax.
* ``wide_deep``: a functional wide & deep census classifier (TF 2.21 no longer
  ships the canned ``DNNLinearCombinedClassifier``): a wide linear part over 12
  sparse ids (8 categorical columns and 4 crossed buckets, one 10,000-row
  Embedding of width 1, Flatten, Dense 1) plus a deep part (8 categorical
  Embeddings of 8 concatenated with 6 numeric columns, Dense 100 relu, Dense 50
  relu, Dense 1), the two logits added, sigmoid, binary crossentropy.

All: Adam (lr 1e-3), batch 128, float32, synthetic data of MNIST's shape (uniform
[0, 1) pixels, random labels: throughput does not depend on the values), sparse
categorical crossentropy for the classifiers, no metrics, ``fit(epochs=2,
verbose=0)``. The second epoch is timed (a callback's on_epoch_begin/end; the
first epoch is the warm-up: tracing, XLA/numba compilation, caches). The first
step latency is the time from calling ``fit`` to the end of the first batch
(trace + compile + first batch).

Each (framework, model) run is a FRESH subprocess (``--worker``), and the
frameworks run interleaved, round after round, in an order rotated each round,
so that load changes on a shared machine hit all of them alike. Printed per
model: median samples/s [min-max] per framework, median first-step latency, and
the ratio kerasflow / fastest Keras backend as the median of the per-round
ratios (each round's kerasflow figure over that round's fastest backend). The
load average is printed before and after (a warning when above 1: the numbers
are then disturbed).

Threads: each framework's default (all cores). Keras' default ``jit_compile``
('auto': XLA for jax and tensorflow, eager for torch).

Run (from the repository root; needs the ``bench`` extra):
    python benchmarks/bench_vs_keras.py                       # all, 3 rounds
    python benchmarks/bench_vs_keras.py --models mlp,convnet --rounds 5
    python benchmarks/bench_vs_keras.py --samples 2048 --rounds 1   # smoke test
    python benchmarks/bench_vs_keras.py --backends jax --fusion both
Options: --models, --rounds, --samples (per epoch, default 60000 for the mlp,
2560 for the transformer, 15360 for the others), --backends (Keras backends,
default tensorflow,jax,torch), --fusion on|off|both (kerasflow's fused kernels:
KERASFLOW_FUSION=0 when off; both runs kerasflow twice), --timeout (s per
run), --json PATH (all raw results).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODELS = ("mlp", "convnet", "lstm", "autoencoder", "transformer", "gru", "conv1d",
          "resnet", "wide_deep")
BACKENDS = ("tensorflow", "jax", "torch")
BATCH = 128
DEFAULT_SAMPLES = {"mlp": 60000, "convnet": 15360, "lstm": 15360,
                   "autoencoder": 15360, "transformer": 2560, "gru": 2560,
                   "conv1d": 7680, "resnet": 2560, "wide_deep": 61440}
VOCAB, MAXLEN, EMBED = 20000, 200, 64
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "BENCH_RESULT "


# -- the models, written once as Keras code ---------------------------------------------
def build(lib, name):
    """The model ``name`` built with ``lib`` (kerasflow or keras), compiled."""
    L = lib.layers
    if name in ("transformer", "resnet", "wide_deep"):
        model = {"transformer": _transformer, "resnet": _resnet,
                 "wide_deep": _wide_deep}[name](lib)
        loss = ("binary_crossentropy" if name == "wide_deep"
                else "sparse_categorical_crossentropy")
        model.compile(optimizer=lib.optimizers.Adam(learning_rate=1e-3), loss=loss)
        return model
    if name == "mlp":
        layers = [lib.Input(shape=(784,)), L.Dense(512, activation="relu"),
                  L.Dense(512, activation="relu"), L.Dense(10, activation="softmax")]
    elif name == "convnet":
        layers = [lib.Input(shape=(28, 28, 1)),
                  L.Conv2D(32, kernel_size=(3, 3), activation="relu"),
                  L.Conv2D(64, kernel_size=(3, 3), activation="relu"),
                  L.MaxPooling2D(pool_size=(2, 2)), L.Dropout(0.25), L.Flatten(),
                  L.Dense(128, activation="relu"), L.Dropout(0.5),
                  L.Dense(10, activation="softmax")]
    elif name == "lstm":
        layers = [lib.Input(shape=(28, 28)), L.LSTM(128),
                  L.Dense(10, activation="softmax")]
    elif name == "gru":
        layers = [lib.Input(shape=(MAXLEN,), dtype="int32"),
                  L.Embedding(VOCAB, 128), L.GRU(64),
                  L.Dense(2, activation="softmax")]
    elif name == "conv1d":
        layers = [lib.Input(shape=(MAXLEN,), dtype="int32"),
                  L.Embedding(VOCAB, 128), L.Dropout(0.5),
                  L.Conv1D(128, 7, padding="valid", activation="relu", strides=3),
                  L.Conv1D(128, 7, padding="valid", activation="relu", strides=3),
                  L.GlobalMaxPooling1D(), L.Dense(128, activation="relu"),
                  L.Dropout(0.5), L.Dense(2, activation="softmax")]
    elif name == "autoencoder":
        layers = [lib.Input(shape=(28, 28, 1)),
                  L.Conv2D(32, (3, 3), activation="relu", padding="same"),
                  L.MaxPooling2D((2, 2), padding="same"),
                  L.Conv2D(32, (3, 3), activation="relu", padding="same"),
                  L.MaxPooling2D((2, 2), padding="same"),
                  L.Conv2DTranspose(32, (3, 3), strides=2, activation="relu",
                                    padding="same"),
                  L.Conv2DTranspose(32, (3, 3), strides=2, activation="relu",
                                    padding="same"),
                  L.Conv2D(1, (3, 3), activation="sigmoid", padding="same")]
    else:
        raise ValueError(f"Unknown model {name!r}; choose from {MODELS}.")
    model = lib.Sequential(layers)
    loss = ("binary_crossentropy" if name == "autoencoder"
            else "sparse_categorical_crossentropy")
    model.compile(optimizer=lib.optimizers.Adam(learning_rate=1e-3), loss=loss)
    return model


def _transformer(lib):
    """keras.io's transformer text classifier, its layers as keras.io writes them."""
    L, ops = lib.layers, lib.ops

    class TransformerBlock(L.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = L.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = lib.Sequential([L.Dense(ff_dim, activation="relu"),
                                       L.Dense(embed_dim)])
            self.layernorm1 = L.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = L.LayerNormalization(epsilon=1e-6)
            self.dropout1 = L.Dropout(rate)
            self.dropout2 = L.Dropout(rate)

        def call(self, inputs, training=None):
            attn_output = self.dropout1(self.att(inputs, inputs), training=training)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.dropout2(self.ffn(out1), training=training)
            return self.layernorm2(out1 + ffn_output)

    class TokenAndPositionEmbedding(L.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = L.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = L.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            positions = self.pos_emb(ops.arange(start=0, stop=ops.shape(x)[-1], step=1))
            return self.token_emb(x) + positions

    inputs = L.Input(shape=(MAXLEN,))
    x = TokenAndPositionEmbedding(MAXLEN, VOCAB, EMBED)(inputs)
    x = TransformerBlock(EMBED, 2, EMBED)(x)
    x = L.GlobalAveragePooling1D()(x)
    x = L.Dropout(0.1)(x)
    x = L.Dense(20, activation="relu")(x)
    x = L.Dropout(0.1)(x)
    outputs = L.Dense(2, activation="softmax")(x)
    return lib.Model(inputs=inputs, outputs=outputs)


def _resnet(lib):
    """A small residual convnet with BatchNormalization (CIFAR-shaped inputs)."""
    L = lib.layers

    def conv_bn(x, filters, strides=1, relu=True):
        x = L.Conv2D(filters, 3, strides=strides, padding="same", use_bias=False)(x)
        x = L.BatchNormalization()(x)
        return L.Activation("relu")(x) if relu else x

    def block(x, filters, strides=1):
        shortcut = x
        y = conv_bn(x, filters, strides)
        y = conv_bn(y, filters, relu=False)
        if strides != 1 or x.shape[-1] != filters:
            shortcut = L.Conv2D(filters, 1, strides=strides, use_bias=False)(x)
            shortcut = L.BatchNormalization()(shortcut)
        return L.Activation("relu")(L.Add()([y, shortcut]))

    inputs = lib.Input(shape=(32, 32, 3))
    x = conv_bn(inputs, 32)
    x = block(x, 32)
    x = block(x, 64, strides=2)
    x = block(x, 64)
    x = L.GlobalAveragePooling2D()(x)
    outputs = L.Dense(10, activation="softmax")(x)
    return lib.Model(inputs=inputs, outputs=outputs)


WIDE_IDS, WIDE_VOCAB, CATS, CAT_VOCAB, NUMERIC = 12, 10000, 8, 100, 6


def _wide_deep(lib):
    """A functional wide & deep binary classifier of the census' shape."""
    L = lib.layers
    numeric = lib.Input(shape=(NUMERIC,), name="numeric")
    cats = lib.Input(shape=(CATS,), dtype="int32", name="categorical")
    wide_ids = lib.Input(shape=(WIDE_IDS,), dtype="int32", name="wide_ids")
    wide = L.Flatten()(L.Embedding(WIDE_VOCAB, 1)(wide_ids))
    wide_logit = L.Dense(1)(wide)
    deep = L.Concatenate()([L.Flatten()(L.Embedding(CAT_VOCAB, 8)(cats)), numeric])
    deep = L.Dense(100, activation="relu")(deep)
    deep = L.Dense(50, activation="relu")(deep)
    deep_logit = L.Dense(1)(deep)
    outputs = L.Activation("sigmoid")(L.Add()([wide_logit, deep_logit]))
    return lib.Model(inputs=[numeric, cats, wide_ids], outputs=outputs)


def data(name, n, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    if name in ("transformer", "gru", "conv1d"):
        return (rng.integers(0, VOCAB, (n, MAXLEN)).astype("int32"),
                rng.integers(0, 2, n).astype("int32"))
    if name == "wide_deep":
        return ([rng.standard_normal((n, NUMERIC), dtype=np.float32),
                 rng.integers(0, CAT_VOCAB, (n, CATS)).astype("int32"),
                 rng.integers(0, WIDE_VOCAB, (n, WIDE_IDS)).astype("int32")],
                rng.integers(0, 2, (n, 1)).astype("float32"))
    shape = {"mlp": (784,), "lstm": (28, 28), "resnet": (32, 32, 3)}.get(
        name, (28, 28, 1))
    x = rng.random((n, *shape), dtype=np.float32)
    if name == "autoencoder":
        return x, x
    return x, rng.integers(0, 10, n).astype("int32")


def worker(framework, name, samples):
    """Runs in the subprocess: one fit of two epochs; prints one result line."""
    if framework.startswith("kerasflow"):
        sys.path.insert(0, ROOT)  # this checkout's kerasflow, even when run alone
        import kerasflow as lib
    else:
        import keras as lib
    x, y = data(name, samples)
    marks = {}

    class Timer(lib.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            marks[f"begin{epoch}"] = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            if "first" not in marks:
                marks["first"] = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            marks[f"end{epoch}"] = time.perf_counter()

    model = build(lib, name)
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[Timer()])
    result = {"framework": framework, "model": name, "samples": samples,
              "samples_per_s": samples / (marks["end1"] - marks["begin1"]),
              "first_step_s": marks["first"] - start,
              "epoch1_s": marks["end0"] - marks["begin0"]}
    print(MARK + json.dumps(result), flush=True)


# -- the driver --------------------------------------------------------------------------
def run_one(framework, name, samples, timeout):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if framework.startswith("kerasflow"):
        env["KERASFLOW_FUSION"] = "0" if framework.endswith("nofusion") else "1"
    else:
        env["KERAS_BACKEND"] = framework.split("/")[1]
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework,
           "--models", name, "--samples", str(samples)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"framework": framework, "model": name, "error": "timeout"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"framework": framework, "model": name,
            "error": f"exit {proc.returncode}: {' | '.join(tail)}"}


def load_line(when):
    load = os.getloadavg()
    text = f"load average {when}: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    if load[0] > 1:
        text += ("  WARNING: load > 1, other processes share the cores; "
                 "timings are disturbed")
    return text


def summarize(name, results, frameworks):
    ok = [r for r in results if r["model"] == name and "error" not in r]
    print(f"\n== {name} ==")
    print(f"{'framework':<22}{'samples/s (median)':>20}{'[min-max]':>22}"
          f"{'first step s':>14}  runs")
    for fw in frameworks:
        rs = [r for r in ok if r["framework"] == fw]
        errors = [r["error"] for r in results
                  if r["model"] == name and r["framework"] == fw and "error" in r]
        if rs:
            sps = [r["samples_per_s"] for r in rs]
            first = statistics.median(r["first_step_s"] for r in rs)
            print(f"{fw:<22}{statistics.median(sps):>20,.0f}"
                  f"{f'[{min(sps):,.0f}-{max(sps):,.0f}]':>22}{first:>14.2f}"
                  f"  {len(rs)}")
        for e in errors:
            print(f"{fw:<22}  FAILED: {e}")
    keras = [fw for fw in frameworks if fw.startswith("keras/")]
    for kf in (fw for fw in frameworks if fw.startswith("kerasflow")):
        ratios = []
        for rnd in sorted({r["round"] for r in ok}):
            mine = [r for r in ok if r["round"] == rnd and r["framework"] == kf]
            best = max((r["samples_per_s"] for r in ok if r["round"] == rnd
                        and r["framework"] in keras), default=None)
            if mine and best:
                ratios.append(mine[0]["samples_per_s"] / best)
        if ratios:
            print(f"{kf} / fastest Keras backend: {statistics.median(ratios):.2f}x "
                  f"(median of {len(ratios)} round(s): "
                  f"{', '.join(f'{r:.2f}' for r in ratios)}; target >= 1.0)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--samples", type=int, default=None)
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--fusion", choices=("on", "off", "both"), default="on")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    for m in models:
        if m not in MODELS:
            p.error(f"unknown model {m!r}; choose from {', '.join(MODELS)}")
    if a.worker:
        return worker(a.worker, models[0], a.samples or DEFAULT_SAMPLES[models[0]])
    backends = [b.strip() for b in a.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            p.error(f"unknown backend {b!r}; choose from {', '.join(BACKENDS)}")
    frameworks = {"on": ["kerasflow"], "off": ["kerasflow-nofusion"],
                  "both": ["kerasflow", "kerasflow-nofusion"]}[a.fusion]
    frameworks += [f"keras/{b}" for b in backends]
    print(load_line("before"))
    print(f"models {models}, {a.rounds} round(s), batch {BATCH}, frameworks "
          f"{frameworks}", flush=True)
    results = []
    for rnd in range(a.rounds):
        for name in models:
            samples = a.samples or DEFAULT_SAMPLES[name]
            shift = rnd % len(frameworks)
            for fw in frameworks[shift:] + frameworks[:shift]:
                r = run_one(fw, name, samples, a.timeout)
                r["round"] = rnd
                results.append(r)
                shown = (f"{r['samples_per_s']:,.0f} samples/s, first step "
                         f"{r['first_step_s']:.2f} s" if "error" not in r
                         else r["error"])
                print(f"round {rnd + 1} {name:<12}{fw:<22}{shown}", flush=True)
    for name in models:
        summarize(name, results, frameworks)
    print("\n" + load_line("after"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
