"""The engine's predictions of every case of the blind10 call (scripts/gpu/run_blind10.sh), written BEFORE the call
to ``scripts/gpu/blind10_predictions.json`` for both cards a 2-GPU ask may bring (an H100 ask has come as H200s
before). Nothing the call measures goes into them: every input is from runs made before it.

Families and what predicts them (each the function the accuracy page's family calls, with a stated input run):

- ``train-1gpu`` (``train_hf.py --sweep blind10``): peak memory ``mlcalc.memory.training_peak``; step
  ``mlcalc.steptime.step_time`` on the card's machine ``mlcalc.hfruns.machine`` (H100: h100-2026-11-26-train-hf,
  H200: h200x2-2026-11-26-train-hf-run2, each with its own rates and floors). Targets: memory 10 %, step 20 %.
- ``train-2gpu`` (``train_dist.py --sweep blind10``): ``mlcalc.distruns.predict_planned`` (step and per-GPU peak), the
  engine's default (no meters). Targets: memory 10 %, step 15 %.
- ``decode-generate`` (``bench_decode.py --points``, eager ``generate``, static cache, Llama-shaped 1B and 8B): the
  decode family's rule (``serving.decode_step`` as ``serving_record.check_decode`` calls it) with the inputs of the
  last run on the same card: H100 the record h100-2026-11-27-serve14 (floor probes, read bandwidth, repeat_kv copy
  rate), H200 h200x4-2026-11-26-decode. Context = prompt + 33 (the static cache of a 33-token generate). Target 25 %.
- ``serve-eager`` / ``serve-graph`` / ``serve-prefill`` (``bench_serve.py --points blind10``, transformers forward,
  llama8b and gemma3_4b): ``servemeasured.predict_hf`` and ``predict_hf_prefill`` with the eager record's inputs
  (h200-2026-11-27-serve8: tiny-model floors at that run's host pace, no host probe of this call, read bandwidth,
  matmul rate); on an H100 the same with the H100's read bandwidth (serve14's probe) and matmul rate (serve8's
  8192^3 rate x the H100 / H200 ratio of the bench's 8192^3 reference rates). Targets: eager 25 %, graph 20 %,
  prefill 25 % (the eager target, as the accuracy page holds it).

    python scripts/gpu/predict_blind10.py   (writes scripts/gpu/blind10_predictions.json)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mlcalc import compute, distruns, hfruns, measured, memory, models, serving, steptime  # noqa: E402
from mlcalc import servemeasured as sm  # noqa: E402
from mlcalc import serving_record as rec  # noqa: E402

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
CARDS = (H100, H200)
HF_MACHINE = {H100: "h100-2026-11-26-train-hf", H200: "h200x2-2026-11-26-train-hf-run2"}
DECODE_INPUTS = {H100: "h100-2026-11-27-serve14", H200: "h200x4-2026-11-26-decode"}
SERVE_INPUTS = sm.RUN8
#: bench_decode.py's points (batch, prompt) per model, and its new tokens (the static cache: prompt + 1 + 32)
DECODE_POINTS = {"1b": [(4, 1024), (48, 1024), (2, 8192)], "8b": [(4, 1024), (24, 2048), (2, 8192)]}
NEW_TOKENS = 32
TARGETS = {"train-1gpu": {"memory": 0.10, "step": 0.20}, "train-2gpu": {"memory": 0.10, "step": 0.15},
           "decode-generate": 0.25, "serve-eager": 0.25, "serve-graph": 0.20, "serve-prefill": 0.25}


def hf_id(c: dict[str, Any]) -> str:
    return f"{c['model']['name']}|b{c['batch']}|s{c['seq_len']}" + ("|rc" if c["recompute"] else "")


def train_1gpu() -> dict[str, dict[str, Any]]:
    from train_hf import blind10_cases

    out: dict[str, dict[str, Any]] = {}
    for card in CARDS:
        mach = hfruns.machine(HF_MACHINE[card])
        rows = {}
        for c in blind10_cases():
            m = models.from_dict(c["model"])
            b, s, rc = int(c["batch"]), int(c["seq_len"]), bool(c["recompute"])
            rows[hf_id(c)] = {"step_s": steptime.step_time(m, b, s, rc, mach).total_s,
                              "peak_bytes": memory.training_peak(m, b, s, rc).total_bytes}
        out[card] = rows
    return out


def train_2gpu() -> dict[str, dict[str, Any]]:
    from train_dist import blind10_cases

    out: dict[str, dict[str, Any]] = {}
    for card in CARDS:
        out[card] = {}
        for c in blind10_cases():
            p = distruns.predict_planned(c, card)
            out[card][c["id"]] = {"step_s": p.step_s, "peak_bytes": p.peak_bytes_per_gpu}
    return out


def decode_generate() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for card in CARDS:
        run = DECODE_INPUTS[card]
        floor, bw, copy = serving.measured_floor(run), serving.measured_read_bandwidth(run), \
            serving.measured_copy_bandwidth(run)
        rate = compute.achievable_flops("H200-SXM" if "H200" in card else "H100-SXM", "bf16", "achievable")
        rows = {}
        for key, pts in DECODE_POINTS.items():
            model = rec.llama_shape(key, run)
            for b, p in pts:
                ctx = p + 1 + NEW_TOKENS
                d = serving.decode_step(model, b, ctx, bw, rate, 1, floor, copy,
                                        small_kernels_s=serving.hf_small_kernels_s())
                rows[f"{key}|b{b}|c{ctx}"] = {"tokens_per_s": d.tokens_per_s, "step_s": b / d.tokens_per_s,
                                              "bound": d.bound}
        out[card] = rows
    return out


@contextmanager
def on_h100() -> Iterator[None]:
    """servemeasured's H200 inputs with the H100's read bandwidth and matmul rate (module functions swapped while
    predicting, put back after)."""
    bw = serving.measured_read_bandwidth(DECODE_INPUTS[H100])
    ratio = measured.matmul("H100-SXM", "bf16").reference_tflops / measured.matmul("H200-SXM", "bf16").reference_tflops
    rate = sm.matmul_rate(SERVE_INPUTS) * ratio
    old = sm.read_bandwidth, sm.matmul_rate
    sm.read_bandwidth = lambda run=sm.RUN: bw  # type: ignore[assignment]
    sm.matmul_rate = lambda run=sm.RUN: rate  # type: ignore[assignment]
    try:
        yield
    finally:
        sm.read_bandwidth, sm.matmul_rate = old


def serve() -> dict[str, dict[str, Any]]:
    from bench_serve import BLIND10_DECODE, BLIND10_PREFILL

    out: dict[str, dict[str, Any]] = {}
    for card in CARDS:
        rows: dict[str, Any] = {}
        with (on_h100() if card == H100 else _null()):
            for arch, pts in BLIND10_DECODE.items():
                for b, c in pts:
                    for path in ("eager", "graph"):
                        d = sm.predict_hf(arch, path, b, c, SERVE_INPUTS, None)
                        rows[f"{path}|{arch}|b{b}|c{c}"] = {"step_s": d.step_s, "bound": d.bound}
            for arch, pts in BLIND10_PREFILL.items():
                for b, p in pts:
                    pr = sm.predict_hf_prefill(arch, b, p, SERVE_INPUTS, None)
                    rows[f"prefill|{arch}|b{b}|p{p}"] = {"step_s": pr.total_s, "bound": pr.bound}
        out[card] = rows
    return out


@contextmanager
def _null() -> Iterator[None]:
    yield


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    doc = {"_about": "The engine's predictions of every case of scripts/gpu/run_blind10.sh, made before the call "
                     f"(engine at commit {commit}); inputs from earlier runs only (see the script's docstring)",
           "how": " ".join(__doc__.split("Families and what predicts them")[1].split("\n\n    python")[0].split()),
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "engine_commit": commit,
           "targets": TARGETS,
           "families": {"train-1gpu": train_1gpu(), "train-2gpu": train_2gpu(), "decode-generate": decode_generate(),
                        "serve": serve()}}
    with open(os.path.join(HERE, "blind10_predictions.json"), "w") as f:
        json.dump(doc, f, indent=1)
    for fam, cards in doc["families"].items():
        for card, rows in cards.items():
            for k, v in rows.items():
                extra = f" {v['peak_bytes'] / 2**30:6.2f} GiB" if "peak_bytes" in v else f" {v.get('bound', '')}"
                print(f"{fam:16s} {card[:12]:12s} {k:44s} {v['step_s'] * 1e3:9.2f} ms{extra}")


if __name__ == "__main__":
    main()
