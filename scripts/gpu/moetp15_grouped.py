"""moetp15: one MoE layer's two grouped expert matmuls on one GPU, the experts split whole (expert-parallel, 16 of
Qwen3-235B-A22B's 128 experts a GPU, 1,536 wide) against every expert split 8 ways (tensor-parallel, all 128 experts
192 wide), at the same rows an expert: the layout question of the TensorRT-LLM v1.0 Qwen3-235B rows (issue #25).

Each case times torch's grouped GEMMs (bf16: torch._grouped_mm; FP8 e4m3 with row-wise scales:
torch._scaled_grouped_mm), the gate/up matmul (rows x 4,096 @ 4,096 x 2 width per expert) then the down matmul
(rows x width @ width x 4,096), CUDA events around 20 repeats after 5 warm-ups, median of 5 such blocks. A
device-to-device copy and an 8,192-cube matmul of each dtype are timed in the same run as the card's references.
Writes one JSON file to $OUT (or the path given)."""

from __future__ import annotations

import json
import os
import statistics
import sys

import torch

HIDDEN, EXPERTS, WIDTH, TP = 4096, 128, 1536, 8
ROWS = (64, 112, 240, 480, 1024)  # rows an expert, near the v1.0 rows' modelled 58-1,031, in 16s (grouped-GEMM offsets)
LAYOUTS = {"ep": (EXPERTS // TP, WIDTH), "tp": (EXPERTS, WIDTH // TP)}


def timed(fn, reps: int = 20, blocks: int = 5) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(blocks):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / reps)
    return statistics.median(out)


def case(dtype: str, experts: int, width: int, rows: int) -> dict:
    dev = "cuda"
    offs = torch.arange(1, experts + 1, device=dev, dtype=torch.int32) * rows
    x = torch.randn(experts * rows, HIDDEN, device=dev, dtype=torch.bfloat16)
    w1 = torch.randn(experts, 2 * width, HIDDEN, device=dev, dtype=torch.bfloat16) * 0.02  # (G, N, K)
    h = torch.randn(experts * rows, width, device=dev, dtype=torch.bfloat16)
    w2 = torch.randn(experts, HIDDEN, width, device=dev, dtype=torch.bfloat16) * 0.02
    if dtype == "bf16":
        b1, b2 = w1.transpose(-2, -1), w2.transpose(-2, -1)  # (G, K, N)

        def fc1():
            return torch._grouped_mm(x, b1, offs=offs, out_dtype=torch.bfloat16)

        def fc2():
            return torch._grouped_mm(h, b2, offs=offs, out_dtype=torch.bfloat16)
    else:
        f8 = torch.float8_e4m3fn
        xq, hq = x.to(f8), h.to(f8)
        b1, b2 = w1.to(f8).transpose(-2, -1), w2.to(f8).transpose(-2, -1)  # column-major (G, K, N)
        sx = torch.ones(experts * rows, device=dev, dtype=torch.float32)
        s1 = torch.ones(experts, 2 * width, device=dev, dtype=torch.float32)
        s2 = torch.ones(experts, HIDDEN, device=dev, dtype=torch.float32)

        def fc1():
            return torch._scaled_grouped_mm(xq, b1, sx, s1, offs=offs, out_dtype=torch.bfloat16)

        def fc2():
            return torch._scaled_grouped_mm(hq, b2, sx, s2, offs=offs, out_dtype=torch.bfloat16)
    t1, t2 = timed(fc1), timed(fc2)
    flops = 2.0 * experts * rows * 3 * width * HIDDEN
    return {"dtype": dtype, "experts": experts, "width": width, "rows_per_expert": rows, "fc1_s": t1, "fc2_s": t2,
            "both_s": t1 + t2, "tflops": flops / (t1 + t2) / 1e12}


def references() -> dict:
    n = 1 << 30
    a = torch.empty(n, device="cuda", dtype=torch.uint8)
    b = torch.empty_like(a)
    copy = timed(lambda: b.copy_(a), reps=10, blocks=3)
    m = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    bf = timed(lambda: m @ m, reps=10, blocks=3)
    q = m.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    f8 = timed(lambda: torch._scaled_mm(q, q.t(), one, one, out_dtype=torch.bfloat16), reps=10, blocks=3)
    return {"copy_bytes_per_s": 2 * n / copy, "bf16_tflops": 2 * 8192**3 / bf / 1e12,
            "fp8_tflops": 2 * 8192**3 / f8 / 1e12}


def main() -> None:
    out = os.path.join(os.environ.get("OUT", "."), "moetp15_grouped.json") if len(sys.argv) < 2 else sys.argv[1]
    p = torch.cuda.get_device_properties(0)
    res = {"device": torch.cuda.get_device_name(0), "sms": p.multi_processor_count, "torch": torch.__version__,
           "cuda": torch.version.cuda, "references": references(), "cases": []}
    for dtype in ("bf16", "fp8"):
        for rows in ROWS:
            for name, (experts, width) in LAYOUTS.items():
                try:
                    c = case(dtype, experts, width, rows)
                except (RuntimeError, TypeError, ValueError, AttributeError) as err:  # a kernel torch lacks
                    c = {"dtype": dtype, "experts": experts, "width": width, "rows_per_expert": rows,
                         "error": f"{type(err).__name__}: {err}"[:300]}
                c["layout"] = name
                res["cases"].append(c)
                print(json.dumps(c), flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print("references", res["references"], res["device"], res["torch"])


if __name__ == "__main__":
    main()
