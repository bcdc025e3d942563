"""Blind predictions for the serve9 call (scripts/gpu/run_serve9.sh), written before it ran.

Every point of the accuracy family ``decode`` (Llama-shaped 1B and 8B, transformers ``generate``, eager, static
cache; 7 points each) on one H100, predicted by :func:`mlcalc.serving.decode_step` exactly as
:func:`mlcalc.serving.check_decode` runs it, with the inputs of the earlier H100 run (h100-2026-11-26-decode: its
two floor probes, its read bandwidth and its repeat_kv copy rate): none of them from the call checked.

The record rule, stated here before the call: the family's record is the serve9 run checked by ``check_decode`` with
the call's own inputs (the floor as the least-squares line through its three floor probes, start / middle / end; the
read bandwidth as their mean; the copy rate from the call's attention micro-benchmark), as every earlier decode run
was checked. Criterion: each point within 25 % (the family's tolerance).

Usage: python scripts/gpu/predict_serve9.py > scripts/gpu/serve9_predictions.json
"""

from __future__ import annotations

import json

from mlcalc import serving

BASE = "h100-2026-11-26-decode"


def main() -> None:
    rows = [{"model": c.model, "batch": c.batch, "context": c.context,
             "predicted_tokens_per_s": round(c.predicted_tokens_per_s, 3), "bound": c.bound}
            for c in serving.check_decode(BASE)]
    fl = serving.measured_floor(BASE)
    print(json.dumps({"call": "serve9 (scripts/gpu/run_serve9.sh), one H100 (nvidia-h100-x1)",
                      "inputs": {"run": BASE, "floor_fixed_s": fl.fixed_s, "floor_per_layer_s": fl.per_layer_s,
                                 "read_bytes_per_s": serving.measured_read_bandwidth(BASE),
                                 "copy_bytes_per_s": serving.measured_copy_bandwidth(BASE)},
                      "criterion": "each point within 25 % of the measured tokens per second",
                      "record_rule": __doc__.split("The record rule, stated here before the call: ")[1].split(
                          "\n\nUsage")[0].replace("\n", " "),
                      "points": rows}, indent=1))


if __name__ == "__main__":
    main()
