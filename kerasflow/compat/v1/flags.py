"""``tf.app.flags`` / ``tf.flags`` and ``tf.app.run``: absl-py's flags, as in TF 1.x.

TF 1.x's ``tf.flags`` was absl's ``flags`` module behind a wrapper that parses
``sys.argv`` on the first read of a flag; this module is the same. Flags are
defined with ``DEFINE_string/integer/float/boolean/list/enum`` (absl checks
``lower_bound``/``upper_bound`` and enum values) and read as ``FLAGS.name``.
Unknown command-line arguments are left for the program (``known_only``, as
``tf.app.run`` did); booleans accept ``--flag``, ``--noflag`` and ``--flag=false``.

Raises (from absl): ``flags.IllegalFlagValueError`` for a value of the wrong
type or out of bounds, ``flags.DuplicateFlagError`` for a flag defined twice,
``AttributeError`` for reading an undefined flag.
"""

from __future__ import annotations

import functools
import sys

from absl import flags as _absl

from kerasflow.compat.v1._missing import missing_attribute

__all__ = ["FLAGS", "DEFINE_string", "DEFINE_integer", "DEFINE_float",
           "DEFINE_boolean", "DEFINE_bool", "DEFINE_list", "DEFINE_enum",
           "FlagValues", "IllegalFlagValueError", "run"]

IllegalFlagValueError = _absl.IllegalFlagValueError


class FlagValues(_absl.FlagValues):
    """absl's flag registry, parsing ``sys.argv`` (known flags only) on the first
    read of a flag, as TF 1.x's ``tf.flags.FLAGS`` did."""

    def __call__(self, argv, known_only=True):
        return super().__call__(list(argv), known_only=known_only)

    def __getattr__(self, name):
        if not name.startswith("_") and not self.is_parsed():
            self(sys.argv)
        return super().__getattr__(name)


FLAGS = FlagValues()
# absl's DEFINE_* register in absl's own FLAGS unless told otherwise: here, ours.
DEFINE_string = functools.partial(_absl.DEFINE_string, flag_values=FLAGS)
DEFINE_integer = functools.partial(_absl.DEFINE_integer, flag_values=FLAGS)
DEFINE_float = functools.partial(_absl.DEFINE_float, flag_values=FLAGS)
DEFINE_boolean = DEFINE_bool = functools.partial(_absl.DEFINE_boolean,
                                                 flag_values=FLAGS)
DEFINE_list = functools.partial(_absl.DEFINE_list, flag_values=FLAGS)
DEFINE_enum = functools.partial(_absl.DEFINE_enum, flag_values=FLAGS)


def run(main=None, argv=None):
    """Parses flags from ``argv`` (default ``sys.argv``), then exits with
    ``main(remaining argv)`` (TF1's ``tf.app.run``)."""
    args = FLAGS(sys.argv if argv is None else argv)
    main = main or sys.modules["__main__"].main
    sys.exit(main(args))


__getattr__ = missing_attribute("tf.flags", globals())
