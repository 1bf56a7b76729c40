"""The processes and ports of a TF1 cluster's rendezvous (``server.py``):
the ``ray start --block`` child a task owns (its own process group, SIGTERM
when its parent dies, stopped by group then by pid), the wait for the head's
port, the claim of a task's own port, and the pids a stopped head leaves.

No ray import: Ray runs as a separate program here.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

__all__ = ["RayProcess", "claim_port", "descendants", "free_ports", "leftover_pids",
           "split_address", "wait_for_port"]

def split_address(address):
    host, _, port = address.rpartition(":")
    return host, int(port)


def free_ports(n, host="127.0.0.1"):
    """``n`` ports free on this host now, for Ray's own services: Ray's fixed
    defaults (client server 10001, dashboard 8265, agent 52365) collide with
    any other Ray on the machine."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for_port(address, deadline, who, head=None):
    host, port = split_address(address)
    last = None
    while time.monotonic() < deadline:
        if head is not None and not head.alive():
            raise RuntimeError(f"{who}: 'ray start --head' exited with code "
                               f"{head.proc.returncode}: {head.tail()}")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as e:
            last = e
            time.sleep(0.2)
    raise TimeoutError(f"{who} did not come: expected its Ray head to accept "
                       f"connections at {address}. Received: {last} until the "
                       f"deadline. Start that task (or check the address and "
                       f"that its port is open).")


def _own_group_dies_with_parent():
    """In the child: a new process group, and SIGTERM when the Server's
    process dies, even by SIGKILL (Linux ``PR_SET_PDEATHSIG``), so that
    ``ray start --block`` stops its node instead of outliving the task."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class RayProcess:
    """A ``ray start --block`` child in its own process group."""

    def __init__(self, args, temp_dir):
        self.temp_dir = temp_dir
        env = dict(os.environ)
        # The task set RAY_AUTH_MODE / RAY_AUTH_TOKEN (runtime/ray.py's
        # secure_ray_env): the node it starts inherits them.
        env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block",
               "--disable-usage-stats", *args]
        self.log = open(os.path.join(temp_dir, "ray_start.log"), "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, preexec_fn=_own_group_dies_with_parent)

    def alive(self):
        return self.proc.poll() is None

    def tail(self, n=2000):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read()[-n:].decode(errors="replace")

    def stop(self, grace=10.0):
        """SIGTERM to the group, SIGKILL after ``grace`` s; then SIGKILL to
        any of its descendants still alive (Ray's workers run in their own
        process groups) or still naming its temp folder."""
        started = descendants(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(5.0)
        for pid in sorted(set(leftover_pids(self.temp_dir)) | (
                started & set(_live_pids()))):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()
        if not os.environ.get("KERASFLOW_KEEP_RAY_LOGS"):
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def _live_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def descendants(root):
    """Pids of the live processes descending from pid ``root``."""
    children = {}
    for pid in _live_pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def leftover_pids(marker):
    """Pids of live processes whose command line contains ``marker`` (the
    head's own temp folder: a name no other process carries)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    out.append(int(d))
        except OSError:
            pass
    return out


def claim_port(address, task, keep):
    """Binds ``address`` as TF's gRPC server did, so that a second process
    serving the same task on this host is refused; returns the socket to
    hold (None when ``keep`` is False -- Ray's GCS takes the head's port --
    or when the address is not one of this host's).

    Raises:
        ValueError: the port is in use (naming the task and address).
    """
    host, port = split_address(address)
    sock = socket.socket()
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ValueError(f"{task} is already served by another process: "
                             f"expected its address {address} free. Received: "
                             f"{e.strerror}. Start each task of the ClusterSpec "
                             f"once.") from None
        return None
    if not keep:
        sock.close()
        return None
    return sock
