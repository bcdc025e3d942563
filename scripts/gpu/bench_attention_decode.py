"""Decode attention alone: what transformers' SDPA path costs per layer, next to a GQA-aware call.

For Llama-shaped heads (32 query heads, 8 KV heads) and several (batch, cache length) shapes, times
one layer's decode attention (one query token per sequence) three ways:

- ``hf``: the path transformers takes on CUDA when a mask is passed: ``repeat_kv`` (expand K and V
  to every query head, a copy) then ``scaled_dot_product_attention`` with the boolean mask;
- ``repeat_kv``: the copy alone;
- ``gqa``: ``scaled_dot_product_attention(..., enable_gqa=True)`` without a mask (no copy);

and, for the ``hf`` call, which SDPA backends accept it (flash, efficient, cudnn, math) and their times.

Usage: python bench_attention_decode.py --device cuda:0 --out attention.json [--quick]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [(64, 1, 545), (64, 8, 545), (64, 32, 545), (64, 128, 545), (64, 16, 4129), (64, 64, 4129),
          (128, 8, 545), (128, 32, 545), (128, 64, 545), (128, 16, 4129), (128, 32, 4129), (128, 8, 8192)]


def repeat_kv(x: torch.Tensor, g: int) -> torch.Tensor:  # as in transformers' Llama
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, g, s, d).reshape(b, h * g, s, d)


def timed(fn, dev, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    dev = torch.device(a.device)
    shapes = [(16, 2, 64)] if a.quick else SHAPES
    out = {"schema": 1, "tool": "scripts/gpu/bench_attention_decode.py", "torch": torch.__version__,
           "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "heads": 32, "kv_heads": 8, "dtype": "bf16", "time": "median of 20 after 3 warm-ups, synchronized",
           "points": []}
    for hd, b, c in shapes:
        q = torch.randn(b, 32, 1, hd, dtype=torch.bfloat16, device=dev)
        k = torch.randn(b, 8, c, hd, dtype=torch.bfloat16, device=dev)
        v = torch.randn(b, 8, c, hd, dtype=torch.bfloat16, device=dev)
        mask = torch.ones(b, 1, 1, c, dtype=torch.bool, device=dev)
        kv_bytes = 2 * k.numel() * 2
        pt = {"head_dim": hd, "batch": b, "cache_len": c, "kv_bytes": kv_bytes}
        pt["hf_s"] = timed(lambda: F.scaled_dot_product_attention(q, repeat_kv(k, 4), repeat_kv(v, 4), attn_mask=mask), dev)
        pt["repeat_kv_s"] = timed(lambda: (repeat_kv(k, 4), repeat_kv(v, 4)), dev)
        pt["gqa_s"] = timed(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), dev)
        kr, vr = repeat_kv(k, 4), repeat_kv(v, 4)
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)):
            try:
                with sdpa_kernel([be]):
                    pt[f"sdpa_{name}_s"] = timed(lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask), dev, 10)
            except RuntimeError as exc:
                pt[f"sdpa_{name}_s"] = None
                pt[f"sdpa_{name}_error"] = str(exc).splitlines()[0][:160]
        out["points"].append(pt)
        print(json.dumps(pt), flush=True)
        del q, k, v, kr, vr, mask
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
