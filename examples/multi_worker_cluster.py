"""``MultiWorkerMirroredStrategy`` on a Ray cluster: one replica per node,
gradients summed over a TCP ring between the nodes.

Run here:  python examples/multi_worker_cluster.py [--workers 3] [--epochs 3]
This starts a simulated cluster of ``--workers`` nodes on this machine
(``ray.cluster_utils.Cluster``: one raylet per "node", so replicas really land
on distinct nodes and talk over sockets), trains a small classifier on the
Iris-like blobs below, and checks that the result equals one process on the
same global batches.

On a real cluster:
1. on the head machine: ``ray start --head --port=6379``;
2. on every other machine: ``ray start --address=<head-ip>:6379``;
3. on any machine: ``RAY_ADDRESS=<head-ip>:6379 python your_script.py`` where
   the script is your single-process script with ``model.fit`` inside
   ``with kf.distribute.MultiWorkerMirroredStrategy().scope():``. With no
   ``num_workers`` the strategy uses every alive node (or ``TF_CONFIG``'s
   worker count); kerasflow must be importable on every node (``pip install``
   it there, or share the checkout and set ``PYTHONPATH``).
Pass ``--address auto`` to this script to use a running cluster instead of
the simulated one.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import tempfile
import time

import numpy as np

import kerasflow as kf


def start_simulated_cluster(nodes):
    """A head plus ``nodes - 1`` raylets on this machine; returns the Cluster."""
    # Ray with token authentication on loopback, as kerasflow's own local Ray
    # runs: only processes holding the token (the simulated nodes inherit it)
    # can join. Ray reads these when it is first imported.
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray
    from ray.cluster_utils import Cluster
    root = os.path.dirname(os.path.dirname(os.path.abspath(kf.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.makedirs(os.path.join(tempfile.gettempdir(), "ray"), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=1, object_store_memory=200 << 20, include_dashboard=False,
        temp_dir=tempfile.mkdtemp(prefix="kf-ray-")))
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1, object_store_memory=200 << 20)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
    return cluster


def make_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (4, 10))
    y = rng.integers(0, 4, n)
    return (centers[y] + rng.normal(0, 1.5, (n, 10))).astype("float32"), y


def build_model(seed=0):
    np.random.seed(seed)
    model = kf.Sequential([kf.layers.Dense(32, activation="relu", input_shape=(10,)),
                           kf.layers.Dense(4, activation="softmax")])
    model.compile(optimizer=kf.optimizers.SGD(0.05, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def main(workers=3, epochs=3, address=None, batch_size=60):
    cluster = None
    import ray
    if address:
        if not ray.is_initialized():
            ray.init(address=address, logging_level=logging.ERROR)
    else:
        cluster = start_simulated_cluster(workers)
    try:
        x, y = make_data()
        strategy = kf.distribute.MultiWorkerMirroredStrategy(num_workers=workers)
        with strategy.scope():
            model = build_model()
            print(f"{strategy.num_replicas_in_sync} replicas on "
                  f"{len(set(strategy.node_ids()))} nodes")
            start = time.perf_counter()
            np.random.seed(1)
            model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=2)
            seconds = time.perf_counter() - start
        reference = build_model()
        np.random.seed(1)
        reference.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0)
        diff = max(float(np.abs(a - b).max()) for a, b in
                   zip(model.get_weights(), reference.get_weights()))
        _, acc = model.evaluate(x, y, verbose=0)
        print(f"accuracy {acc:.4f} - {seconds:.1f} s - largest weight difference "
              f"from one process: {diff:.2e}")
        return acc, diff
    finally:
        if cluster is not None:
            ray.shutdown()
            cluster.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--address", default=None,
                        help="a running cluster ('auto' or host:port)")
    args = parser.parse_args()
    main(args.workers, args.epochs, args.address)
