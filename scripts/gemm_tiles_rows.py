"""The numbers behind tile15's finding (issue 25), row by row: does the matmuls' own time at the iteration's shapes
(tile and wave quantization included) account for the in-flight and MLPerf misses?

1. The gemm-tiles call (mlcalc/data/measured/h100-2026-11-27-gemm-tiles-record, one H100) against the predictions
   committed before it (scripts/gpu/gemm_tiles_predictions.json): the serving model's flat FLOPs and the tile rule
   (mlcalc.compute.gemm_kernel), each combined with the bytes as the model does (FP8: the sum; bf16: the longer),
   and the other combination beside it ("other": FP8 the longer, bf16 the sum), by dtype and row-count band: median
   error and median |error|.
2. Every in-flight row whose layer shapes were measured (dense Llama 3.1 8B/70B, Mixtral 8x7B; TensorRT-LLM v0.17
   and v1.0 tables): the published error, the rule's useful share at the iteration's tokens, the model's layer
   matmuls against the measured ones (mlcalc.servemeasured.gemm_evidence), and the error with the measured ones in
   place; the count within 25 % both ways.
3. The MLPerf Offline rows the same way.

Usage: .venv/bin/python scripts/gemm_tiles_rows.py
"""

from __future__ import annotations

import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlcalc import memory, mlperf, serving  # noqa: E402
from mlcalc import servemeasured as sm  # noqa: E402

BANDS = ((1, 128), (192, 384), (512, 1024), (1530, 4096))


def calls() -> None:
    pred = json.loads((ROOT / "scripts" / "gpu" / "gemm_tiles_predictions.json").read_text())
    raw = json.loads((ROOT / "mlcalc" / "data" / "measured" / f"{sm.GEMM_TIMES_RUN}-record" / "gemm_tiles.json")
                     .read_text())
    by = {(p["n"], p["k"], p["m"], p["dtype"]): p["H100-SXM"] for p in pred["points"]}
    bw = serving.read_bandwidth("H100-SXM")
    print("1. gemm-tiles call (H100): predicted / measured - 1, median and median |.| by band")
    print(f"{'dtype':5} {'M':>10} {'n':>4}  {'flat (model)':>14} {'tiled (model)':>14} {'flat other':>14} "
          f"{'tiled other':>14}")
    for dt in ("fp8", "bf16"):
        for lo, hi in BANDS:
            pts = [r for r in raw["points"] if r["dtype"] == dt and lo <= r["m"] <= hi]
            cols = []
            for key in ("flat_s", "tiled_s"):
                e = [by[(r["n"], r["k"], r["m"], dt)][key] / r["s"] - 1 for r in pts]
                cols.append(e)
            for tiled in (False, True):  # the other combination of bytes and FLOPs
                e = []
                for r in pts:
                    p = by[(r["n"], r["k"], r["m"], dt)]
                    b = 2.0 if dt == "bf16" else 1.0
                    read = (r["n"] * r["k"] * b + r["m"] * r["k"] * b + r["m"] * r["n"] * 2.0) / bw
                    math_s = 2.0 * r["m"] * r["n"] * r["k"] / serving.matmul_rate("H100-SXM", dt)
                    if tiled:
                        math_s /= p["useful"]
                    e.append((max(read, math_s) if dt == "fp8" else read + math_s) / r["s"] - 1)
                cols.append(e)
            print(f"{dt:5} {lo:>4}-{hi:<5} {len(pts):>4}  " + " ".join(
                f"{statistics.median(c):+6.0%} /{statistics.median(abs(x) for x in c):4.0%}" for c in cols))


def rows() -> None:
    print("\n2. in-flight rows with measured shapes: published error -> with the measured layer matmuls")
    n = before = after = 0
    for c, model, t, ev in sm.inflight_gemm_evidence():
        new = ev.tokens_per_s / c.published - 1
        n, before, after = n + 1, before + (abs(c.error) <= 0.25), after + (abs(new) <= 0.25)
        print(f"{c.source:22} {c.model:14} TP{c.gpus} {c.input:>5}/{c.output:<5} {ev.tokens:>6,} tokens  "
              f"{c.error:+5.0%} -> {new:+5.0%}  rule {sm.layers_gemm_useful(model, ev.tokens, c.gpus, t['chip']):4.0%}"
              f"  matmuls {ev.modelled_s * 1e3:7.2f} ms modelled, {ev.measured_s * 1e3:7.2f} measured")
    print(f"within 25 %: {before} of {n} as modelled, {after} with the measured matmuls")


def mlperf_rows() -> None:
    print("\n3. MLPerf Offline rows with measured shapes")
    for c in mlperf.check():
        row = next(r for r in mlperf.results() if r["system"] == c.system and r["scenario"] == c.scenario
                   and r["benchmark"] == c.benchmark and r["round"] == c.round)
        if c.scenario != "Offline":
            continue
        model = memory.model_preset(c.model)
        got = mlperf.replica_at_load(row)
        ev = sm.gemm_evidence(model, row["chip"], int(row["tp"]), got, row["precision"])
        if ev is None:
            continue
        new = ev.tokens_per_s / (got.tokens_per_s / (1 + c.error)) - 1
        print(f"{c.round:5} {c.system[:40]:40} {c.model:14} {ev.tokens:>6,} tokens  {c.error:+5.0%} -> {new:+5.0%}  "
              f"matmuls {ev.modelled_s * 1e3:6.2f} ms modelled, {ev.measured_s * 1e3:6.2f} measured")


if __name__ == "__main__":
    calls()
    rows()
    mlperf_rows()
