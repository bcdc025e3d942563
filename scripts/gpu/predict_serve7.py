"""Predictions for the serve7 call's points, written BEFORE the call (scripts/gpu/serve7_predictions.json).

The call measures again the eager decode and prefill points that missed in the first two serving calls, with the host
probe (a tiny 8-layer Llama eager step, ``bench_serve.HostProbe``) timed next to every timing group. The prediction
of each point is a function of that probe's time ``h`` (the mean of the probes next to the point), stated here before
any of them is seen; every other number comes from the serve4 call (``RUN4``: read bandwidth, matmul rate, kernel
probe, and each architecture's tiny 2- and 8-layer models in units of the probe timed next to them):

    decode:  step(h) = max(fixed_units h, head_gpu_s) + layers x max(per_layer_units h, layer_gpu_s)
    prefill: total(h) = max(gpu_s, (fixed_units + layers x per_layer_units) h)

(:func:`mlcalc.servemeasured.predict_hf` / :func:`~mlcalc.servemeasured.predict_hf_prefill` with ``run=RUN4`` and
``host_s=h``). A second rule is written beside it, the operation count: the eager host time is the ATen operations
the step dispatches (counted on the tiny models, :func:`op_counts`) times the probe's time per operation (``h`` over
the probe step's 560 operations), the GPU parts as above.   Usage: python scripts/gpu/predict_serve7.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlcalc import servemeasured as sm  # noqa: E402

import bench_serve  # noqa: E402  (the points the call measures)

RUN = sm.RUN4
#: ATen operations (views included) of the host probe's step: the tiny 8-layer Llama at batch 1, cache 64 (RUN4's
#: tiny llama8b record with 8 layers counted 560).
PROBE_OPS = 560


def op_counts(arch: str) -> tuple[float, float]:
    """(operations outside the layers, per layer) of one eager decode step, from RUN4's tiny 2- and 8-layer models."""
    t = {int(x["n_layers"]): x for x in sm.run_data(RUN)["archs"][arch]["tiny"]}
    per = (int(t[8]["aten_ops"]) - int(t[2]["aten_ops"])) / 6.0
    return int(t[2]["aten_ops"]) - 2.0 * per, per


def decode_parts(arch: str, batch: int, context: int) -> dict:
    """The decode prediction's parts: the floor in probe units, the GPU time per layer and outside them."""
    model = sm.arch_model(arch, RUN)
    fl = sm.arch_floor(arch, "eager", RUN, 1.0)  # host_s = 1: the floor in units of the probe
    d = sm.predict_hf(arch, "eager", batch, context, RUN, 1e-9)  # a vanishing host: the GPU parts alone
    out_ops, per_ops = op_counts(arch)
    return {"arch": arch, "batch": batch, "context": context, "layers": model.n_layers,
            "fixed_units": fl.fixed_s, "per_layer_units": fl.per_layer_s,
            "layer_gpu_s": d.layer_gpu_s, "head_gpu_s": d.outside_s,
            "ops_outside": out_ops, "ops_per_layer": per_ops}


def prefill_parts(arch: str, batch: int, prompt: int) -> dict:
    model = sm.arch_model(arch, RUN)
    fl = sm.arch_floor(arch, "eager", RUN, 1.0)
    pr = sm.predict_hf_prefill(arch, batch, prompt, RUN, 1e-9)
    out_ops, per_ops = op_counts(arch)
    return {"arch": arch, "batch": batch, "prompt": prompt, "layers": model.n_layers,
            "fixed_units": fl.fixed_s, "per_layer_units": fl.per_layer_s,
            "gpu_s": pr.matmul_s + pr.attention_s + pr.elementwise_s, "ops_outside": out_ops, "ops_per_layer": per_ops}


def decode_s(p: dict, h: float, rule: str = "tiny") -> float:
    """The committed decode rule at probe time ``h``: "tiny" (RUN4's tiny models in probe units) or "ops"."""
    if rule == "ops":
        fixed, per = p["ops_outside"] * h / PROBE_OPS, p["ops_per_layer"] * h / PROBE_OPS
    else:
        fixed, per = p["fixed_units"] * h, p["per_layer_units"] * h
    return max(fixed, p["head_gpu_s"]) + p["layers"] * max(per, p["layer_gpu_s"])


def prefill_s(p: dict, h: float, rule: str = "tiny") -> float:
    if rule == "ops":
        host = (p["ops_outside"] + p["layers"] * p["ops_per_layer"]) * h / PROBE_OPS
    else:
        host = (p["fixed_units"] + p["layers"] * p["per_layer_units"]) * h
    return max(p["gpu_s"], host)


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"about": __doc__.strip().splitlines()[0], "machine_from": RUN, "model_at_commit": commit,
           "rule": "decode: max(fixed_units h, head_gpu_s) + layers max(per_layer_units h, layer_gpu_s); prefill: "
                   "max(gpu_s, (fixed_units + layers per_layer_units) h); h = mean of the host probes next to the point "
                   "(rule 'ops': fixed/per-layer = ATen operations x h / 560)",
           "probe_ops": PROBE_OPS, "decode": [], "prefill": []}
    for arch in sm.ARCHS:
        for b, c in bench_serve.MISSES_DECODE[arch]:
            p = decode_parts(arch, b, c)
            p["at_h_ms"] = {str(h): decode_s(p, h * 1e-3) for h in (8, 10, 12, 14)}
            out["decode"].append(p)
        for b, pr in bench_serve.MISSES_PREFILL[arch]:
            p = prefill_parts(arch, b, pr)
            p["at_h_ms"] = {str(h): prefill_s(p, h * 1e-3) for h in (8, 10, 12, 14)}
            out["prefill"].append(p)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve7_predictions.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(path, len(out["decode"]), len(out["prefill"]))


if __name__ == "__main__":
    main()
