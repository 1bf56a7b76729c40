"""Keras 3 API coverage: which of the installed Keras' public names kerasflow has.

Run ``python -m kerasflow.utils.api_coverage``: it imports Keras on its numpy
backend, walks the namespaces of ``keras_surface.NAMESPACES``, prints per
namespace how many names are present, excluded by design or missing in
kerasflow, and writes the table to ``docs/keras_api_coverage.md``.
``--update-names`` also rewrites ``keras_names.py`` (the Keras names the
namespaces' ``__getattr__`` recognizes) and ``--present FILE`` writes the
present names, one qualified name a line (the list ``tests`` guard).

Keras is a test-time dependency: ``import kerasflow`` never imports this module.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import textwrap
import types
from pathlib import Path

from kerasflow.utils import keras_surface

__all__ = ["coverage", "has_name", "keras_public_names", "kerasflow_namespace",
           "main", "render_markdown"]

_REPO = Path(__file__).resolve().parents[2]


def keras_public_names() -> dict[str, list[str]]:
    """{namespace: sorted public names} of the installed Keras 3.

    Raises:
        ImportError: Keras is not installed.
        RuntimeError: Keras was imported earlier with a backend other than numpy.
    """
    os.environ["KERAS_BACKEND"] = "numpy"  # Keras' TF default is not installed
    import keras  # noqa: PLC0415

    if keras.backend.backend() != "numpy":
        raise RuntimeError(f"Keras was imported with the "
                           f"{keras.backend.backend()!r} backend; run in a fresh "
                           f"process.")
    names = {}
    for namespace in keras_surface.NAMESPACES:
        module = keras
        for part in filter(None, namespace.split(".")):
            module = getattr(module, part)
        names[namespace] = sorted(n for n in dir(module) if not n.startswith("_"))
    return names


def kerasflow_namespace(namespace: str):
    """The kerasflow module compared with Keras' ``namespace``, or None."""
    path = keras_surface.NAMESPACES[namespace]
    try:
        return importlib.import_module(path)
    except ImportError:
        pass
    module = importlib.import_module("kerasflow")
    for part in path.split(".")[1:]:
        module = getattr(module, part) if has_name(module, part) else None
    return module if isinstance(module, types.ModuleType) else None


def has_name(module, name: str) -> bool:
    """Whether ``module.name`` resolves (a missing Keras name raises
    NotImplementedError in kerasflow; that counts as absent)."""
    if not isinstance(module, types.ModuleType):
        return False
    try:
        getattr(module, name)
    except (AttributeError, NotImplementedError, ImportError):
        return False
    return True


def coverage(names: dict[str, list[str]] | None = None) -> dict[str, dict]:
    """{namespace: {"present", "excluded", "missing": sorted name lists,
    "raises": whether a missing name raises NotImplementedError}}."""
    names = keras_public_names() if names is None else names
    report = {}
    for namespace, public in names.items():
        module = kerasflow_namespace(namespace)
        excluded = keras_surface.EXCLUDED.get(namespace, {})
        row = {"present": [], "excluded": [], "missing": []}
        for name in public:
            if name in excluded:
                row["excluded"].append(name)
            elif has_name(module, name):
                row["present"].append(name)
            else:
                row["missing"].append(name)
        row["raises"] = bool(row["missing"]) and _raises_not_implemented(
            module, row["missing"][0])
        report[namespace] = row
    return report


def _raises_not_implemented(module, name: str) -> bool:
    """Whether ``module.name`` raises NotImplementedError (the namespace's
    ``__getattr__`` names the missing Keras name)."""
    try:
        getattr(module, name)
    except NotImplementedError:
        return True
    except (AttributeError, ImportError):
        return False
    return False


def totals(report: dict) -> tuple[int, int, int]:
    """(present, excluded, missing) over all namespaces."""
    return tuple(sum(len(r[k]) for r in report.values())
                 for k in ("present", "excluded", "missing"))


def _percent(present: int, missing: int) -> str:
    return f"{100.0 * present / max(present + missing, 1):.0f}%"


def summary_lines(report: dict) -> list[str]:
    """One line per namespace and a total: present / excluded / missing."""
    lines = [f"{'namespace':<26}{'present':>8}{'excluded':>9}{'missing':>8}"
             f"{'in scope':>10}"]
    for namespace, row in report.items():
        p, e, m = (len(row[k]) for k in ("present", "excluded", "missing"))
        lines.append(f"{keras_surface.qualified(namespace, ''):<26}{p:>8}{e:>9}"
                     f"{m:>8}{_percent(p, m):>10}")
    p, e, m = totals(report)
    lines.append(f"{'total':<26}{p:>8}{e:>9}{m:>8}{_percent(p, m):>10}")
    return lines


def _raising(report: dict) -> str:
    names = [f"`{keras_surface.qualified(ns, '')}`" for ns, row in report.items()
             if row.get("raises")]
    return ", ".join(names) or "no namespace"


def render_markdown(report: dict, keras_version: str = "") -> str:
    """The coverage report as Markdown: a summary table, then each namespace's
    missing and excluded names."""
    p, e, m = totals(report)
    out = ["# Keras 3 API coverage", "",
           f"Generated by `python -m kerasflow.utils.api_coverage` against Keras "
           f"{keras_version or '3'} (numpy backend). **{p} of {p + m} in-scope "
           f"public names present ({_percent(p, m)})**; {e} names are excluded "
           f"by design (the list and reasons live in "
           f"`kerasflow/utils/keras_surface.py`). In "
           f"{_raising(report)}, a missing name raises `NotImplementedError` "
           f"naming it and what to use instead.", "",
           "| namespace | present | excluded | missing | in scope |",
           "|---|---:|---:|---:|---:|"]
    for namespace, row in report.items():
        pn, en, mn = (len(row[k]) for k in ("present", "excluded", "missing"))
        out.append(f"| `{keras_surface.qualified(namespace, '')}` | {pn} | {en} | "
                   f"{mn} | {_percent(pn, mn)} |")
    out.append(f"| **total** | {p} | {e} | {m} | {_percent(p, m)} |")
    for namespace, row in report.items():
        out += ["", f"## `{keras_surface.qualified(namespace, '')}`", ""]
        reasons = keras_surface.EXCLUDED.get(namespace, {})
        for name in row["excluded"]:
            out.append(f"- excluded: `{name}` ({reasons[name]})")
        if row["missing"]:
            out.append("- missing: " + ", ".join(f"`{n}`" for n in row["missing"]))
        if row["present"]:
            out.append("- present: " + ", ".join(f"`{n}`" for n in row["present"]))
    return "\n".join(out) + "\n"


def render_names_module(names: dict[str, list[str]], keras_version: str) -> str:
    """Source of ``keras_names.py``: {namespace: frozenset of Keras names}."""
    out = ['"""Keras 3 public names per namespace (generated by `python -m',
           f'kerasflow.utils.api_coverage --update-names` from Keras {keras_version};',
           'do not edit)."""', "", "from __future__ import annotations", "",
           '__all__ = ["NAMES"]', "", "NAMES: dict[str, frozenset[str]] = {"]
    for namespace, public in names.items():
        out.append(f"    {namespace!r}: frozenset(\"\"\"")
        out += textwrap.wrap(" ".join(public), 84)
        out.append('""".split()),')
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Prints the coverage summary and writes the Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(_REPO / "docs" /
                                                "keras_api_coverage.md"))
    parser.add_argument("--present", default=None,
                        help="write the present names, one a line, here")
    parser.add_argument("--update-names", action="store_true",
                        help="rewrite kerasflow/utils/keras_names.py")
    args = parser.parse_args(argv)
    names = keras_public_names()
    version = sys.modules["keras"].__version__
    if args.update_names:
        Path(__file__).with_name("keras_names.py").write_text(
            render_names_module(names, version))
    report = coverage(names)
    print("\n".join(summary_lines(report)))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(render_markdown(report, version))
    if args.present:
        Path(args.present).write_text("".join(
            f"{keras_surface.qualified(ns, n)}\n" for ns, row in report.items()
            for n in row["present"]))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
