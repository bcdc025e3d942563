"""Predictions for the serve8 call's points, written BEFORE the call (scripts/gpu/serve8_predictions.json).

The call measures EVERY eager decode and prefill point of the serving calls (65 decode, 40 prefill: the first calls'
8 decode and 5 prefill points per architecture and the serve4 call's 5 and 3) in one protocol: one process per
architecture pinned to the vCPU found fastest just before it starts, the host probe (a tiny 8-layer Llama eager step,
``bench_serve.HostProbe``) timed before every timing group and after the last, the first point of each process kept
apart. Each point's prediction is the rule already adopted (serve7's, :func:`mlcalc.servemeasured.predict_hf` /
:func:`~mlcalc.servemeasured.predict_hf_prefill` with ``host_s``), as a function of the probe's time ``h`` next to
the point (the mean of its probes), stated here before any of them is seen; every other number comes from an earlier
call (``RUN4``: read bandwidth, matmul rate, kernel probe, and each architecture's tiny 2- and 8-layer models in units
of the probe timed next to them):

    decode:  step(h) = max(fixed_units h, head_gpu_s) + layers x max(per_layer_units h, layer_gpu_s)
    prefill: total(h) = max(gpu_s, (fixed_units + layers x per_layer_units) h)

A second column (``tiny7``) gives the same rule with the serve7 call's tiny models in probe units (the other call that
timed them next to the probe); the blind score is the ``tiny`` (serve4) column's, as for serve7.
Usage: python scripts/gpu/predict_serve8.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlcalc import servemeasured as sm  # noqa: E402

import bench_serve  # noqa: E402  (the points the call measures)

RUNS = {"tiny": sm.RUN4, "tiny7": sm.RUN7}


def decode_parts(arch: str, batch: int, context: int, run: str) -> dict:
    """The decode prediction's parts: the floor in probe units, the GPU time per layer and outside them."""
    model = sm.arch_model(arch, run)
    fl = sm.arch_floor(arch, "eager", run, 1.0)  # host_s = 1: the floor in units of the probe
    d = sm.predict_hf(arch, "eager", batch, context, run, 1e-9)  # a vanishing host: the GPU parts alone
    return {"layers": model.n_layers, "fixed_units": fl.fixed_s, "per_layer_units": fl.per_layer_s,
            "layer_gpu_s": d.layer_gpu_s, "head_gpu_s": d.outside_s}


def prefill_parts(arch: str, batch: int, prompt: int, run: str) -> dict:
    model = sm.arch_model(arch, run)
    fl = sm.arch_floor(arch, "eager", run, 1.0)
    pr = sm.predict_hf_prefill(arch, batch, prompt, run, 1e-9)
    return {"layers": model.n_layers, "fixed_units": fl.fixed_s, "per_layer_units": fl.per_layer_s,
            "gpu_s": pr.matmul_s + pr.attention_s + pr.elementwise_s}


def decode_s(p: dict, h: float) -> float:
    """The committed decode rule at probe time ``h`` (seconds)."""
    return max(p["fixed_units"] * h, p["head_gpu_s"]) + p["layers"] * max(p["per_layer_units"] * h, p["layer_gpu_s"])


def prefill_s(p: dict, h: float) -> float:
    return max(p["gpu_s"], (p["fixed_units"] + p["layers"] * p["per_layer_units"]) * h)


def points() -> tuple[dict, dict]:
    dec = {a: bench_serve.ALL_DECODE.get(a, bench_serve.DECODE_POINTS + bench_serve.HELDOUT_DECODE) for a in sm.ARCHS}
    return dec, {a: bench_serve.ALL_PREFILL for a in sm.ARCHS}


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"about": __doc__.strip().splitlines()[0], "machine_from": RUNS, "model_at_commit": commit,
           "rule": "decode: max(fixed_units h, head_gpu_s) + layers max(per_layer_units h, layer_gpu_s); prefill: "
                   "max(gpu_s, (fixed_units + layers per_layer_units) h); h = mean of the host probes next to the point; "
                   "scored column: tiny (serve4's tiny models), tiny7 beside it",
           "target": dict(sm.TARGET), "decode": [], "prefill": []}
    dec, pre = points()
    for arch in sm.ARCHS:
        for b, c in dec[arch]:
            p = {"arch": arch, "batch": b, "context": c}
            for k, run in RUNS.items():
                p[k] = decode_parts(arch, b, c, run)
                p[k]["at_h_ms"] = {str(h): decode_s(p[k], h * 1e-3) for h in (6, 8, 10, 12, 14, 18)}
            out["decode"].append(p)
        for b, pr in pre[arch]:
            p = {"arch": arch, "batch": b, "prompt": pr}
            for k, run in RUNS.items():
                p[k] = prefill_parts(arch, b, pr, run)
                p[k]["at_h_ms"] = {str(h): prefill_s(p[k], h * 1e-3) for h in (6, 8, 10, 12, 14, 18)}
            out["prefill"].append(p)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve8_predictions.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(path, len(out["decode"]), len(out["prefill"]))


if __name__ == "__main__":
    main()
