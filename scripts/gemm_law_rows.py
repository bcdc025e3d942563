"""The numbers behind gemm15's change (issue 25), row by row: the serving engine's in-flight iteration with one
matmul law for every dtype (mlcalc.serving.gemm_law_s: the longer of bytes and FLOPs, the decode-matmul probe's
fixed time and rate, the card's sustained rate over compute.gemm_kernel's useful share) and the layers' element-wise
passes (mlcalc.serving.layer_elementwise_bytes_per_token: FP8 input quantization, SiLU x mul, rotary and cache
write).

1. The law against the gemm-tiles call (1,088 products, one H100): median error and median |error| by dtype and band.
2. Every tensor-parallel in-flight row (TensorRT-LLM v0.17 and v1.0 tables): its error, the tokens an iteration
   carries, the iteration's parts, what the published throughput leaves per token and layer beyond the model, and
   where the shapes were measured the law's layer matmuls against the measured ones.

Usage: .venv/bin/python scripts/gemm_law_rows.py
"""

from __future__ import annotations

import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlcalc import serving  # noqa: E402
from mlcalc import servemeasured as sm  # noqa: E402

BANDS = ((1, 128), (192, 384), (512, 1024), (1530, 4096))


def law() -> None:
    print(f"1. one law against the gemm-tiles call ({sm.measured_gemm_card()}): predicted / measured - 1")
    for dt in ("fp8", "bf16"):
        cells = []
        for lo, hi in BANDS:
            e = [serving.gemm_law_s(m, n, k, "H100-SXM", dt) / s - 1 for (d, n, k), pts in
                 sm.measured_gemm_curves().items() if d == dt for m, s in pts if lo <= m <= hi]
            cells.append(f"M {lo}-{hi}: {statistics.median(e):+.0%} / {statistics.median(abs(x) for x in e):.0%}"
                         f" (n {len(e)})")
        print(f"  {dt:5} " + "; ".join(cells))


def rows() -> None:
    print("\n2. tensor-parallel in-flight rows")
    within = n = 0
    for c in sm.check_inflight():
        if c.attention_dp:
            continue
        model, t, got = sm.inflight_as_stated(c)
        it = got.iteration_s
        ev = sm.gemm_evidence(model, t["chip"], c.gpus, got, t["dtype"])
        meas = "" if ev is None else f"  layers' matmuls {ev.modelled_s * 1e3:6.2f} ms law, {ev.measured_s * 1e3:6.2f} measured"
        n, within = n + 1, within + (abs(c.error) <= 0.25)
        print(f"{c.source:20} {c.model:14} TP{c.gpus} {c.input:>5}/{c.output:<5} {got.batch + got.prefill_tokens:>7,.0f} tok"
              f"  {c.error:+5.0%}  matmuls {got.gemm_s / it:4.0%} attention {(got.attention_s + got.prefill_attention_s) / it:4.0%}"
              f" comm {got.comm_s / it:4.0%} element-wise {got.norm_s / it:4.0%}"
              f"  leaves {sm.inflight_leftover(model, got, c.published) * 1e9:+6.0f} ns/token/layer{meas}")
    print(f"within 25 %: {within} of {n}")


if __name__ == "__main__":
    law()
    rows()
