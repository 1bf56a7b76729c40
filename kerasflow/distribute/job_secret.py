"""The job's secret: what lets the processes of one training job recognise
each other, and nobody else, on the network.

Every connection between a job's processes is authenticated with it: the
TCP gradient ring by a mutual HMAC challenge-response
(``collective/tcp.py``; the secret never crosses the wire), and every Ray
cluster kerasflow starts or joins by Ray's token authentication, the token
derived from the secret (:func:`ray_token`). Horovod's rendezvous carries a
secret key the same way; TF's gRPC servers, PyTorch's TCPStore and Ray
without a token trust the network instead.

Where the secret comes from:

* **actors a driver starts** (``MirroredStrategy``,
  ``MultiWorkerMirroredStrategy``, ``ParameterServerStrategy``): a fresh
  random secret per group (:func:`new_secret`), handed to the actors through
  the token-authenticated Ray;
* **processes the user starts** (``TF_CONFIG`` workers, ``tf.train.Server``
  tasks; :func:`cluster_secret`): ``$KERASFLOW_CLUSTER_SECRET``, else the file
  named by ``$KERASFLOW_CLUSTER_SECRET_FILE`` (mode 0600: readable by its
  owner only), else -- when every task is on this host -- a per-user file
  ``~/.kerasflow/cluster_secret`` created (0600) on first use, which the
  user's processes on this host share. A job spanning hosts without a
  secret refuses to start, saying how to set one, unless the user opts out
  for a closed network (``allow_insecure=True`` or
  ``KERASFLOW_ALLOW_INSECURE=1``, logged once).

No ray import and nothing of the package: the transports and the Ray
runtime import this module.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path

__all__ = ["ENV_FILE", "ENV_INSECURE", "ENV_SECRET", "JobSecretError",
           "cluster_secret", "insecure_allowed", "is_loopback", "new_secret",
           "ray_token", "ring_key"]

ENV_SECRET = "KERASFLOW_CLUSTER_SECRET"
ENV_FILE = "KERASFLOW_CLUSTER_SECRET_FILE"
ENV_INSECURE = "KERASFLOW_ALLOW_INSECURE"
MIN_LENGTH = 16  # bytes: shorter secrets can be guessed

log = logging.getLogger("kerasflow.distribute")
_warned: set = set()


class JobSecretError(ValueError):
    """The job's secret is missing, too short or unsafely stored."""


def new_secret() -> bytes:
    """A fresh random secret (32 bytes) for the actors one driver starts."""
    return secrets.token_bytes(32)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and addresses in 127.0.0.0/8 or ``::1``."""
    host = str(host).strip("[]").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def insecure_allowed(allow_insecure: bool = False) -> bool:
    """``allow_insecure``, or ``$KERASFLOW_ALLOW_INSECURE`` set to 1/true/yes."""
    env = os.environ.get(ENV_INSECURE, "").strip().lower()
    return bool(allow_insecure) or env in ("1", "true", "yes")


def _checked(raw: bytes, source: str) -> bytes:
    raw = raw.strip()
    if len(raw) < MIN_LENGTH:
        raise JobSecretError(
            f"The job's secret ({source}) must be at least {MIN_LENGTH} bytes. "
            f"Received: {len(raw)} bytes. Generate one with: python -c "
            f"\"import secrets; print(secrets.token_hex(32))\"")
    return raw


def _read_file(path: Path, source: str) -> bytes:
    try:
        info = path.stat()
    except OSError as e:
        raise JobSecretError(f"The job's secret file ({source}) cannot be read. "
                             f"Received: {path} ({e.strerror}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise JobSecretError(f"The job's secret file ({source}) must be a regular "
                             f"file. Received: {path}.")
    if info.st_mode & 0o077:
        raise JobSecretError(
            f"The job's secret file ({source}) must be readable by its owner only "
            f"(mode 0600). Received: {path} with mode "
            f"{stat.S_IMODE(info.st_mode):04o}; fix it with: chmod 600 {path}")
    return _checked(path.read_bytes(), source)


def _user_secret() -> bytes:
    """This user's secret on this host, created (0600, atomically) if absent."""
    path = Path.home() / ".kerasflow" / "cluster_secret"
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".cluster_secret.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_hex(32).encode())
        try:
            os.link(tmp, path)  # the first of several racing tasks wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    return _read_file(path, str(path))


def cluster_secret(hosts, what: str, allow_insecure: bool = False) -> bytes | None:
    """The secret of a cluster whose processes the user started.

    Args:
        hosts: the cluster's task hosts (names or addresses).
        what: the job, for messages (e.g. ``"TF_CONFIG cluster"``).
        allow_insecure: run without a secret where none is set (a closed
            network only).

    Returns:
        The secret (bytes, >= 16), or None when none is set and insecure runs
        are allowed (logged once).

    Raises:
        JobSecretError: no secret for a cluster spanning hosts (saying how to
            set one), a secret under 16 bytes, or a secret file that others
            can read.
    """
    raw = os.environ.get(ENV_SECRET)
    if raw:
        return _checked(raw.encode(), f"${ENV_SECRET}")
    name = os.environ.get(ENV_FILE)
    if name:
        return _read_file(Path(name).expanduser(), f"${ENV_FILE}")
    hosts = list(hosts)
    if hosts and all(is_loopback(h) for h in hosts):
        return _user_secret()
    if insecure_allowed(allow_insecure):
        if what not in _warned:
            _warned.add(what)
            log.warning("%s runs WITHOUT a secret (allow_insecure): any process that "
                        "can reach its addresses can join it.", what)
        return None
    raise JobSecretError(
        f"The {what} spans hosts {sorted(set(hosts))} and needs the job's secret so "
        f"that no other process can join it. Set the same secret for every task, "
        f"e.g. export {ENV_SECRET}=$(python -c \"import secrets; "
        f"print(secrets.token_hex(32))\") on the launcher, or {ENV_FILE}=<a file "
        f"of mode 0600>; on a closed network {ENV_INSECURE}=1 runs without one.")


def ring_key(secret: bytes | None, group: str) -> bytes:
    """The HMAC key of one group's connections: the secret bound to the
    group's name (so two jobs sharing a secret never cross), or, without a
    secret, a digest of the name alone (anyone who knows it can join)."""
    if secret is None:
        return hashlib.sha256(group.encode()).digest()
    return hmac.new(secret, b"kerasflow ring " + group.encode(), "sha256").digest()


def ray_token(secret: bytes) -> str:
    """The Ray auth token (64 hex characters) every process of the job derives
    from the secret, so the tasks of one cluster agree on it without sending
    it anywhere."""
    return hmac.new(secret, b"kerasflow ray token", "sha256").hexdigest()
