"""Predictions for the serve4 call's points, written BEFORE the call (scripts/gpu/serve4_predictions.json).

The model as it stands (mlcalc.servemeasured / mlcalc.serving at the commit that adds this file), with the machine
of the previous H200 call (h200x2-2026-11-26-serve2: read bandwidth, matmul rate, tiny-model floors, kernel probe).
After the call the checks take the machine numbers from the call's own probes, as for every run; this file keeps
what was said before any of these points was seen.   Usage: python scripts/gpu/predict_serve4.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlcalc import servemeasured as sm  # noqa: E402

import bench_serve  # noqa: E402  (the points the call measures)
import bench_serve_tp  # noqa: E402

RUN = sm.RUN2


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"about": __doc__.strip().splitlines()[0], "machine_from": RUN, "model_at_commit": commit,
           "hf_decode": [], "hf_prefill": [], "tp_decode": []}
    for arch in sm.ARCHS:
        for b, c in bench_serve.HELDOUT_DECODE:
            for path in sm.PATHS:
                d = sm.predict_hf(arch, path, b, c, RUN)
                out["hf_decode"].append({"arch": arch, "path": path, "batch": b, "context": c,
                                         "predicted_s": d.step_s, "bound": d.bound})
        for b, p in bench_serve.HELDOUT_PREFILL:
            pr = sm.predict_hf_prefill(arch, b, p, RUN)
            out["hf_prefill"].append({"arch": arch, "batch": b, "prompt": p, "predicted_s": pr.total_s,
                                      "bound": pr.bound})
    for m in bench_serve_tp.MODELS:
        for tp in (1, 2, 4):
            for b, c in bench_serve_tp.POINTS + bench_serve_tp.HELDOUT:
                d = sm.predict_engine(sm.tp_model(m), b, c, tp, RUN)
                out["tp_decode"].append({"model": m, "tp": tp, "batch": b, "context": c, "predicted_s": d.step_s,
                                         "bound": d.bound})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve4_predictions.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(path, len(out["hf_decode"]), len(out["hf_prefill"]), len(out["tp_decode"]))


if __name__ == "__main__":
    main()
