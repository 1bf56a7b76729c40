"""Where a replica's TCP listener binds: a network interface and a port range.

Multi-node jobs often run behind firewalls that open one port range, on hosts
with several interfaces (a management network and a fast data network). The
ring's listener therefore takes an interface (a name such as ``"eth1"``,
resolved on the node the replica runs on, or an IP address) and a port range,
as Horovod's ``--network-interface`` / gloo's ``GLOO_SOCKET_IFNAME`` and
NCCL's ``NCCL_SOCKET_IFNAME`` do for theirs.

Ray itself listens on its own ports (GCS 6379, the dashboard 8265, the client
server 10001, node and object managers on random ports, and workers on
10002-19999 by default: ``ray start --min-worker-port/--max-worker-port``);
a port range given here should lie outside those.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import struct

__all__ = ["bind_listener", "interface_address", "parse_port_range"]

_SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address


def parse_port_range(spec):
    """``(low, high)`` from ``"20000-20100"``, ``(20000, 20100)`` or one port.

    Args:
        spec: None, an int, a ``"low-high"`` string or a 2-sequence of ints.

    Returns:
        None (any free port) or ``(low, high)`` with 1 <= low <= high <= 65535.

    Raises:
        ValueError: a malformed range or ports outside 1..65535.
    """
    if spec is None:
        return None
    try:
        if isinstance(spec, str):
            parts = [int(p) for p in spec.replace(":", "-").split("-")]
        elif isinstance(spec, int):
            parts = [spec, spec]
        else:
            parts = [int(p) for p in spec]
        parts = parts * 2 if len(parts) == 1 else parts
        low, high = parts if len(parts) == 2 else (None, None)
    except (TypeError, ValueError):
        low = high = None
    if low is None or not 1 <= low <= high <= 65535:
        raise ValueError(f"A port range is (low, high) or 'low-high' with "
                         f"1 <= low <= high <= 65535. Received: {spec!r}")
    return int(low), int(high)


def interface_address(interface):
    """The IPv4 address to listen on for ``interface`` on this host.

    Args:
        interface: an IP address (returned as is) or an interface name
            (``"lo"``, ``"eth0"``), resolved with the ``SIOCGIFADDR`` ioctl.

    Returns:
        The address as a string.

    Raises:
        ValueError: no interface of that name, or it has no IPv4 address
            (naming the interfaces this host has).
    """
    try:
        return str(ipaddress.ip_address(interface))
    except ValueError:
        pass
    names = [n for _, n in socket.if_nameindex()]
    if interface in names:
        try:
            import fcntl
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                req = struct.pack("256s", str(interface).encode()[:15])
                return socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFADDR, req)[20:24])
        except (ImportError, OSError):
            pass
    raise ValueError(f"Expected interface to be an IP address or the name of an "
                     f"interface with an IPv4 address on {socket.gethostname()}: "
                     f"{names}. Received: interface={interface!r}")


def bind_listener(host, port_range=None, backlog=8):
    """A listening TCP socket on ``host``, on the first free port of the range.

    Args:
        host: address to bind.
        port_range: None or 0 (any free port), a port, or ``(low, high)``.
        backlog: ``listen`` backlog.

    Returns:
        The bound, listening socket.

    Raises:
        OSError: every port of the range is taken (``EADDRINUSE``, naming the
            range), or the address cannot be bound.
    """
    ports = (0, 0) if not port_range else parse_port_range(port_range)
    last = None
    for port in range(ports[0], ports[1] + 1):
        try:
            return socket.create_server((host, port), backlog=backlog)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
            last = e
    raise OSError(errno.EADDRINUSE,
                  f"No free port on {host} in the range {ports[0]}-{ports[1]} "
                  f"({ports[1] - ports[0] + 1} tried; last: {last})")
