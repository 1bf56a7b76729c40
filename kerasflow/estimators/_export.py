"""``Estimator.export_saved_model``: variables plus a JSON description."""

from __future__ import annotations

import json
import os
import shutil
import time

from kerasflow.estimators import _running as R

__all__ = ["export"]


def export(est, export_dir_base, checkpoint_path=None):
    if checkpoint_path is None:
        checkpoint_path = est.latest_checkpoint()
    if checkpoint_path is None:
        raise ValueError(f"Couldn't find trained model at '{est.model_dir}': no "
                         f"checkpoint to export.")
    values, step = R.load_checkpoint(checkpoint_path)
    export_dir_base = os.fspath(export_dir_base)
    os.makedirs(export_dir_base, exist_ok=True)
    stamp = int(time.time())
    while os.path.exists(os.path.join(export_dir_base, str(stamp))):
        stamp += 1
    final = os.path.join(export_dir_base, str(stamp))
    tmp = os.path.join(export_dir_base, f".tmp-{stamp}")
    os.makedirs(tmp)
    try:
        shutil.copyfile(checkpoint_path, os.path.join(tmp, "variables.npz"))
        meta = {"format": "kerasflow-estimator-export-v1",
                "estimator": type(est).__name__, "global_step": step,
                "variables": sorted(values), "model_dir": est.model_dir}
        keras_model = getattr(est, "_keras_model", None)
        if keras_model is not None:
            for w in keras_model.weights:  # the exported checkpoint's values
                if w.name in values:
                    w.assign(values[w.name])
            keras_model.save(os.path.join(tmp, "model.kerasflow"))
            meta["keras_model"] = "model.kerasflow"
        with open(os.path.join(tmp, "estimator.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
