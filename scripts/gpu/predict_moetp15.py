"""Blind predictions for scripts/gpu/moetp15_grouped.py (issue #25), written before the GPU call.

For each case (card, dtype, rows an expert, layout) the book's own laws give the two grouped expert matmuls' time:
``flat``: mlcalc.serving.matmul_s over the bytes they move (the experts' weights, every row's input, gate/up output,
down input and output: mlcalc.serving's feed-forward activation rule at the layout's width) and their FLOPs at the
card's matmul rate, summed for FP8 (SERIAL_MATMUL_DTYPES), the longer for bf16, as mlcalc.servemeasured.inflight
charges; ``kernel``: the same with the FLOPs divided by the useful share mlcalc.compute.gemm_kernel finds for each
grouped matmul (tiles summed over the experts; K padded to the tile depth). The quantity scored is the tensor-parallel
layout's time over the expert-parallel one's at the same rows, dtype and card.

Scoring rule, stated before the call: the book's rule for thin slices holds where the measured ratio is within
+-25 % of the ``kernel`` prediction; the thin-slice hypothesis of trt14/adp14 (the engine charges only 53-66 % of the
time thin slices take) predicts the measured ratio at 1.5x the ``flat`` one or more. Scored on the FP8 cases (the
published runs' dtype) at 112-1,024 rows; bf16 and 64 rows are reported beside them."""

from __future__ import annotations

import json
import sys

from mlcalc import compute, serving

HIDDEN, EXPERTS, WIDTH, TP = 4096, 128, 1536, 8
ROWS = (64, 112, 240, 480, 1024)
LAYOUTS = {"ep": (EXPERTS // TP, WIDTH), "tp": (EXPERTS, WIDTH // TP)}


def predict(chip: str, dtype: str, experts: int, width: int, rows: int) -> dict:
    wb = 1.0 if dtype == "fp8" else 2.0
    bw, rate = serving.read_bandwidth(chip), serving.matmul_rate(chip, dtype)
    sms = serving.spec(chip).sm_count
    weights = experts * 3 * width * HIDDEN * wb
    act = experts * rows * (wb * (HIDDEN + width) + 2.0 * (2 * width + HIDDEN))
    flops = 2.0 * experts * rows * 3 * width * HIDDEN
    serial = dtype in serving.SERIAL_MATMUL_DTYPES
    useful = (2 * compute.gemm_kernel(rows, 2 * width * experts, HIDDEN, sms, dtype).useful
              + compute.gemm_kernel(rows, HIDDEN * experts, width, sms, dtype).useful) / 3
    flat = serving.matmul_s(weights + act, flops, bw, rate, overlap=not serial)
    kern = serving.matmul_s(weights + act, flops / useful, bw, rate, overlap=not serial)
    return {"chip": chip, "dtype": dtype, "experts": experts, "width": width, "rows_per_expert": rows,
            "bytes": weights + act, "flops": flops, "useful": useful, "flat_s": flat, "kernel_s": kern}


def main() -> None:
    cases, ratios = [], []
    for chip in ("H100-SXM", "H200-SXM"):
        for dtype in ("bf16", "fp8"):
            for rows in ROWS:
                p = {k: predict(chip, dtype, *v, rows) for k, v in LAYOUTS.items()}
                cases += [dict(v, layout=k) for k, v in p.items()]
                ratios.append({"chip": chip, "dtype": dtype, "rows_per_expert": rows,
                               "flat_tp_over_ep": p["tp"]["flat_s"] / p["ep"]["flat_s"],
                               "kernel_tp_over_ep": p["tp"]["kernel_s"] / p["ep"]["kernel_s"]})
    doc = {"what": __doc__, "cases": cases, "ratios": ratios}
    path = sys.argv[1] if len(sys.argv) > 1 else "scripts/gpu/moetp15_predictions.json"
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    for r in ratios:
        print(r["chip"], r["dtype"], r["rows_per_expert"], f"flat {r['flat_tp_over_ep']:.2f}",
              f"kernel {r['kernel_tp_over_ep']:.2f}")


if __name__ == "__main__":
    main()
