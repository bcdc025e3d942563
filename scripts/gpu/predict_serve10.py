"""Blind predictions and the record rule for the serve10 call (scripts/gpu/run_serve10.sh), written before it ran.

The 14 points of the accuracy family ``decode`` (Llama-shaped 1B and 8B, transformers ``generate``, eager, static
cache) on one H100, each timed ``generate`` call with its own window recorded, the pinned vCPU metered all along.

The rule, stated here before the call: a point's launch floor is the floor probes' host work priced at the point's own
pace. Each tiny-model floor probe's seconds a step times its vCPU's pace over its own timed window is host work in
runs of the meter's fixed Python; the floor is the least-squares line of that work over layers
(``serving.floor_work``); a point's floor is that work over the pace of its own pinned vCPU over its own window (the
start of its first timed generate(1+N) call to the end of its second; ``serving.decode_point_window``), i.e.
distruns' stated-pace rule (host constants x STATED_PACE / pace) with the probes' seconds first brought to the stated
pace by their own meter (``serving.paced_floor``). Everything else as ``serving.check_decode``
(``serving.check_decode_paced``). Offline on serve9 (windows reconstructed from the timeline): 8 of 14 within 25 %
against 5 for the unpaced rule.

Record rule: the family's record becomes the serve10 run. It is checked by ``check_decode_paced`` (the call's own floor
probes, read bandwidth and copy rate) if that puts more points within 25 % than ``check_decode`` (the unpaced rule,
the call's own floor probes) on the same call; otherwise by ``check_decode``. serve9 becomes history with its scores.

Blind: ``check_decode_paced(serve10, inputs=serve9)``: serve9's floor work, read bandwidth and copy rate (none from the
call checked), each point at its own measured pace; the ``points`` below give the step it predicts at paces of 60 to
140 thousand runs a second. A second column, written before too: the same with each pace times its window's running
share (1 - stolen clock ticks of the vCPU over the window, /proc/stat), ``steal=True``.

Usage: python scripts/gpu/predict_serve10.py > scripts/gpu/serve10_predictions.json
"""

from __future__ import annotations

import json

from mlcalc import compute, serving

BASE = "h100-2026-11-27-serve9"
PACES = (60e3, 70e3, 80e3, 90e3, 100e3, 120e3, 140e3)


def main() -> None:
    work = serving.floor_work(BASE)
    bw, copy = serving.measured_read_bandwidth(BASE), serving.measured_copy_bandwidth(BASE)
    rate = compute.achievable_flops("H100-SXM", "bf16", "achievable")
    rows = []
    for key in ("1b", "8b"):
        model = serving.llama_shape(key, BASE)
        for pt in serving.measured_decode(BASE)[key]["points"]:
            b, c = int(pt["batch"]), int(pt["max_cache_len"])
            at = {f"{p / 1e3:.0f}k": round(serving.decode_step(model, b, c, bw, rate, 1, serving.paced_floor(work, p),
                                                               copy, small_kernels_s=serving.hf_small_kernels_s()
                                                               ).step_s * 1e3, 3) for p in PACES}
            rows.append({"model": key, "batch": b, "context": c, "predicted_step_ms_at_pace": at})
    unpaced = [{"model": x.model, "batch": x.batch, "context": x.context,
                "predicted_tokens_per_s": round(x.predicted_tokens_per_s, 3)} for x in serving.check_decode(BASE)]
    doc = __doc__
    print(json.dumps({"call": "serve10 (scripts/gpu/run_serve10.sh), one H100 (nvidia-h100-x1)",
                      "rule": doc.split("The rule, stated here before the call: ")[1].split("\n\nRecord rule")[0]
                      .replace("\n", " "),
                      "record_rule": doc.split("Record rule: ")[1].split("\n\nBlind")[0].replace("\n", " "),
                      "blind": doc.split("Blind: ")[1].split("\n\nUsage")[0].replace("\n", " "),
                      "criterion": "each point within 25 % of the measured tokens per second (the family's tolerance)",
                      "inputs": {"run": BASE, "floor_fixed_runs": work[0], "floor_runs_per_layer": work[1],
                                 "read_bytes_per_s": bw, "copy_bytes_per_s": copy},
                      "serve9_offline": {"paced_within_25": sum(abs(x.error) <= 0.25
                                                                for x in serving.check_decode_paced(BASE)),
                                         "unpaced_within_25": sum(abs(x.error) <= 0.25
                                                                  for x in serving.check_decode(BASE)), "n": 14},
                      "points": rows, "unpaced_blind_points": unpaced}, indent=1))


if __name__ == "__main__":
    main()
