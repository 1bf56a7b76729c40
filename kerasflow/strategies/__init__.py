"""The Ray implementation of the distribution strategies (layer L4; internal).

Use the public names in ``kf.distribute`` (``kerasflow/distribute.py``). The
modules here, by job: ``base`` (what the Ray strategies share),
``sync_strategy`` / ``mirrored`` / ``multi_worker`` (synchronous data
parallelism), ``parameter_server`` / ``ps_coordinator`` / ``ps_shard`` /
``ps_worker`` / ``partitioners`` (parameter servers), ``replica`` (actor
bodies), ``transport`` / ``collective`` / ``shm_collective`` /
``tcp_collective`` / ``nccl_collective`` (allreduce), ``worker_group`` (the
only module importing ray) with ``placement`` and ``errors``, ``cluster``
(TF_CONFIG), ``shipping`` (moving data once), ``probe`` and ``stragglers``
(diagnostics and test hooks).
"""

__all__: list = []
