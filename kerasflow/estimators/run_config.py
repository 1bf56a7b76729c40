"""``RunConfig``: where and how an ``Estimator`` trains (``tf.estimator.RunConfig``)."""

from __future__ import annotations

import os

__all__ = ["RunConfig"]

_FIELDS = ("model_dir", "tf_random_seed", "save_summary_steps",
           "save_checkpoints_steps", "save_checkpoints_secs", "keep_checkpoint_max",
           "log_step_count_steps", "train_distribute", "eval_distribute",
           "session_config")


class RunConfig:
    """Run settings of an ``Estimator``.

    Args:
        model_dir: folder for checkpoints and event files (the Estimator's
            ``model_dir`` argument wins when both are given and agree; a
            temporary folder is made when neither is given).
        tf_random_seed: int seed for the graph's random ops and the initial
            weights, or None.
        save_summary_steps: write the loss to TensorBoard every this many steps.
        save_checkpoints_steps: checkpoint every this many global steps; at most
            one of this and ``save_checkpoints_secs`` (TF's rule). When neither
            is given, every 600 seconds. A checkpoint is also written when
            ``train`` ends.
        save_checkpoints_secs: checkpoint every this many seconds.
        keep_checkpoint_max: keep the newest this many checkpoints (0/None: all).
        log_step_count_steps: refresh the progress bar and write ``global_step/sec``
            every this many steps.
        train_distribute, eval_distribute: a ``Strategy`` that runs training /
            evaluation steps; None for in-process.
        distribute: the lecture's older spelling; sets both.
        session_config: TF 1.x's ``ConfigProto`` for the Estimator's sessions;
            accepted and kept so TF1 programs run unchanged, but it has no
            meaning here (kerasflow has no TF runtime to configure).

    The ``TF_CONFIG`` environment variable (JSON: ``{"cluster": {"chief":
    [...], "worker": [...], "ps": [...]}, "task": {"type": "worker",
    "index": 0}}``), read when the RunConfig is made, sets ``cluster_spec``,
    ``task_type``, ``task_id``, ``num_ps_replicas``, ``num_worker_replicas``
    (chief included), ``is_chief`` and ``master`` as TF 1.x's RunConfig does;
    ``train_and_evaluate`` then runs this process's task of that cluster.
    Without it: a local run (``task_type`` "worker", ``is_chief`` True).

    Raises:
        ValueError: both save_checkpoints_steps and save_checkpoints_secs, or a
            negative count, naming it.
        TypeError: an unknown keyword in ``from_yaml``/``replace``.
    """

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=None,
                 keep_checkpoint_max=5, log_step_count_steps=100,
                 train_distribute=None, eval_distribute=None, distribute=None,
                 session_config=None):
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(
                f"RunConfig accepts at most one of save_checkpoints_steps and "
                f"save_checkpoints_secs. Received: save_checkpoints_steps="
                f"{save_checkpoints_steps}, save_checkpoints_secs="
                f"{save_checkpoints_secs}.")
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_secs = 600
        for name, v in (("save_summary_steps", save_summary_steps),
                        ("save_checkpoints_steps", save_checkpoints_steps),
                        ("save_checkpoints_secs", save_checkpoints_secs),
                        ("keep_checkpoint_max", keep_checkpoint_max),
                        ("log_step_count_steps", log_step_count_steps)):
            if v is not None and (isinstance(v, bool) or not isinstance(
                    v, (int, float)) or v < 0):
                raise ValueError(f"RunConfig expects {name} to be a number >= 0 or "
                                 f"None. Received: {name}={v!r}.")
        if distribute is not None:
            train_distribute = train_distribute or distribute
            eval_distribute = eval_distribute or distribute
        self.model_dir = None if model_dir is None else os.fspath(model_dir)
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.keep_checkpoint_max = keep_checkpoint_max
        self.log_step_count_steps = log_step_count_steps
        self.train_distribute = train_distribute
        self.eval_distribute = eval_distribute
        self.session_config = session_config
        self._read_tf_config(os.environ.get("TF_CONFIG"))

    def _read_tf_config(self, raw):
        """Sets the cluster fields from a TF_CONFIG JSON string (or None).

        Raises:
            ValueError: invalid JSON, a task type or index not in the cluster
                (naming what the cluster has).
        """
        from kerasflow.distribute.cluster_resolver import ClusterSpec, load_tf_config

        conf = load_tf_config(raw) if raw else {}
        cluster = conf.get("cluster") or {}
        task = conf.get("task") or {}
        self.cluster_spec = ClusterSpec(cluster) if cluster else ClusterSpec({})
        self.task_type = str(task.get("type", "worker"))
        self.task_id = int(task.get("index", 0))
        jobs = self.cluster_spec.jobs if cluster else []
        self.num_ps_replicas = self.cluster_spec.num_tasks("ps") if "ps" in jobs else 0
        self.num_worker_replicas = sum(self.cluster_spec.num_tasks(j) for j in
                                       ("chief", "master", "worker") if j in jobs) or 1
        if cluster and task and self.task_type != "evaluator":
            self.cluster_spec.task_address(self.task_type, self.task_id)  # checks both
        head = [j for j in ("chief", "master") if j in jobs]
        if head:
            self.is_chief = self.task_type in head
        else:
            self.is_chief = self.task_type == "worker" and self.task_id == 0
        self.master = ("" if not cluster or self.task_type == "evaluator" else
                       "grpc://" + self.cluster_spec.task_address(self.task_type,
                                                                   self.task_id))
        self.evaluation_master = ""
        self.global_id_in_cluster = self.task_id

    @property
    def distributed(self) -> bool:
        """True when TF_CONFIG named a cluster of several tasks."""
        return bool(self.cluster_spec) and (
            self.task_type == "evaluator" or self.num_ps_replicas > 0
            or self.num_worker_replicas > 1)

    @property
    def num_replicas_in_sync(self) -> int:
        s = self.train_distribute
        return 1 if s is None else int(getattr(s, "num_replicas_in_sync", 1))

    def replace(self, **kwargs) -> RunConfig:
        """A copy with some fields changed (TF's ``RunConfig.replace``)."""
        unknown = sorted(set(kwargs) - set(_FIELDS))
        if unknown:
            raise TypeError(f"RunConfig.replace got unknown fields {unknown}; "
                            f"known: {list(_FIELDS)}.")
        values = {f: getattr(self, f) for f in _FIELDS}
        values.update(kwargs)
        if kwargs.get("save_checkpoints_steps"):
            values["save_checkpoints_secs"] = None
        if kwargs.get("save_checkpoints_secs"):
            values["save_checkpoints_steps"] = None
        return RunConfig(**values)

    @classmethod
    def from_yaml(cls, path) -> RunConfig:
        """Reads RunConfig fields from a YAML mapping (``yaml.safe_load``).

        Strategies cannot be described in YAML; pass them in code
        (``config.replace(train_distribute=...)``).

        Raises:
            TypeError: the file is not a mapping, or holds an unknown field.
        """
        import yaml

        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
        if not isinstance(data, dict):
            raise TypeError(f"RunConfig.from_yaml expects a mapping of fields. "
                             f"Received: {type(data).__name__} in '{path}'.")
        allowed = set(_FIELDS) - {"train_distribute", "eval_distribute"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise TypeError(f"RunConfig.from_yaml: unknown fields {unknown} in "
                            f"'{path}'; known: {sorted(allowed)}.")
        return cls(**data)

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS)
        return f"RunConfig({inner})"
