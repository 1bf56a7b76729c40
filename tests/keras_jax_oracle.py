"""Keras 3 on its JAX backend (CPU) as a training oracle, in a subprocess.

Keras' numpy backend cannot train, and a process holds one ``KERAS_BACKEND``,
so ``keras_jax_run(steps, workdir)`` runs this file as a script with
``KERAS_BACKEND=jax``. ``steps`` is a list of one-key dicts run in order on
one Keras model:

- ``{"load": path}``: ``keras.saving.load_model(path)`` (compile state and the
  optimizer's variables included);
- ``{"fit": {"x": array, "y": array, "batch_size": n}}``: ``model.fit(x, y,
  batch_size=n, epochs=1, shuffle=False, verbose=0)``;
- ``{"save": path}``: ``model.save(path)``;
- ``{"dump": {"name": name, "x": array}}``: records ``weights``
  (``model.get_weights()``), ``optimizer`` (``model.optimizer.variables``,
  empty before the optimizer is built) and ``predict`` (``model.predict(x)``;
  ``x`` may be left out).

Returns ``{name: {"weights": [...], "optimizer": [...], "predict": array}}``.
Arrays travel as ``.npz`` files (no pickle), the step list as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

_TIMEOUT_S = 120


def keras_jax_run(steps, workdir) -> dict:
    """Runs ``steps`` (see the module docstring) in Keras 3 on JAX (CPU).

    Skips the test when jax or keras is not installed.

    Raises:
        RuntimeError: the subprocess failed (its stderr is in the message) or
            ran past 120 s.
    """
    pytest.importorskip("jax")
    # Not imported here: this process may hold Keras on another backend.
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    workdir = Path(workdir)
    plan, arrays = [], {}
    for k, step in enumerate(steps):
        (op, arg), = step.items()
        if op == "fit":
            for key in ("x", "y"):
                arrays[f"{key}{k}"] = np.asarray(arg[key])
            arg = {"x": f"x{k}", "y": f"y{k}", "batch_size": int(arg["batch_size"])}
        elif op == "dump":
            if "x" in arg:
                arrays[f"x{k}"] = np.asarray(arg["x"])
            arg = {"name": arg["name"], "x": f"x{k}" if "x" in arg else None}
        elif op in ("load", "save"):
            arg = str(arg)
        plan.append({op: arg})
    np.savez(workdir / "keras_jax_in.npz", **arrays)
    (workdir / "keras_jax_plan.json").write_text(json.dumps(plan))
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    try:
        proc = subprocess.run([sys.executable, __file__, str(workdir)], env=env,
                              capture_output=True, text=True, timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"Keras/JAX subprocess did not finish its {len(plan)} "
                           f"steps within {_TIMEOUT_S} s (plan in {workdir}).") from e
    if proc.returncode != 0:
        raise RuntimeError(f"Keras/JAX subprocess failed (rc={proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")
    out: dict = {}
    with np.load(workdir / "keras_jax_out.npz", allow_pickle=False) as f:
        for key in sorted(f.files, key=_key_order):
            name, kind, _ = key.rsplit("/", 2)
            entry = out.setdefault(name, {"weights": [], "optimizer": []})
            if kind == "predict":
                entry["predict"] = f[key]
            else:
                entry[kind].append(f[key])
    return out


def _key_order(key):
    name, kind, i = key.rsplit("/", 2)
    return name, kind, int(i)


def _main(workdir):
    """The subprocess: runs the plan with Keras on the JAX backend."""
    import keras  # here only: the parent process may hold Keras on numpy

    if keras.backend.backend() != "jax":
        raise RuntimeError(f"expected the jax backend, got "
                           f"{keras.backend.backend()!r}")
    plan = json.loads((workdir / "keras_jax_plan.json").read_text())
    out, model = {}, None
    with np.load(workdir / "keras_jax_in.npz", allow_pickle=False) as data:
        for step in plan:
            (op, arg), = step.items()
            if op == "load":
                model = keras.saving.load_model(arg)
            elif op == "fit":
                model.fit(data[arg["x"]], data[arg["y"]], batch_size=arg["batch_size"],
                          epochs=1, shuffle=False, verbose=0)
            elif op == "save":
                model.save(arg)
            elif op == "dump":
                name = arg["name"]
                for i, w in enumerate(model.get_weights()):
                    out[f"{name}/weights/{i}"] = np.asarray(w)
                for i, v in enumerate(model.optimizer.variables):
                    out[f"{name}/optimizer/{i}"] = np.asarray(v.numpy())
                if arg["x"] is not None:
                    out[f"{name}/predict/0"] = np.asarray(
                        model.predict(data[arg["x"]], verbose=0))
            else:
                raise ValueError(f"unknown step {op!r}")
    np.savez(workdir / "keras_jax_out.npz", **out)


if __name__ == "__main__":
    # Python put tests/ first on sys.path; its folders (tree/, random/, data/)
    # would shadow modules of those names for Keras.
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    _main(Path(sys.argv[1]))
