"""Measure what ``mlcalc.steptime`` needs to know about a machine, independent of any model.

* bf16 ``F.linear`` (x @ W^T) throughput over a grid of shapes (m tokens, n outputs, k inputs);
* causal flash ``scaled_dot_product_attention`` forward + backward throughput by head width and length;
* element-wise bandwidth (bytes read + written by a multiply, fp32 and bf16);
* host time to dispatch one eager op with autograd and autocast on (forward) and one backward node.

    python scripts/gpu/machine_rates.py --out rates.json [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable


def _time(torch: Any, fn: Callable[[], Any], budget_s: float = 0.02, max_reps: int = 30) -> float:
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    reps = max(3, min(max_reps, int(budget_s / one)))
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return statistics.median(out)


def matmul_grid(torch: Any, quick: bool) -> list[dict[str, Any]]:
    F = torch.nn.functional
    ms = [256, 512, 1024, 2048, 4096, 8192, 16384]
    nk = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144]
    if quick:
        ms, nk = [256, 1024], [256, 2048]
    rows = []
    for m in ms:
        for n in nk:
            for k in nk:
                if 2.0 * m * n * k > 6e13 or n * k > 2**31 or k > 65536:
                    continue
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
                t = _time(torch, lambda: F.linear(x, w))
                rows.append({"m": m, "n": n, "k": k, "s": t, "tflops": 2.0 * m * n * k / t / 1e12})
                del x, w
    return rows


def attention_grid(torch: Any, quick: bool) -> list[dict[str, Any]]:
    F = torch.nn.functional
    rows = []
    for d in ([64] if quick else [64, 128, 256]):
        for s in ([512] if quick else [256, 512, 1024, 2048, 4096, 8192]):
            for gqa in (1, 4):
                heads = 16
                b = max(1, 16384 // s)
                q = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(b, heads // gqa, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(b, heads // gqa, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                g = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16)

                def fb() -> None:
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa > 1)
                    torch.autograd.grad(o, (q, k, v), g)

                def f() -> None:
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa > 1)

                fwd = 2.0 * b * heads * s * s * d  # causal: half of 4 b h s^2 d
                tf, tfb = _time(torch, f), _time(torch, fb)
                rows.append({"head_dim": d, "seq_len": s, "batch": b, "heads": heads, "kv_heads": heads // gqa,
                             "fwd_s": tf, "fwd_bwd_s": tfb, "fwd_tflops": fwd / tf / 1e12,
                             "fwd_bwd_tflops": 3.5 * fwd / tfb / 1e12})
    return rows


def elementwise(torch: Any) -> list[dict[str, Any]]:
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for n in (2**22, 2**25, 2**27):
            a = torch.randn(n, device="cuda", dtype=dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            t = _time(torch, lambda: a * b)
            el = a.element_size()
            rows.append({"dtype": str(dtype), "elements": n, "op": "a*b", "s": t, "bytes": 3 * n * el,
                         "bytes_per_s": 3 * n * el / t})
    return rows


def dispatch(torch: Any) -> dict[str, float]:
    """Host seconds per eager op (autograd + autocast on) and per backward node, on tiny tensors."""
    x0 = torch.randn(8, 8, device="cuda", requires_grad=True)
    n = 2000
    out = {}
    for trial in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = x0
            for _ in range(n):
                y = y * 1.0001
        t1 = time.perf_counter()
        y.sum().backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        out = {"fwd_s_per_op": (t1 - t0) / n, "bwd_s_per_node": (t2 - t1) / n}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    import torch

    props = torch.cuda.get_device_properties(0)
    res: dict[str, Any] = {"benchmark": "machine_rates", "environment": {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "torch": torch.__version__,
        "cuda": torch.version.cuda, "device_name": props.name, "total_memory_bytes": props.total_memory},
        "units": "s: median seconds (CUDA events); tflops: 1e12 FLOP/s; bytes_per_s: bytes read + written per second"}
    for name, fn in (("dispatch", dispatch), ("elementwise", elementwise),
                     ("attention", lambda t: attention_grid(t, args.quick)),
                     ("matmul", lambda t: matmul_grid(t, args.quick))):
        t0 = time.time()
        res[name] = fn(torch)
        print(f"{name}: {time.time() - t0:.1f} s", flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
