"""Predictions for the serve5 call's points, written BEFORE the call (scripts/gpu/serve5_predictions.json).

The model as it stands (mlcalc.servemeasured / mlcalc.serving at the commit that adds this file), with the machine
of the previous H200 call (h200x4-2026-11-26-serve4: read bandwidth, matmul rate, floors, kernel probe): the
engine's decode step (tp 1, and one GPU's shard of tp 2 / tp 4: the tp step less its all-reduces), DeepSeek-V2-Lite's
prefill through transformers (part by part), and each engine matmul at the decode-matmul law.
Usage: python scripts/gpu/predict_serve5.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlcalc import servemeasured as sm  # noqa: E402

import serve5_probe as probe  # noqa: E402  (the points the call measures)
import serve_engine  # noqa: E402

RUN = sm.RUN4


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"about": __doc__.strip().splitlines()[0], "machine_from": RUN, "model_at_commit": commit,
           "engine_decode": [], "mla_prefill": [], "matmul": []}
    for m, tp, points in probe.ENGINE_CASES:
        model = sm.tp_model(m)
        for b, c in points:
            d = sm.predict_engine(model, b, c, tp, RUN)
            comm = 0.0 if tp == 1 else 2 * model.n_layers * sm.graph_allreduce_s(tp, b * model.hidden * 2.0, RUN)
            out["engine_decode"].append({"model": m, "tp_shard": tp, "batch": b, "context": c,
                                         "predicted_s": d.step_s - comm, "bound": d.bound})
    for b, p in probe.MLA_POINTS:
        pr = sm.predict_hf_prefill("dsv2lite_8l", b, p, RUN)
        out["mla_prefill"].append({"batch": b, "prompt": p, "predicted_s": pr.total_s, "parts_s": pr._asdict()})
    law = sm.matmul_law(RUN)
    seen = set()
    for m in ("llama8b", "llama70b_20l"):
        for tp in (1, 2, 4):
            for what, k, n in probe.engine_matrices(serve_engine.CFGS[m], tp):
                if (k, n) in seen:
                    continue
                seen.add((k, n))
                for b in probe.MM_BATCHES:
                    out["matmul"].append({"model": m, "tp": tp, "what": what, "k": k, "n": n, "batch": b,
                                          "predicted_s": law.seconds(k * n * 2.0, b)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve5_predictions.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(path, len(out["engine_decode"]), len(out["mla_prefill"]), len(out["matmul"]))


if __name__ == "__main__":
    main()
