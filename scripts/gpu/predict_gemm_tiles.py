"""Predictions for the gemm-tiles call (scripts/gpu/gemm_tiles.py, issue 25, tile15), written before it ran.

Every point of the call (one projection of Llama 3.1 8B / Mixtral 8x7B or Llama 3.1 70B, split 1-8 ways, at M = 1 ..
4,096 rows, bf16 through ``F.linear`` and FP8 through ``torch._scaled_mm``) predicted for the H100 SXM and the H200
(whichever card comes), two ways:

* ``flat``: the serving model as it is (:func:`mlcalc.serving.matmul_s`): the product's bytes (its weights, its input
  in its own dtype, its bf16 output) at the card's read bandwidth (:func:`mlcalc.serving.read_bandwidth`) and its
  FLOPs at the card's maximum achievable rate (:func:`mlcalc.serving.matmul_rate`), added for FP8 and the longer of
  the two for bf16 (:data:`mlcalc.serving.SERIAL_MATMUL_DTYPES`).
* ``tiled``: the same with the FLOPs at that rate times the useful share of the tile the rule picks
  (:func:`mlcalc.compute.gemm_kernel`, the card's SMs from the catalogue): tile, wave and split-K quantization.

The rule's constants are sourced or stated in mlcalc.compute, none fitted to this call. What would count as the rule
holding, stated now: at M >= 512, where the FLOPs are at least comparable with the bytes, ``tiled`` is closer to
the measured time than ``flat`` on most points of each dtype, and its median absolute error is within 15 %.

Usage: python scripts/gpu/predict_gemm_tiles.py > scripts/gpu/gemm_tiles_predictions.json
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mlcalc import compute, serving  # noqa: E402
from mlcalc.accelerators import spec  # noqa: E402

_spec = importlib.util.spec_from_file_location("gemm_tiles", ROOT / "scripts" / "gpu" / "gemm_tiles.py")
assert _spec is not None and _spec.loader is not None
gemm_tiles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gemm_tiles)

CARDS = ("H100-SXM", "H200-SXM")


def predict(chip: str, m: int, n: int, k: int, dtype: str, tiled: bool) -> float:
    """Seconds of one ``m x n x k`` product on ``chip`` in ``dtype`` as the serving model prices it."""
    b = 2.0 if dtype == "bf16" else 1.0
    moved = n * k * b + m * k * b + m * n * 2.0
    flops = 2.0 * m * n * k
    rate = serving.matmul_rate(chip, dtype)
    if tiled:
        rate *= compute.gemm_kernel(m, n, k, spec(chip).sm_count, dtype).useful
    return serving.matmul_s(moved, flops, serving.read_bandwidth(chip), rate,
                            overlap=dtype not in serving.SERIAL_MATMUL_DTYPES)


def main() -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    points = []
    for dtype in ("fp8", "bf16"):
        for name, tp, what, n, k in gemm_tiles.shapes():
            for m in gemm_tiles.ROWS:
                row = {"model": name, "tp": tp, "what": what, "m": m, "n": n, "k": k, "dtype": dtype}
                for chip in CARDS:
                    g = compute.gemm_kernel(m, n, k, spec(chip).sm_count, dtype)
                    row[chip] = {"flat_s": predict(chip, m, n, k, dtype, False),
                                 "tiled_s": predict(chip, m, n, k, dtype, True),
                                 "tile": f"{g.tile_m}x{g.tile_n}{' swapped' if g.swapped else ''}, split-K {g.split_k}",
                                 "useful": g.useful}
                points.append(row)
    print(json.dumps({"call": "gemm-tiles (scripts/gpu/gemm_tiles.py)", "engine_commit": commit,
                      "rule": "mlcalc.compute.gemm_kernel; serving.matmul_s with matmul_rate x useful",
                      "success_rule": "at M >= 512, tiled closer than flat on most points of each dtype, and "
                                      "tiled's median |error| within 15 %",
                      "cards": {c: {"sm_count": spec(c).sm_count, "read_bytes_per_s": serving.read_bandwidth(c),
                                    "bf16_rate": serving.matmul_rate(c, "bf16"),
                                    "fp8_rate": serving.matmul_rate(c, "fp8")} for c in CARDS},
                      "points": points}, indent=None, separators=(",", ":")))


if __name__ == "__main__":
    main()
