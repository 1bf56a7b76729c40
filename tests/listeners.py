"""Which addresses this machine's TCP listeners are bound to, read from
``/proc/net/tcp`` and ``/proc/net/tcp6`` (Linux): the security tests check
every listener's bound address against the address its task was given."""

from __future__ import annotations

import socket
from pathlib import Path


def listening() -> dict:
    """``{port: local address}`` of every listening TCP socket (IPv4 and
    IPv6), from ``/proc/net``."""
    found = {}
    for fam, path in ((socket.AF_INET, "/proc/net/tcp"), (socket.AF_INET6,
                                                          "/proc/net/tcp6")):
        for line in Path(path).read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] != "0A":  # LISTEN
                continue
            hexip, hexport = parts[1].split(":")
            raw = bytes.fromhex(hexip)
            if fam == socket.AF_INET:
                ip = socket.inet_ntop(fam, raw[::-1])
            else:
                ip = socket.inet_ntop(fam, b"".join(raw[i:i + 4][::-1]
                                                    for i in range(0, 16, 4)))
            found[int(hexport, 16)] = ip.removeprefix("::ffff:")
    return found
