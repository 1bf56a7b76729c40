"""Sleeping on a 32-bit word in shared memory until another process changes it.

``wait_word(addr, value, seconds)`` sleeps while the int32 at address ``addr``
still holds ``value`` (at most ``seconds``); ``wake_word(addr)`` wakes every
process sleeping on that word. On Linux these are the ``FUTEX_WAIT`` /
``FUTEX_WAKE`` operations of futex(2) (Franke, Russell & Kirkwood, "Fuss,
Futexes and Furwocks", Ottawa Linux Symposium 2002), called through ctypes.
For a ``MAP_SHARED`` mapping the kernel keys the futex on the page, not the
virtual address, so processes that map one segment at different addresses
meet on it. The kernel compares the word with ``value`` under its own lock,
so a wake between the caller's read and its sleep is never lost; an early
return (a signal, a timeout, a changed word) is harmless because callers
re-read the word. Elsewhere (not Linux, an unknown syscall number) both fall
back to polling: ``wait_word`` sleeps a short slice.

``fence()`` is a full memory barrier on CPUs that may reorder stores (not
x86, whose TSO model keeps stores, and loads, in program order); it borrows
the barrier ``FUTEX_WAKE`` issues before looking for waiters.
"""

from __future__ import annotations

import ctypes
import platform
import sys
import time

__all__ = ["HAVE_FUTEX", "fence", "wait_word", "wake_word"]

_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98,
              "riscv64": 98, "ppc64le": 221, "ppc64": 221, "s390x": 238}
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1
_WAKE_ALL = 0x7FFFFFFF
_POLL = 0.0005  # seconds per sleep where futexes are unavailable
_TSO = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _load():
    if not sys.platform.startswith("linux"):
        return None
    nr = _SYS_FUTEX.get(platform.machine().lower())
    if nr is None:
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):  # pragma: no cover - exotic libc
        return None
    fn.restype = ctypes.c_long
    return ctypes.c_long(nr), fn


_FUTEX = _load()
HAVE_FUTEX = _FUTEX is not None
_DUMMY = ctypes.c_int32(0)


def wait_word(addr: int, value: int, seconds: float) -> None:
    """Sleeps while the int32 at ``addr`` equals ``value``, at most ``seconds``
    (may return early; the caller re-reads the word)."""
    if seconds <= 0:
        return
    if _FUTEX is None:
        time.sleep(min(seconds, _POLL))
        return
    nr, fn = _FUTEX
    whole = int(seconds)
    ts = _Timespec(whole, int((seconds - whole) * 1e9))
    # Return value ignored on purpose: EAGAIN (word changed), ETIMEDOUT and
    # EINTR all mean "read the word again".
    fn(nr, ctypes.c_void_p(addr), ctypes.c_int(_FUTEX_WAIT), ctypes.c_int(value),
       ctypes.byref(ts), None, ctypes.c_int(0))


def wake_word(addr: int) -> None:
    """Wakes every process sleeping in :func:`wait_word` on ``addr``."""
    if _FUTEX is not None:
        nr, fn = _FUTEX
        fn(nr, ctypes.c_void_p(addr), ctypes.c_int(_FUTEX_WAKE),
           ctypes.c_int(_WAKE_ALL), None, None, ctypes.c_int(0))


def fence() -> None:
    """Orders every memory access before it before every access after it
    (a no-op on x86; elsewhere a futex wake on a private word)."""
    if not _TSO:
        if _FUTEX is not None:
            wake_word(ctypes.addressof(_DUMMY))
        else:  # pragma: no cover - neither x86 nor Linux
            time.sleep(0)
