"""``tf.app.flags`` / ``tf.flags`` on ``argparse``, and ``tf.app.run``.

Flags are defined with ``DEFINE_string/integer/float/boolean/list/enum`` and
read as ``FLAGS.name``; the command line is parsed on first read (or by
``tf.app.run`` / ``FLAGS(argv)``). As with TF1's flags, unknown arguments are
left alone, booleans accept ``--flag``, ``--noflag`` and ``--flag=false``.
"""

from __future__ import annotations

import argparse
import sys

from kerasflow.compat.v1._missing import missing_attribute

__all__ = ["FLAGS", "DEFINE_string", "DEFINE_integer", "DEFINE_float",
           "DEFINE_boolean", "DEFINE_bool", "DEFINE_list", "DEFINE_enum",
           "FlagValues", "run"]


def _to_bool(text):
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in ("true", "t", "1", "yes", "y"):
        return True
    if value in ("false", "f", "0", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false). Received: "
                                     f"{text!r}.")


class FlagValues:
    """The flag registry; attribute access parses ``sys.argv`` once."""

    def __init__(self):
        object.__setattr__(self, "_defs", {})
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_parsed", False)

    def _define(self, name, default, help, kind, choices=None):
        if name in self._defs:
            raise ValueError(f"The flag '{name}' is defined twice.")
        self._defs[name] = (default, help, kind, choices)
        self._values[name] = default

    def _parser(self):
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        for name, (default, help_, kind, choices) in self._defs.items():
            if kind is bool:
                parser.add_argument(f"--{name}", dest=name, nargs="?", const=True,
                                    type=_to_bool, default=argparse.SUPPRESS,
                                    help=help_)
                parser.add_argument(f"--no{name}", dest=name, action="store_false",
                                    default=argparse.SUPPRESS)
            elif kind is list:
                parser.add_argument(f"--{name}", dest=name, default=argparse.SUPPRESS,
                                    type=lambda s: [v for v in s.split(",") if v],
                                    help=help_)
            else:
                parser.add_argument(f"--{name}", dest=name, type=kind,
                                    choices=choices, default=argparse.SUPPRESS,
                                    help=help_)
        return parser

    def __call__(self, argv):
        """Parses ``argv`` (``argv[0]`` is the program); returns the program and
        the arguments left over.

        Raises:
            SystemExit: a flag value of the wrong type (argparse's message).
        """
        argv = list(argv)
        known, rest = self._parser().parse_known_args(argv[1:])
        self._values.update(vars(known))
        object.__setattr__(self, "_parsed", True)
        return argv[:1] + rest

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def flag_values_dict(self) -> dict:
        self._ensure_parsed()
        return dict(self._values)

    def _ensure_parsed(self):
        if not self._parsed:
            self(sys.argv)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._defs:
            raise AttributeError(f"Unknown flag: '{name}'. Define it first with "
                                 f"tf.app.flags.DEFINE_*('{name}', default, help).")
        self._ensure_parsed()
        return self._values[name]

    def __setattr__(self, name, value):
        if name not in self._defs:
            raise AttributeError(f"Unknown flag: '{name}'.")
        self._values[name] = value

    def __contains__(self, name):
        return name in self._defs


FLAGS = FlagValues()


def DEFINE_string(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: N802
    flag_values._define(name, default, help, str)


def DEFINE_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802
                   flag_values=FLAGS, **kwargs):
    flag_values._define(name, default, help, int)


def DEFINE_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802
                 flag_values=FLAGS, **kwargs):
    flag_values._define(name, default, help, float)


def DEFINE_boolean(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: N802
    flag_values._define(name, default, help, bool)


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: N802
    if isinstance(default, str):
        default = [v for v in default.split(",") if v]
    flag_values._define(name, default, help, list)


def DEFINE_enum(name, default, enum_values, help, flag_values=FLAGS,  # noqa: N802
                **kwargs):
    flag_values._define(name, default, help, str, list(enum_values))


def run(main=None, argv=None):
    """Parses flags from ``argv`` (default ``sys.argv``), then exits with
    ``main(remaining argv)`` (TF1's ``tf.app.run``)."""
    args = FLAGS(sys.argv if argv is None else argv)
    main = main or sys.modules["__main__"].main
    sys.exit(main(args))


__getattr__ = missing_attribute("tf.flags", globals())
