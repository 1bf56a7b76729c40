"""Where messages go: the terminal, or the log (Keras 3's ``keras.utils.io_utils``).

Interactive logging is on by default. When it is off, or stdout is not a
terminal (a log file, CI, ``nohup``), progress is written one line per epoch
instead of a redrawn bar, as Keras' non-interactive progress bar does, and
``print_msg`` goes to the ``kerasflow`` logger.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["disable_interactive_logging", "enable_interactive_logging",
           "interactive_terminal", "is_interactive_logging_enabled", "print_msg"]

_STATE = {"interactive": True}


def enable_interactive_logging() -> None:
    """Messages and progress bars go to stdout (the default)."""
    _STATE["interactive"] = True


def disable_interactive_logging() -> None:
    """Messages go to the ``kerasflow`` logger; progress is one line per epoch."""
    _STATE["interactive"] = False


def is_interactive_logging_enabled() -> bool:
    """Whether interactive logging is on (``enable_interactive_logging``)."""
    return _STATE["interactive"]


def interactive_terminal() -> bool:
    """Interactive logging is on and stdout is a terminal: progress bars may be
    redrawn in place."""
    isatty = getattr(sys.stdout, "isatty", None)
    return _STATE["interactive"] and bool(isatty and isatty())


def print_msg(message: str, line_break: bool = True) -> None:
    """Prints ``message`` to stdout, or logs it (level INFO) when interactive
    logging is off."""
    if _STATE["interactive"]:
        sys.stdout.write(message + ("\n" if line_break else ""))
        sys.stdout.flush()
    else:
        logging.getLogger("kerasflow").info(message)
