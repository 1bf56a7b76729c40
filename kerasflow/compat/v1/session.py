"""TF1 sessions: ``Session``, ``InteractiveSession``, ``ConfigProto`` and
``tf.device``.

``Session`` is the backend's ``Session`` (compiled plans cached per fetch
signature) plus TF1's surroundings: it is the default session inside ``with``
(and an ``InteractiveSession`` while open), so ``tensor.eval()`` and
``op.run()`` work; ``sess.graph`` is the default graph record (for
``FileWriter``); fetched ``tf.summary`` ops come back as serialized ``Summary``
bytes; and ops placed with ``tf.device`` are checked against the machine.

Placement: kerasflow runs one ``Session.run`` on one device (the backend
compiles a whole plan for numpy or cupy). A run whose ops ask for ``/gpu:N``
runs on the GPU when cupy sees device N; without it, it raises
``InvalidArgumentError`` as TF1 did, unless ``ConfigProto(
allow_soft_placement=True)`` was given, in which case it runs on the CPU.
"""

from __future__ import annotations

import contextlib
import re
import sys

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend import default_session as _default
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.summary_ops import expand_fetches
from kerasflow.compat.v1.tf2_names import control_deps_of
from kerasflow.data import iterator as iterator_lib
from kerasflow.errors import (
    InvalidArgumentError,
    NotFoundError,
    OpError,
    OutOfRangeError,
)
from kerasflow.utils.graph_def import collect_nodes

__all__ = ["Session", "InteractiveSession", "ConfigProto", "GPUOptions",
           "RunOptions", "RunMetadata", "get_default_session", "device",
           "InvalidArgumentError", "OpError", "NotFoundError", "OutOfRangeError"]


class GPUOptions:
    """TF1 ``GPUOptions``; accepted and kept (kerasflow allocates through cupy)."""

    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=1.0,
                 visible_device_list="", **kwargs):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list
        self.__dict__.update(kwargs)


_CONFIG_FIELDS = {
    "allow_soft_placement": False, "log_device_placement": False,
    "device_count": None, "intra_op_parallelism_threads": 0,
    "inter_op_parallelism_threads": 0, "use_per_session_threads": False,
    "operation_timeout_in_ms": 0, "graph_options": None, "isolate_session_state":
    False, "experimental": None, "device_filters": None, "placement_period": 0,
    "session_inter_op_thread_pool": None, "rpc_options": None, "cluster_def": None,
    "share_cluster_devices_in_session": False,
}


class ConfigProto:
    """TF1 session configuration.

    Args:
        allow_soft_placement: ops asking for an absent device run on the CPU
            instead of raising.
        log_device_placement: print each op's device when a plan is compiled.
        gpu_options: ``GPUOptions``.
        others: TF1's fields, accepted and kept.

    Raises:
        ValueError: a field TF1's ConfigProto does not have.
    """

    def __init__(self, gpu_options=None, **kwargs):
        for key in kwargs:
            if key not in _CONFIG_FIELDS:
                raise ValueError(f'Protocol message ConfigProto has no "{key}" '
                                 f'field.')
        self.__dict__.update(_CONFIG_FIELDS)
        self.__dict__.update(kwargs)
        self.device_count = dict(self.device_count or {})
        self.device_filters = list(self.device_filters or [])
        self.gpu_options = gpu_options or GPUOptions()


class RunOptions:
    """Accepted for TF1 programs; kerasflow does not trace runs."""

    FULL_TRACE = 3
    NO_TRACE = 0

    def __init__(self, trace_level=0, **kwargs):
        self.trace_level = trace_level


class RunMetadata:
    """Accepted for TF1 programs; stays empty."""


_DEVICE_RE = re.compile(r"(?:device:)?(cpu|gpu):(\d+)", re.IGNORECASE)


def _parse_device(spec):
    m = _DEVICE_RE.search(spec or "")
    if not m:
        return None
    return m.group(1).lower(), int(m.group(2))


@contextlib.contextmanager
def device(device_name_or_function):
    """Ops built inside run on that device: ``'/cpu:0'``, ``'/gpu:1'``,
    ``'/device:GPU:0'``. Variables created inside a ``'/job:ps/task:k'``
    spec, or that a device function (``tf.train.replica_device_setter``)
    sends there, live on that ps task of a ``tf.train.Server``'s cluster;
    other job/task parts are accepted.

    Raises:
        ValueError: a string naming no cpu/gpu device and no job.
    """
    spec = device_name_or_function or ""
    if callable(spec):
        # Compute goes to the function's worker device (checked per run for
        # GPUs); Variables ask the function when they are created.
        shown = getattr(spec, "worker_device", "")
    else:
        shown = spec
        if spec and _parse_device(spec) is None and "job:" not in spec:
            raise ValueError(f"tf.device expects a device like '/cpu:0' or "
                             f"'/gpu:0'. Received: {spec!r}.")
    graph = G.get_default_graph()
    # Node ids only grow: the block's nodes are those created between two marks.
    entry = [K.no_op().node.id, float("inf"), shown]
    graph.devices.append(entry)
    graph.device_stack.append(spec)
    try:
        yield
    finally:
        graph.device_stack.pop()
        entry[1] = K.no_op().node.id


def get_default_session():
    """The session of the innermost ``with sess:`` / InteractiveSession."""
    return _default.get_default_session()


class Session(K.Session):
    """TF1's ``tf.Session(target='', graph=None, config=None)``.

    Example:
        >>> with tf.Session() as sess:
        ...     tf.global_variables_initializer().run()
        ...     sess.run(train_op, feed_dict={X: x, Y: y})

    A ``target`` is a ``tf.train.Server``'s ``server.target``: the session
    is then a between-graph one (``cluster_session.ClusterSession``) whose
    ps Variables live on the cluster's ps tasks.

    Raises:
        ValueError: a ``target`` that is no Server of this process.
    """

    def __new__(cls, target="", graph=None, config=None):
        if target and cls is Session:
            from kerasflow.compat.v1.cluster_session import ClusterSession

            return super().__new__(ClusterSession)
        return super().__new__(cls)

    def __init__(self, target="", graph=None, config=None):
        if target and not hasattr(self, "server"):
            raise ValueError(f"tf.Session(target={target!r}): a remote target must "
                             f"be a tf.train.Server's server.target in this "
                             f"process. Received: target={target!r}.")
        super().__init__()
        self._graph = graph if graph is not None else G.get_default_graph()
        self._config = config or ConfigProto()
        self._placements: dict = {}  # fetch signature -> device (or None)
        self._iterators: dict = {}  # fetch signature -> dataset iterators read

    @property
    def graph(self):
        """The graph record this session runs (``FileWriter(logdir, sess.graph)``)."""
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    def as_default(self):
        """``with sess.as_default():`` makes it the default without closing it."""
        return _default.default_session(self)

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """``fetches`` computed with ``feed_dict`` fed (see the backend Session).

        Summary ops (``tf.summary.scalar``, ``merge_all()``) among the fetches
        come back as serialized ``Summary`` bytes.

        Raises:
            InvalidArgumentError: an op placed on a GPU that is not there,
                without ``allow_soft_placement``.
        """
        if isinstance(fetches, iterator_lib.Initializer):
            fetches.run(feed_dict, self)
            return None
        plain, rebuild = expand_fetches(fetches)
        flat = [t for t in tree.flatten(plain) if isinstance(t, K.SymbolicTensor)]
        if self._graph.control_deps:  # tf.control_dependencies: deps run first
            cache = self.__dict__.setdefault("_deps_cache", {})
            key = (tuple(id(t) for t in flat), len(self._graph.control_deps))
            if key not in cache:
                cache[key] = control_deps_of(self._graph, collect_nodes(flat))
            deps = cache[key]
            if deps:
                self.run(deps, feed_dict)
        feed_dict = self._iterator_feeds(flat, feed_dict)
        target = self._placement(flat)
        if target is not None and target[0] == "gpu":
            values = self._run_on_gpu(plain, feed_dict, flat)
        else:
            values = super().run(plain, feed_dict)
        return rebuild(values)

    def _iterator_feeds(self, flat, feed_dict):
        """``feed_dict`` plus the next element of each dataset iterator whose
        ``get_next()`` tensors the fetches read (``data/iterator.py``)."""
        if not iterator_lib.has_iterators():
            return feed_dict
        key = tuple(id(t) for t in flat)
        if key not in self._iterators:
            self._iterators[key] = iterator_lib.iterators_feeding(
                collect_nodes(flat))
        if not self._iterators[key]:
            return feed_dict
        feeds = dict(feed_dict or {})
        for source in self._iterators[key]:
            try:
                feeds.update(source.next_feed())
            except StopIteration:
                raise OutOfRangeError("End of sequence: the dataset iterator "
                                      "has no more elements.") from None
        return feeds

    def _placement(self, flat):
        graph = self._graph
        if not graph.devices and not self._config.log_device_placement:
            return None
        key = (tuple(id(t) for t in flat), len(graph.devices))
        if key in self._placements:
            return self._placements[key]
        self._placements[key] = target = self._place(flat)
        return target

    def _place(self, flat):
        graph = self._graph
        nodes = collect_nodes(flat)
        wanted = {}
        for node in nodes:
            spec = graph.device_of(node)
            parsed = _parse_device(spec) if spec else None
            if parsed is not None:
                wanted[node.id] = (node, spec, parsed)
        target = None
        for node, spec, (kind, index) in wanted.values():
            if kind != "gpu":
                continue
            if _gpu_count() > index:
                target = ("gpu", index)
            elif not self._config.allow_soft_placement:
                available = ["/job:localhost/replica:0/task:0/device:CPU:0"] + [
                    f"/job:localhost/replica:0/task:0/device:GPU:{i}"
                    for i in range(_gpu_count())]
                raise InvalidArgumentError(
                    f"Cannot assign a device for operation {node.name}: Operation "
                    f"was explicitly assigned to {spec} but available devices are "
                    f"[ {', '.join(available)} ]. Make sure the device "
                    f"specification refers to a valid device, or pass "
                    f"config=tf.ConfigProto(allow_soft_placement=True) to the "
                    f"Session to fall back to the CPU."
                )
        if self._config.log_device_placement:
            dev = f"GPU:{target[1]}" if target else "CPU:0"
            for node in nodes:
                print(f"{node.name}: ({node.op}): /job:localhost/replica:0/"
                      f"task:0/device:{dev}", file=sys.stderr)
        return target

    def _run_on_gpu(self, plain, feed_dict, flat):
        if K.get_device() != "gpu":
            # One device per process in the backend: the first GPU placement
            # moves the session's work (and the variables it touches) there.
            K.set_device("gpu")
            self._cache.clear()
        for node in collect_nodes(flat):
            if node.op == "Variable":
                var = node.attrs["variable"]
                var.value = K.to_device(var.value)
        return super().run(plain, feed_dict)


def _gpu_count() -> int:
    return 1 if K.gpu_available() else 0


class InteractiveSession(Session):
    """A Session that is the default from creation until ``close()`` (for
    shells and notebooks: ``t.eval()`` with no ``with`` block)."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        _default.push_default_session(self)

    def close(self):
        _default.pop_default_session(self)
        super().close()
