"""Predictions, the record rule and the cause rule for the serve13 call (scripts/gpu/run_serve13.sh), written before
it ran.

The call: the 14 points of the accuracy family ``decode`` (Llama-shaped 1B and 8B, transformers ``generate``, eager,
static cache) on one H100, serve10's protocol with every point measured in 3 rounds in its process (the first round
in the script's order, the next two shuffled with a fixed seed: scripts/gpu/bench_decode.py ``round_orders``), the
host probe before every point of every round, the first point of each process measured once and kept apart, the floor
probe at the start, middle and end, and the host's side of every forward of every timed generate call timed by a
forward pre-hook and hook (perf_counter; kept as data beside the step time, not used by any prediction).

The rule: the engine as it is (``serving.check_decode``: ``decode_step`` with the layers on their in-order critical
path, the floor the least-squares line of the call's own floor probes, the call's own read bandwidth and repeat_kv
copy rate); no change to the model for this call. A point's measured step is the median of its rounds' steps (of two
rounds their mean, of one that one); every round's value is kept as data.

Record rule: this call becomes the family's record whatever its score (``serving.DECODE_RECORD``, checked by
``check_decode`` as above); serve10 stays as history with its score (13 of 14 within 25 %), as serve9 and the
2026-11-26 runs do.

Blind: ``points`` below are the engine's predictions with the record's inputs before this call (serve10's floor
probes, read bandwidth and copy rate: ``check_decode(serve10)``'s predicted step at each shape, none from this call);
the call is scored against them too (``blind_within_25``), and against the record's check (its own probes).

Cause rule, stated before the call, for every point outside 25 % under the record's check (the 1B batch 16 x 4,129
point above all): (1) the host: if in the point's median round the host's time per decode forward (the hooks) is at
least 80 % of the measured step AND longer than the GPU work the engine predicts for the step's layers (L x the
layer's GPU time, ``gpu_layers_ms`` below), the step was set by the host; the cause states that host time against the floor probes' host time for the same forward (L x the per-layer
floor, the fixed part beside it) and the rounds' spread. (2) The spread: if any round of the point is within 25 %, the
cause adds that the point's rounds span min-max (one sample of a moving host). (3) Neither: the point is a miss with
no stated cause, said so. The same host-time reading is shown for every point (not used in the prediction).

Usage: python scripts/gpu/predict_serve13.py > scripts/gpu/serve13_predictions.json
"""

from __future__ import annotations

import json

from mlcalc import serving

BASE = "h100-2026-11-27-serve10"


def _part(doc: str, head: str, nxt: str) -> str:
    return " ".join(doc.split(head)[1].split(nxt)[0].split())


def main() -> None:
    fl = serving.measured_floor(BASE)
    rows = []
    for c in serving.check_decode(BASE):
        g, h = serving.decode_layer_parts(c, BASE)
        n_layers = serving.llama_shape(c.model, BASE).n_layers
        rows.append({"model": c.model, "batch": c.batch, "context": c.context,
                     "predicted_step_ms": round(c.batch / c.predicted_tokens_per_s * 1e3, 3),
                     "predicted_tokens_per_s": round(c.predicted_tokens_per_s, 3), "bound": c.bound,
                     "layer_gpu_ms": round(g * 1e3, 4), "layer_host_floor_ms": round(h * 1e3, 4),
                     "gpu_layers_ms": round(n_layers * g * 1e3, 3),
                     "floor_host_per_forward_ms": round(n_layers * h * 1e3, 3),
                     "serve10_measured_step_ms": round(c.batch / c.measured_tokens_per_s * 1e3, 3),
                     "serve10_error": round(c.error, 4)})
    doc = __doc__
    print(json.dumps({"call": "serve13 (scripts/gpu/run_serve13.sh), one H100 (nvidia-h100-x1)",
                      "protocol": _part(doc, "The call: ", "\n\nThe rule"),
                      "rule": _part(doc, "The rule: ", "\n\nRecord rule"),
                      "record_rule": _part(doc, "Record rule: ", "\n\nBlind"),
                      "blind": _part(doc, "Blind: ", "\n\nCause rule"),
                      "cause_rule": _part(doc, "Cause rule, stated before the call, ", "\n\nUsage"),
                      "criterion": "each point within 25 % of the measured tokens per second (the family's tolerance)",
                      "inputs": {"run": BASE, "floor_fixed_s": fl.fixed_s, "floor_per_layer_s": fl.per_layer_s,
                                 "read_bytes_per_s": serving.measured_read_bandwidth(BASE),
                                 "copy_bytes_per_s": serving.measured_copy_bandwidth(BASE)},
                      "serve10_within_25": sum(abs(c.error) <= 0.25 for c in serving.check_decode(BASE)), "n": 14,
                      "points": rows}, indent=1))


if __name__ == "__main__":
    main()
