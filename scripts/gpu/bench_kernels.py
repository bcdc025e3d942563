"""Kernel probe for the serving model: how fast the card runs the kernels a decode step and a prefill are made of,
measured once per GPU and applied by mlcalc.serving to every model (no model's point enters it).

* ``gemv``: ``F.linear(x, W)`` with ``x`` of ``batch`` rows and ``W`` an ``(N, K)`` bf16 weight, as a decoder layer's
  projections run at decode batch sizes; many distinct copies of ``W`` (together well past the 50 MB L2) replayed
  back to back from one CUDA graph, as in a captured decode step: seconds per matmul, hence the bytes/s it reads.
* ``grouped``: transformers' MoE experts (grouped_mm over all experts, tokens sorted by expert), decode batches.
* ``matmul``: the same at prefill row counts (512-8192): FLOP/s by shape.
* ``attention``: ``scaled_dot_product_attention`` at prefill (causal), two ways transformers calls it: ``causal``
  (``is_causal=True``, no mask: the flash kernel) and ``mask`` (an explicit boolean mask: the memory-efficient
  kernel), head dims 64/128/256 and DeepSeek's 192/128, grouped KV heads through ``enable_gqa``.
* ``elementwise``: ``torch.add(a, b, out=c)`` over 4 MB-1 GB tensors: bytes/s of an eager element-wise pass.

Usage: python bench_kernels.py --device cuda:0 --out kernels_gpu0.json [--quick] [--deadline-s S]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.nn.functional as F

T0 = time.perf_counter()
DEADLINE = float("inf")

#: (N, K) weight shapes: the projections of the measured architectures and of Llama 3 70B, plus small and large
#: ones so the curve covers 2 MB-1 GB per matrix. N outputs, K inputs (nn.Linear's weight layout).
GEMV_SHAPES = [(1024, 1024), (2048, 2048), (1408, 2048), (2048, 1408), (1024, 4096), (4096, 4096), (6144, 4096),
               (14336, 4096), (4096, 14336), (28672, 4096), (11008, 4096), (4096, 11008), (2560, 2560),
               (10240, 2560), (2560, 10240), (8192, 8192), (10240, 8192), (28672, 8192), (8192, 28672),
               (32000, 4096), (128256, 4096)]
GEMV_BATCHES = [1, 8, 32, 128]
MATMUL_ROWS = [512, 2048, 8192]
MATMUL_SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336), (2048, 2048), (10240, 2560)]
#: (heads, kv heads, q/k head dim, v head dim)
ATTN_SHAPES = [(32, 8, 128, 128), (32, 32, 128, 128), (8, 4, 256, 256), (16, 16, 192, 128), (16, 16, 64, 64)]
ATTN_POINTS = [(8, 512), (1, 2048), (4, 2048), (1, 8192)]  # (batch, length)
#: (experts, N, K, experts per token): Mixtral 8x7B's and DeepSeek-V2-Lite's expert weights as transformers 5.17
#: holds them (gate and up fused), run by its grouped_mm path
GROUPED_SHAPES = [(8, 28672, 4096, 2), (8, 4096, 14336, 2), (64, 2816, 2048, 6), (64, 2048, 1408, 6)]
ELEM_BYTES = [2**22, 2**24, 2**26, 2**28, 2**30]
#: Decode attention as each program calls it (scripts/gpu/serve4 call): transformers 5.17 ("hf": one query row per
#: head, K and V already expanded to every query head by repeat_kv, a boolean mask of shape (b, 1, 1, L)) and the
#: plain engine ("engine": the g query heads of a KV head as g query rows, K and V not expanded, the same mask).
#: (heads or KV heads, g query rows, q/k head dim, v head dim)
DEC_ATTN_HF = [(32, 1, 128, 128), (8, 1, 256, 256), (16, 1, 192, 128)]
DEC_ATTN_ENGINE = [(8, 4, 128, 128), (4, 4, 128, 128), (2, 4, 128, 128), (8, 8, 128, 128), (4, 8, 128, 128),
                   (2, 8, 128, 128)]
DEC_ATTN_HF_POINTS = [(1, 512), (8, 512), (32, 512), (128, 512), (8, 2048), (32, 2048), (1, 8192), (16, 8192),
                      (2, 1024), (16, 1024), (64, 1024), (4, 4096), (24, 4096)]
DEC_ATTN_ENGINE_POINTS = [(1, 2048), (8, 2048), (32, 2048), (128, 2048), (8, 8192), (64, 1024), (16, 4096)]
#: prefill rows (tokens x experts per token) through transformers' grouped expert matmul
GROUPED_PREFILL_TOKENS = [512, 2048, 8192]


def left() -> float:
    return DEADLINE - (time.perf_counter() - T0)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def timeit(fn, dev, target_s=0.05, n_min=3, n_max=50, groups=3):
    fn()
    sync(dev)
    t0 = time.perf_counter()
    fn()
    sync(dev)
    one = max(time.perf_counter() - t0, 1e-7)
    n = int(min(n_max, max(n_min, target_s / one)))
    res = []
    for _ in range(groups):
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync(dev)
        res.append((time.perf_counter() - t0) / n)
    res.sort()
    return {"s": res[len(res) // 2], "groups_s": res, "n": n}


def graphed(fn, dev):
    """``fn`` captured in a CUDA graph (on CUDA) and its replay; on the CPU ``fn`` itself."""
    if dev.type != "cuda":
        return fn
    s = torch.cuda.Stream(dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream(dev).wait_stream(s)
    sync(dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    sync(dev)
    return g.replay


def gemv(dev, quick, out):
    shapes = [(64, 64), (256, 128)] if quick else GEMV_SHAPES
    batches = [1, 4] if quick else GEMV_BATCHES
    target = 2**20 if quick else 512 * 2**20  # bytes of distinct weights per replay (10x the H100's L2)
    for n, k in shapes:
        if left() < 8:
            out.append({"n": n, "k": k, "error": "skipped: out of time"})
            continue
        nbytes = n * k * 2
        copies = int(max(4, min(256, -(-target // nbytes))))
        try:
            ws = [torch.empty(n, k, device=dev, dtype=torch.bfloat16).normal_() for _ in range(copies)]
            for b in batches:
                x = torch.randn(b, k, device=dev, dtype=torch.bfloat16)
                ys = []

                def f():
                    ys.clear()
                    for w in ws:
                        ys.append(F.linear(x, w))

                r = timeit(graphed(f, dev), dev)
                s = r["s"] / copies
                out.append({"n": n, "k": k, "batch": b, "copies": copies, "weight_bytes": nbytes, "s": s,
                            "bytes_per_s": nbytes / s, "timing": r})
                print("gemv", n, k, b, f"{s * 1e6:.1f} us", f"{nbytes / s / 1e12:.2f} TB/s", flush=True)
                del ys
            del ws
        except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
            out.append({"n": n, "k": k, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    # the same graph of matmuls with nothing to read: the time a matmul kernel costs when it does almost nothing
    x = torch.randn(1, 64, device=dev, dtype=torch.bfloat16)
    ws = [torch.randn(64, 64, device=dev, dtype=torch.bfloat16) for _ in range(64)]
    r = timeit(graphed(lambda: [F.linear(x, w) for w in ws], dev), dev)
    out.append({"n": 64, "k": 64, "batch": 1, "copies": 64, "weight_bytes": 64 * 64 * 2, "s": r["s"] / 64,
                "bytes_per_s": 64 * 64 * 2 / (r["s"] / 64), "timing": r, "what": "empty matmul"})


def matmul(dev, quick, out):
    rows = [16, 32] if quick else MATMUL_ROWS
    shapes = [(64, 64)] if quick else MATMUL_SHAPES
    for n, k in shapes:
        w = torch.empty(n, k, device=dev, dtype=torch.bfloat16).normal_()
        for m in rows:
            if left() < 6:
                out.append({"m": m, "n": n, "k": k, "error": "skipped: out of time"})
                continue
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            r = timeit(lambda: F.linear(x, w), dev)
            out.append({"m": m, "n": n, "k": k, "s": r["s"], "flops_per_s": 2 * m * n * k / r["s"], "timing": r})
            print("matmul", m, n, k, f"{2 * m * n * k / r['s'] / 1e12:.0f} TFLOP/s", flush=True)
        del w


def attention(dev, quick, out):
    shapes = [(4, 2, 16, 16), (4, 4, 24, 16)] if quick else ATTN_SHAPES
    points = [(2, 32), (1, 64)] if quick else ATTN_POINTS
    for h, hkv, dq, dv in shapes:
        for b, L in points:
            for how in ("causal", "mask"):
                if left() < 6:
                    out.append({"heads": h, "error": "skipped: out of time"})
                    continue
                rec = {"heads": h, "kv_heads": hkv, "head_dim": dq, "v_head_dim": dv, "batch": b, "length": L,
                       "how": how}
                try:
                    q = torch.randn(b, h, L, dq, device=dev, dtype=torch.bfloat16)
                    k = torch.randn(b, hkv, L, dq, device=dev, dtype=torch.bfloat16)
                    v = torch.randn(b, hkv, L, dv, device=dev, dtype=torch.bfloat16)
                    gqa = hkv != h
                    if how == "causal":
                        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)  # noqa: E731
                    else:
                        mask = torch.ones(L, L, device=dev, dtype=torch.bool).tril()
                        kk = k.repeat_interleave(h // hkv, 1) if gqa else k  # transformers repeats KV when it masks
                        vv = v.repeat_interleave(h // hkv, 1) if gqa else v
                        fn = lambda: F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)  # noqa: E731
                    r = timeit(fn, dev)
                    # causal work: each query attends to (L + 1) / 2 keys on average
                    fl = 2.0 * b * h * L * (L + 1) / 2 * (dq + dv)
                    rec.update({"s": r["s"], "causal_flops": fl, "flops_per_s": fl / r["s"], "timing": r})
                    print("attn", how, h, hkv, dq, dv, b, L, f"{fl / r['s'] / 1e12:.0f} TFLOP/s", flush=True)
                except Exception as exc:  # noqa: BLE001
                    rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                out.append(rec)
                if dev.type == "cuda":
                    torch.cuda.empty_cache()


def elementwise(dev, quick, out):
    for nb in ([2**16, 2**20] if quick else ELEM_BYTES):
        if left() < 4:
            break
        a = torch.randn(nb // 2, device=dev).to(torch.bfloat16)
        b = torch.randn(nb // 2, device=dev).to(torch.bfloat16)
        c = torch.empty_like(a)
        r = timeit(lambda: torch.add(a, b, out=c), dev)
        out.append({"bytes_each": nb, "moved_bytes": 3 * nb, "s": r["s"], "bytes_per_s": 3 * nb / r["s"], "timing": r})
        print("elementwise", nb, f"{3 * nb / r['s'] / 1e12:.2f} TB/s", flush=True)
        del a, b, c


def grouped(dev, quick, out):
    """transformers' MoE path: tokens sorted by expert, one grouped matmul over every expert's weights."""
    gm = getattr(F, "grouped_mm", None) or torch._grouped_mm
    shapes = [(4, 32, 16, 2)] if quick else GROUPED_SHAPES
    for e, n, k, topk in shapes:
        if left() < 6:
            out.append({"experts": e, "n": n, "k": k, "error": "skipped: out of time"})
            continue
        try:
            w = torch.empty(e, n, k, device=dev, dtype=torch.bfloat16).normal_()
            for b in ([1, 4] if quick else GEMV_BATCHES):
                g = torch.Generator().manual_seed(b)
                ids = torch.stack([torch.randperm(e, generator=g)[:topk] for _ in range(b)]).reshape(-1)
                counts = torch.bincount(ids, minlength=e)
                offs = torch.cumsum(counts, 0).to(torch.int32).to(dev)
                x = torch.randn(b * topk, k, device=dev, dtype=torch.bfloat16)
                touched = int((counts > 0).sum())
                r = timeit(graphed(lambda: gm(x, w.transpose(-2, -1), offs=offs), dev), dev)
                nb = touched * n * k * 2
                out.append({"experts": e, "n": n, "k": k, "experts_per_token": topk, "batch": b,
                            "experts_touched": touched, "touched_bytes": nb, "s": r["s"], "bytes_per_s": nb / r["s"],
                            "timing": r})
                print("grouped", e, n, k, b, touched, f"{r['s'] * 1e6:.1f} us", f"{nb / r['s'] / 1e12:.2f} TB/s",
                      flush=True)
            del w
        except Exception as exc:  # noqa: BLE001
            out.append({"experts": e, "n": n, "k": k, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        if dev.type == "cuda":
            torch.cuda.empty_cache()


def decode_attention(dev, quick, out):
    """SDPA at decode as transformers and the plain engine call it, replayed from a CUDA graph over enough distinct
    caches (one per layer, as in a step) that they do not stay in L2: seconds per call."""
    target = 2**20 if quick else 256 * 2**20
    cases = ([("hf", 4, 1, 16, 16), ("engine", 2, 2, 16, 16)] if quick else
             [("hf",) + c for c in DEC_ATTN_HF] + [("engine",) + c for c in DEC_ATTN_ENGINE])
    for kind, h, g, dq, dv in cases:
        pts = [(2, 32), (1, 64)] if quick else (DEC_ATTN_HF_POINTS if kind == "hf" else DEC_ATTN_ENGINE_POINTS)
        for b, L in pts:
            if left() < 5:
                out.append({"kind": kind, "heads": h, "error": "skipped: out of time"})
                continue
            rec = {"kind": kind, "kv_heads": h, "q_rows": g, "head_dim": dq, "v_head_dim": dv, "batch": b, "length": L}
            try:
                kv_bytes = b * h * L * (dq + dv) * 2
                copies = int(max(1, min(32, -(-target // kv_bytes))))
                q = torch.randn(b, h, g, dq, device=dev, dtype=torch.bfloat16)
                ks = [torch.randn(b, h, L, dq, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
                vs = [torch.randn(b, h, L, dv, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
                mask = torch.ones(b, 1, 1, L, device=dev, dtype=torch.bool)
                mask[:, :, :, L - 1:] = True
                mask[0, :, :, : L // 4] = False  # not all ones (as in a slot not yet full)
                ys = []

                def f():
                    ys.clear()
                    for k, v in zip(ks, vs):
                        ys.append(F.scaled_dot_product_attention(q, k, v, attn_mask=mask))

                r = timeit(graphed(f, dev), dev)
                rec.update({"copies": copies, "kv_bytes": kv_bytes, "s": r["s"] / copies,
                            "bytes_per_s": kv_bytes / (r["s"] / copies), "timing": r})
                print("dec_attn", kind, h, g, dq, dv, b, L, f"{r['s'] / copies * 1e6:.1f} us", flush=True)
                del ks, vs, ys
            except Exception as exc:  # noqa: BLE001
                rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            out.append(rec)
            if dev.type == "cuda":
                torch.cuda.empty_cache()


def grouped_prefill(dev, quick, out):
    """transformers' grouped expert matmul at prefill sizes: ``tokens x experts_per_token`` rows routed uniformly
    at random over the experts: FLOP/s."""
    gm = getattr(F, "grouped_mm", None) or torch._grouped_mm
    shapes = [(4, 32, 16, 2)] if quick else GROUPED_SHAPES
    for e, n, k, topk in shapes:
        try:
            w = torch.empty(e, n, k, device=dev, dtype=torch.bfloat16).normal_()
            for t in ([16, 64] if quick else GROUPED_PREFILL_TOKENS):
                if left() < 5:
                    out.append({"experts": e, "n": n, "k": k, "tokens": t, "error": "skipped: out of time"})
                    continue
                g = torch.Generator().manual_seed(t)
                ids = torch.stack([torch.randperm(e, generator=g)[:topk] for _ in range(t)]).reshape(-1)
                counts = torch.bincount(ids, minlength=e)
                offs = torch.cumsum(counts, 0).to(torch.int32).to(dev)
                x = torch.randn(t * topk, k, device=dev, dtype=torch.bfloat16)
                r = timeit(graphed(lambda: gm(x, w.transpose(-2, -1), offs=offs), dev), dev)
                fl = 2.0 * t * topk * n * k
                out.append({"experts": e, "n": n, "k": k, "experts_per_token": topk, "tokens": t, "rows": t * topk,
                            "s": r["s"], "flops": fl, "flops_per_s": fl / r["s"], "timing": r})
                print("grouped_prefill", e, n, k, t, f"{fl / r['s'] / 1e12:.0f} TFLOP/s", flush=True)
            del w
        except Exception as exc:  # noqa: BLE001
            out.append({"experts": e, "n": n, "k": k, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        if dev.type == "cuda":
            torch.cuda.empty_cache()


SECTIONS = ("gemv", "grouped", "elementwise", "attention", "matmul", "decode_attention", "grouped_prefill")


def main():
    global DEADLINE
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=float("inf"))
    ap.add_argument("--sections", default="gemv,grouped,elementwise,attention,matmul",
                    help=f"comma-separated, of {SECTIONS}")
    a = ap.parse_args()
    sections = [x for x in a.sections.split(",") if x]
    bad = [x for x in sections if x not in SECTIONS]
    if bad:
        raise SystemExit(f"--sections {bad} not among {SECTIONS}")
    DEADLINE = a.deadline_s
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    torch.manual_seed(0)
    res = {"schema": 1, "tool": "scripts/gpu/bench_kernels.py", "device": str(dev),
           "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "torch": torch.__version__, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
           "sections": sections, **{name: [] for name in sections}}

    def save():
        res["wall_s"] = time.perf_counter() - T0
        with open(a.out + ".tmp", "w") as fh:
            json.dump(res, fh, indent=1)
        os.replace(a.out + ".tmp", a.out)

    with torch.inference_mode():
        fns = {"gemv": gemv, "grouped": grouped, "elementwise": elementwise, "attention": attention, "matmul": matmul,
               "decode_attention": decode_attention, "grouped_prefill": grouped_prefill}
        for name in sections:
            fn = fns[name]
            try:
                fn(dev, a.quick, res[name])
            except Exception as exc:  # noqa: BLE001
                res[name + "_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            save()
    print("done kernels", round(time.perf_counter() - T0, 1), "s", flush=True)


if __name__ == "__main__":
    main()
