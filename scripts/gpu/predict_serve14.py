"""Predictions, the record rule and the cause rule for the serve14 call (scripts/gpu/run_serve14.sh), written before
it ran.

The call: the serve13 call again (scripts/gpu/run_serve13.sh: the 14 points of the accuracy family ``decode``,
Llama-shaped 1B and 8B, transformers ``generate``, eager, static cache, one H100, 3 rounds in each model's process in
the same orders, seed 13, the host probe before every point of every round, the first point of each process measured
once and kept apart, the floor probe at the start, middle and end, the host time of every forward) with
scripts/gpu/bench_decode.py's static-cache reset (41479d9): every round of every point runs over the point's own cache
length (recorded per timed call, ``static_cache_len``). In serve13 transformers' generate ran rounds 2 and 3 of the
eight 545-token points over a 4,129-token cache, so its record took ONE round for each of those points; here every
point should have 3 rounds at its own length. CPU dry run before the call: the caches generate built, read off
``StaticCache``'s constructor, were each point's own length in every round (a short point after a long one too).

The rule: the engine as it is (``serving.check_decode``: ``decode_step`` with the layers on their in-order critical
path, the floor the least-squares line of the call's own floor probes, the call's own read bandwidth and repeat_kv
copy rate); no change to the model for this call. A point's measured step is the median of its rounds' steps at its
own cache length (``serving_record.decode_rounds``; of two rounds their mean, of one that one); every round's value
is kept as data.

Record rule: this call becomes the family's record whatever its score (``serving.DECODE_RECORD``, checked by
``check_decode`` as above); serve13 becomes history with its score (14 of 14 within 25 %) and its flaw stated: its
eight 545-token points rest on one round each (rounds 2-3 ran over a 4,129-token cache), as serve10, serve9 and the
2026-11-26 runs stay history.

Blind: ``points`` below are the engine's predictions with inputs from runs before this call only: serve13's floor
probes (start, middle, end), read bandwidth and repeat_kv copy rate (``check_decode(serve13)``'s predicted step at
each shape, nothing from this call); the call is scored against them too (``blind_within_25``), and against the
record's check (its own probes).

Cause rule, stated before the call, for every point outside 25 % under the record's check: (1) the host: if in the
point's median round the host's time per decode forward (the hooks) is at least 80 % of the measured step AND longer
than the GPU work the engine predicts for the step's layers (L x the layer's GPU time, ``gpu_layers_ms`` below), the
step was set by the host; the cause states that host time against the floor probes' host time for the same forward
(L x the per-layer floor, the fixed part beside it) and the rounds' spread. (2) The spread: if any round of the point
is within 25 %, the cause adds that the point's rounds span min-max (one sample of a moving host). (3) Neither: the
point is a miss with no stated cause, said so.

Usage: python scripts/gpu/predict_serve14.py > scripts/gpu/serve14_predictions.json
"""

from __future__ import annotations

import json

from mlcalc import serving, serving_record

BASE = "h100-2026-11-27-serve13"


def _part(doc: str, head: str, nxt: str) -> str:
    return " ".join(doc.split(head)[1].split(nxt)[0].split())


def main() -> None:
    fl = serving.measured_floor(BASE)
    rounds = {(r.model, r.batch, r.context): r for r in serving_record.decode_rounds(BASE)}
    checks = serving_record.check_decode(BASE)
    rows = []
    for c in checks:
        g, h = serving.decode_layer_parts(c, BASE)
        n_layers = serving_record.llama_shape(c.model, BASE).n_layers
        r = rounds[(c.model, c.batch, c.context)]
        rows.append({"model": c.model, "batch": c.batch, "context": c.context,
                     "predicted_step_ms": round(c.batch / c.predicted_tokens_per_s * 1e3, 3),
                     "predicted_tokens_per_s": round(c.predicted_tokens_per_s, 3), "bound": c.bound,
                     "layer_gpu_ms": round(g * 1e3, 4), "layer_host_floor_ms": round(h * 1e3, 4),
                     "gpu_layers_ms": round(n_layers * g * 1e3, 3),
                     "floor_host_per_forward_ms": round(n_layers * h * 1e3, 3),
                     "serve13_measured_step_ms": round(c.batch / c.measured_tokens_per_s * 1e3, 3),
                     "serve13_rounds_at_own_cache": len(r.rounds),
                     "serve13_error": round(c.error, 4)})
    doc = __doc__
    print(json.dumps({"call": "serve14 (scripts/gpu/run_serve14.sh), one H100 (nvidia-h100-x1)",
                      "protocol": _part(doc, "The call: ", "\n\nThe rule"),
                      "rule": _part(doc, "The rule: ", "\n\nRecord rule"),
                      "record_rule": _part(doc, "Record rule: ", "\n\nBlind"),
                      "blind": _part(doc, "Blind: ", "\n\nCause rule"),
                      "cause_rule": _part(doc, "Cause rule, stated before the call, ", "\n\nUsage"),
                      "criterion": "each point within 25 % of the measured tokens per second (the family's tolerance)",
                      "inputs": {"run": BASE, "floor_fixed_s": fl.fixed_s, "floor_per_layer_s": fl.per_layer_s,
                                 "read_bytes_per_s": serving.measured_read_bandwidth(BASE),
                                 "copy_bytes_per_s": serving.measured_copy_bandwidth(BASE)},
                      "serve13_within_25": sum(abs(c.error) <= 0.25 for c in checks), "n": len(checks),
                      "points": rows}, indent=1))


if __name__ == "__main__":
    main()
