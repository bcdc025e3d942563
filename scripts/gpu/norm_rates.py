"""Kernel time of an RMSNorm as transformers' modules run it in eager PyTorch (fp32 weight, bf16 autocast, fp32
compute), forward and autograd backward, by row width and row count, on one GPU; a copy and the engine's
element-wise baseline (a*b, as scripts/gpu/machine_rates.py times it) in the same call. Issue 24: the step-time
engine prices every element-wise byte at one bandwidth; an H100 profile of Qwen3 0.6B showed its 128-wide q/k
norms' backward reductions at 0.68 TB/s against 1.56 TB/s for the hidden-width norm.

Each (variant, width, elements) is captured once as a CUDA graph of the forward and once of forward + backward
(torch.autograd.grad of the output against input and weight with a given output gradient), so the times are the
GPU's, free of host launch gaps; backward = (forward + backward) - forward. Eager timing is the fallback.

    python scripts/gpu/norm_rates.py --out norm_rates.json   (needs a CUDA GPU, torch, transformers)
"""
import argparse
import json
import statistics
import sys
import time

import torch

WIDTHS = (64, 128, 256, 512, 1024, 2048, 3072, 4096, 5120, 8192)
ELEMENTS = (2**20, 2**22, 2**24, 2**26)


def modules():
    """name -> (factory of a module of width w, input dtype): the classes the models run."""
    out = {}
    try:
        from transformers.models.llama.modeling_llama import LlamaRMSNorm
        from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm
        from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm
        src = "transformers"
    except ImportError as err:  # the same arithmetic, written out (transformers 5.x)
        print("transformers not importable:", err, file=sys.stderr)
        src = "rewritten"

        class LlamaRMSNorm(torch.nn.Module):
            def __init__(self, w, eps=1e-6):
                super().__init__()
                self.weight, self.variance_epsilon = torch.nn.Parameter(torch.ones(w)), eps

            def forward(self, x):
                dt = x.dtype
                x = x.to(torch.float32)
                var = x.pow(2).mean(-1, keepdim=True)
                return self.weight * (x * torch.rsqrt(var + self.variance_epsilon)).to(dt)

        Qwen3RMSNorm = LlamaRMSNorm

        class Gemma3RMSNorm(torch.nn.Module):
            def __init__(self, dim, eps=1e-6):
                super().__init__()
                self.eps, self.weight = eps, torch.nn.Parameter(torch.zeros(dim))

            def forward(self, x):
                o = x.float()
                o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + self.eps)
                return (o * (1.0 + self.weight.float())).type_as(x)

    # pre-norm of the fp32 residual stream; Qwen3's q/k norm of a bf16 projection; Gemma 3's (q/k and post) norms
    out["llama_fp32_in"] = (lambda w: LlamaRMSNorm(w, eps=1e-6), torch.float32)
    out["qwen3_bf16_in"] = (lambda w: Qwen3RMSNorm(w, eps=1e-6), torch.bfloat16)
    out["gemma3_bf16_in"] = (lambda w: Gemma3RMSNorm(w, eps=1e-6), torch.bfloat16)
    out["gemma3_fp32_in"] = (lambda w: Gemma3RMSNorm(w, eps=1e-6), torch.float32)
    return out, src


def time_graph(fn, reps):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return time_calls(g.replay, reps)


def time_calls(call, reps):
    ts = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            call()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3 / reps)
    return statistics.median(ts)


def one(factory, dtype, width, elements):
    rows = elements // width
    mod = factory(width).cuda()
    mod.train()
    x = torch.randn(rows, width, device="cuda", dtype=dtype, requires_grad=True)
    params = [x] + list(mod.parameters())
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y0 = mod(x)
    gout = torch.randn_like(y0)
    out_dtype = str(y0.dtype)
    del y0

    def fwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return mod(x)

    def fwd_bwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = mod(x)
        return torch.autograd.grad(y, params, gout)

    reps = max(5, min(200, int(2**28 // elements)))
    try:
        tf, tfb, method = time_graph(fwd, reps), time_graph(fwd_bwd, reps), "cuda graph"
    except Exception as err:  # noqa: BLE001 - fall back to eager launches
        print("graph failed:", type(err).__name__, err, file=sys.stderr)
        tf, tfb, method = time_calls(fwd, reps), time_calls(fwd_bwd, reps), "eager"
    return {"width": width, "rows": rows, "elements": rows * width, "in_dtype": str(dtype), "out_dtype": out_dtype,
            "forward_s": tf, "backward_s": tfb - tf, "forward_backward_s": tfb, "timing": method, "reps": reps}


def profile(factory, dtype, width, elements):
    """Per-kernel device time of one forward + backward (eager), by kernel name."""
    from torch.profiler import ProfilerActivity, profile as prof
    rows = elements // width
    mod = factory(width).cuda()
    x = torch.randn(rows, width, device="cuda", dtype=dtype, requires_grad=True)
    params = [x] + list(mod.parameters())
    for _ in range(2):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = mod(x)
        g = torch.autograd.grad(y, params, torch.ones_like(y))
    torch.cuda.synchronize()
    with prof(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = mod(x)
            g = torch.autograd.grad(y, params, torch.ones_like(y))
        torch.cuda.synchronize()
    del g
    out = []
    for e in p.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t and e.count:
            out.append({"kernel": e.key[:160], "calls_per_step": e.count / 5, "us_per_step": t / 5})
    return sorted(out, key=lambda r: -r["us_per_step"])


def baseline():
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for n in (2**25, 2**27):
            a = torch.randn(n, device="cuda", dtype=dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            c = torch.empty_like(a)
            el = a.element_size()
            t = time_calls(lambda: torch.mul(a, b, out=c), 20)
            rows.append({"op": "a*b", "dtype": str(dtype), "elements": n, "s": t, "bytes_per_s": 3 * n * el / t})
            t = time_calls(lambda: c.copy_(a), 20)
            rows.append({"op": "copy", "dtype": str(dtype), "elements": n, "s": t, "bytes_per_s": 2 * n * el / t})
            del a, b, c
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="norm_rates.json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    mods, src = modules()
    import transformers
    res = {"environment": {"device_name": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
                           "memory_bytes": props.total_memory, "torch": torch.__version__,
                           "transformers": transformers.__version__, "modules": src,
                           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
           "baseline_before": baseline(), "norms": {}, "profiles": {}}
    widths = WIDTHS[:3] if args.quick else WIDTHS
    elements = ELEMENTS[:2] if args.quick else ELEMENTS
    t0 = time.time()
    for name, (factory, dtype) in mods.items():
        res["norms"][name] = []
        for w in widths:
            for n in elements:
                r = one(factory, dtype, w, n)
                res["norms"][name].append(r)
                print(f"{name} w={w} n={n} fwd {r['forward_s']*1e6:.1f} us bwd {r['backward_s']*1e6:.1f} us",
                      flush=True)
            torch.cuda.empty_cache()
        for w in (128, 4096):
            res["profiles"][f"{name} width {w} elements {2**24}"] = profile(factory, dtype, w, 2**24)
        print(f"{name}: {time.time() - t0:.0f} s", flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    res["baseline_after"] = baseline()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
