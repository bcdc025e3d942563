"""Predictions for the serve5b call (serve5_probe.py --sections small), written BEFORE the call
(scripts/gpu/serve5b_predictions.json): per engine layer, the GPU time of the kernels that are neither matmuls nor
attention, at full width, for each shape / shard / batch. The model charges the tiny model's replayed layer for them
(mlcalc.servemeasured.engine_layer_floor_s less the matmuls' empty kernels, run RUN4), the same at every width and
batch; the serve5 call's profiled steps (engine_other_kernels_us) say more, growing with the batch.
Usage: python scripts/gpu/predict_serve5b.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlcalc import serving, servemeasured as sm  # noqa: E402

import serve5_probe as probe  # noqa: E402


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    law = sm.matmul_law(sm.RUN4)
    lo, hi, _ = sm.engine_other_kernels_us()
    out = {"about": __doc__.strip().splitlines()[0], "model_at_commit": commit,
           "profiled_other_us_per_layer_range": [lo, hi], "small": []}
    for m, tp in probe.SMALL_CASES:
        model = sm.tp_model(m)
        for b in probe.SMALL_BATCHES:
            n = serving.kernel_weight_s(model, b, law, True, tp)[1]
            out["small"].append({"model": m, "tp_shard": tp, "batch": b,
                                 "predicted_s": max(0.0, sm.engine_layer_floor_s(sm.RUN4) - n * law.empty_s)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve5b_predictions.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(path, len(out["small"]))


if __name__ == "__main__":
    main()
