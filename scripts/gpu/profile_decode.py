"""Where the time of an eager decode step goes (the serve12 call, issue 25): torch.profiler over a few decode steps.

Same model and generate settings as scripts/gpu/bench_decode.py (Llama-shaped, random weights, bf16, static cache,
eager: disable_compile=True). For each (batch, prompt) point: the point's unprofiled decode step (bench_decode's
decode_point, for comparison), then one ``generate`` of 1 + K new tokens under torch.profiler (CPU and CUDA
activities), each model forward and each decoder layer marked with record_function ("fwd<k>", "layer<i>"). The trace is
reduced here, on the machine that ran it, to a small JSON:

- per forward (step): host span (the forward's own CPU range), GPU span (first kernel start to last kernel end of the
  kernels it launched), GPU busy (union of those kernels), the GPU's idle gaps inside the span, the gap from the
  previous forward's last kernel end, and the lag of the first/last kernel's start behind its launch (how far the host
  ran ahead of the GPU);
- per layer (mean, min, max over the decode forwards, and each forward's list): host span, GPU span, GPU busy, kernel
  count, launch lag at the layer's first kernel;
- top kernels by total time over the decode forwards, with counts; top CPU ops by self time;
- every synchronising runtime call (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, cudaMemcpy*,
  any DtoH copy) with its duration and where it sits: the innermost CPU op around it and the forward/layer.

Usage: python profile_decode.py --model 1b --points 16x4096,16x512,1x4096 --device cuda:0 --out DIR [--quick]
  [--steps K] [--deadline-s S]     (--quick: tiny model on CPU, CPU activity only: a logic test)
"""

from __future__ import annotations

import argparse
import bisect
import functools
import json
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_decode as bd

SYNC_NAMES = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpyAsync", "cudaStreamWaitEvent", "cuStreamSynchronize", "cudaMemcpyDtoH")
LAUNCH_PREFIX = ("cudaLaunch", "cuLaunch", "cudaMemsetAsync", "cudaMemcpyAsync", "cudaGraphLaunch")


def mark(model) -> None:
    """Wrap the model's forward and each decoder layer's forward in record_function ranges."""
    count = {"fwd": 0}
    outer = model.forward

    @functools.wraps(outer)
    def fwd(*a, **k):
        with torch.profiler.record_function(f"fwd{count['fwd']}"):
            count["fwd"] += 1
            return outer(*a, **k)
    model.forward = fwd
    for i, layer in enumerate(model.model.layers):
        inner = layer.forward

        def lf(*a, _inner=inner, _i=i, **k):
            with torch.profiler.record_function(f"layer{_i}"):
                return _inner(*a, **k)
        layer.forward = lf
    model._serve12_count = count


def union(iv: list[tuple[float, float]]) -> tuple[float, list[tuple[float, float]]]:
    """Total length of the union of intervals and the gaps between them (sorted)."""
    iv = sorted(iv)
    busy, gaps = 0.0, []
    cur_s, cur_e = None, None
    for s, e in iv:
        if cur_e is None:
            cur_s, cur_e = s, e
        elif s > cur_e:
            busy += cur_e - cur_s
            gaps.append((cur_e, s))
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return busy, gaps


def stats(xs: list[float]) -> dict:
    if not xs:
        return {}
    s = sorted(xs)
    return {"mean": round(sum(s) / len(s), 2), "min": round(s[0], 2), "median": round(s[len(s) // 2], 2),
            "max": round(s[-1], 2), "n": len(s)}


def reduce_trace(path: str, n_layers: int, top: int = 25) -> dict:
    """Reduce a chrome trace (torch.profiler export) to the per-step / per-layer summary. Times in microseconds."""
    with open(path) as fh:
        tr = json.load(fh)
    ev = [e for e in tr.get("traceEvents", []) if e.get("ph") == "X"]
    ann = [e for e in ev if e.get("cat") == "user_annotation"]
    cpu_ops = [e for e in ev if e.get("cat") == "cpu_op"]
    rt = [e for e in ev if e.get("cat") == "cuda_runtime" or e.get("cat") == "cuda_driver"]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    corr_gpu: dict = {}
    for k in gpu:
        c = (k.get("args") or {}).get("correlation")
        if c is not None:
            corr_gpu.setdefault(c, []).append(k)
    fwds = sorted([e for e in ann if e["name"].startswith("fwd")], key=lambda e: e["ts"])
    layers = sorted([e for e in ann if e["name"].startswith("layer")], key=lambda e: e["ts"])
    rt.sort(key=lambda e: e["ts"])
    rts = [e["ts"] for e in rt]

    def within(e0, lst, keys):
        i0 = bisect.bisect_left(keys, e0["ts"])
        i1 = bisect.bisect_right(keys, e0["ts"] + e0["dur"])
        return lst[i0:i1]

    def kernels_of(runtime_calls):
        out = []
        for r in runtime_calls:
            c = (r.get("args") or {}).get("correlation")
            for k in corr_gpu.get(c, []):
                out.append((r, k))
        return out

    def span_summary(e0) -> dict:
        calls = within(e0, rt, rts)
        pairs = kernels_of(calls)
        d = {"host_us": round(e0["dur"], 1), "runtime_calls": len(calls), "kernels": len(pairs)}
        if pairs:
            iv = [(k["ts"], k["ts"] + k["dur"]) for _, k in pairs]
            busy, gaps = union(iv)
            g0 = min(s for s, _ in iv)
            g1 = max(e for _, e in iv)
            first = min(pairs, key=lambda p: p[1]["ts"])
            last = max(pairs, key=lambda p: p[1]["ts"])
            d.update(gpu_span_us=round(g1 - g0, 1), gpu_busy_us=round(busy, 1), gpu_idle_us=round(g1 - g0 - busy, 1),
                     gpu_start_after_host_start_us=round(g0 - e0["ts"], 1),
                     gpu_end_after_host_end_us=round(g1 - (e0["ts"] + e0["dur"]), 1),
                     lag_first_us=round(first[1]["ts"] - first[0]["ts"], 1),
                     lag_last_us=round(last[1]["ts"] - last[0]["ts"], 1),
                     idle_gaps_over_5us=len([g for g in gaps if g[1] - g[0] > 5]),
                     largest_gaps_us=[round(b - a, 1) for a, b in sorted(gaps, key=lambda g: g[0] - g[1])[:5]],
                     _g=(g0, g1))
        return d

    out: dict = {"n_forwards": len(fwds), "n_layer_ranges": len(layers), "forwards": []}
    prev_end = None
    for fi, f in enumerate(fwds):
        s = span_summary(f)
        g = s.pop("_g", None)
        if g and prev_end is not None:
            s["gpu_gap_from_previous_forward_us"] = round(g[0] - prev_end, 1)
        if g:
            prev_end = g[1]
        if fi > 0 and fi - 1 < len(fwds) - 1:
            s["host_from_previous_forward_start_us"] = round(f["ts"] - fwds[fi - 1]["ts"], 1)
        ls = [x for x in layers if f["ts"] <= x["ts"] <= f["ts"] + f["dur"]]
        per_layer = []
        for x in ls:
            y = span_summary(x)
            y.pop("_g", None)
            y.pop("largest_gaps_us", None)
            per_layer.append(y)
        s["layers"] = per_layer
        s["name"] = f["name"]
        out["forwards"].append(s)
    # the decode forwards: every forward but the first (the prefill)
    dec = out["forwards"][1:]
    if dec:
        keys = ["host_us", "gpu_span_us", "gpu_busy_us", "gpu_idle_us", "kernels", "runtime_calls", "lag_first_us",
                "lag_last_us", "gpu_gap_from_previous_forward_us", "host_from_previous_forward_start_us"]
        out["decode_forward_stats"] = {k: stats([d[k] for d in dec if k in d]) for k in keys}
        lk = ["host_us", "gpu_span_us", "gpu_busy_us", "gpu_idle_us", "kernels", "runtime_calls", "lag_first_us"]
        out["decode_layer_stats"] = {k: stats([y[k] for d in dec for y in d["layers"] if k in y]) for k in lk}
        out["decode_layer_by_index"] = [
            {k: stats([d["layers"][i][k] for d in dec if i < len(d["layers"]) and k in d["layers"][i]])["mean"]
             if any(i < len(d["layers"]) and k in d["layers"][i] for d in dec) else None for k in lk}
            for i in range(n_layers)]
    # top kernels over decode forwards
    if len(fwds) > 1:
        t0, t1 = fwds[1]["ts"], fwds[-1]["ts"] + fwds[-1]["dur"]
        dec_rt = [r for r in rt if t0 <= r["ts"] <= t1]
        agg: dict = {}
        for _r, k in kernels_of(dec_rt):
            a = agg.setdefault(k["name"][:160], [0, 0.0])
            a[0] += 1
            a[1] += k["dur"]
        n_dec = len(fwds) - 1
        out["top_kernels_decode"] = [{"name": n, "count_per_step": round(c / n_dec, 2),
                                      "us_per_step": round(t / n_dec, 1), "us_each": round(t / c, 2)}
                                     for n, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:top]]
        # CPU ops by self time (self = dur minus children on the same thread) in the decode window
        cops = sorted([e for e in cpu_ops if t0 <= e["ts"] <= t1], key=lambda e: (e.get("tid"), e["ts"]))
        selft: dict = {}
        stack: list = []
        for e in cops:
            while stack and (stack[-1]["tid"] != e["tid"] or stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]):
                stack.pop()
            if stack:
                stack[-1]["_child"] = stack[-1].get("_child", 0.0) + e["dur"]
            stack.append(e)
        for e in cops:
            a = selft.setdefault(e["name"], [0, 0.0, 0.0])
            a[0] += 1
            a[1] += e["dur"] - e.get("_child", 0.0)
            a[2] += e["dur"]
        out["top_cpu_ops_decode"] = [{"name": n, "count_per_step": round(c / n_dec, 2),
                                      "self_us_per_step": round(s / n_dec, 1), "total_us_per_step": round(t / n_dec, 1)}
                                     for n, (c, s, t) in sorted(selft.items(), key=lambda kv: -kv[1][1])[:top]]
        rta: dict = {}
        for r in dec_rt:
            a = rta.setdefault(r["name"], [0, 0.0])
            a[0] += 1
            a[1] += r["dur"]
        out["runtime_calls_decode"] = [{"name": n, "count_per_step": round(c / n_dec, 2),
                                        "us_per_step": round(t / n_dec, 1)}
                                       for n, (c, t) in sorted(rta.items(), key=lambda kv: -kv[1][1])]
    # synchronising calls and device-to-host copies, with where they sit
    cpu_sorted = sorted(cpu_ops, key=lambda e: e["ts"])
    syncs = []
    dtoh_corr = {(k.get("args") or {}).get("correlation") for k in gpu
                 if "DtoH" in k["name"] or "Device -> Pageable" in k["name"] or "Device -> Pinned" in k["name"]}
    for r in rt:
        c = (r.get("args") or {}).get("correlation")
        if not (any(r["name"].startswith(n) for n in SYNC_NAMES) or c in dtoh_corr):
            continue
        if r["name"] == "cudaMemcpyAsync" and c not in dtoh_corr:
            continue
        ops = [e for e in cpu_sorted if e["ts"] <= r["ts"] and e["ts"] + e["dur"] >= r["ts"] + r["dur"]
               and e.get("tid") == r.get("tid")]
        inner = min(ops, key=lambda e: e["dur"])["name"] if ops else None
        chain = [e["name"] for e in sorted(ops, key=lambda e: -e["dur"])][:6]
        where_f = next((f["name"] for f in fwds if f["ts"] <= r["ts"] <= f["ts"] + f["dur"]), "outside forwards")
        where_l = next((x["name"] for x in layers if x["ts"] <= r["ts"] <= x["ts"] + x["dur"]), None)
        syncs.append({"name": r["name"], "dur_us": round(r["dur"], 1), "op": inner, "op_chain": chain,
                      "forward": where_f, "layer": where_l, "dtoh": c in dtoh_corr})
    out["sync_calls"] = syncs[:400]
    sa: dict = {}
    for s in syncs:
        k = (s["name"], s["op"], "in a layer" if s["layer"] else s["forward"] if s["forward"] == "outside forwards"
             else "in a forward, outside layers")
        a = sa.setdefault(k, [0, 0.0])
        a[0] += 1
        a[1] += s["dur_us"]
    out["sync_summary"] = [{"name": k[0], "op": k[1], "where": k[2], "count": c, "total_us": round(t, 1)}
                           for k, (c, t) in sorted(sa.items(), key=lambda kv: -kv[1][1])]
    out["n_sync_calls"] = len(syncs)
    # the whole profiled generate: first forward start to last kernel end
    if fwds:
        ends = [k["ts"] + k["dur"] for k in gpu]
        out["window_us"] = {"first_forward_start_to_last_gpu_end": round(max(ends + [0]) - fwds[0]["ts"], 1)
                            if ends else None,
                            "decode_forward_starts_mean_interval": round((fwds[-1]["ts"] - fwds[1]["ts"]) / (len(fwds) - 2), 1)
                            if len(fwds) > 2 else None}
    return out


def profile_point(model, batch: int, prompt: int, dev, steps: int, workdir: str, tag: str, quick: bool) -> dict:
    ids = torch.randint(1, model.config.vocab_size, (batch, prompt), device=dev)
    res: dict = {"batch": batch, "prompt_tokens": prompt}
    new = 4 if quick else bd.NEW_TOKENS
    t = time.perf_counter()
    p = bd.decode_point(model, batch, prompt, dev, new)  # unprofiled, bench_decode's protocol
    res["unprofiled"] = {k: p[k] for k in ("max_cache_len", "prefill_s", "generate_s", "decode_step_s")}
    res["unprofiled_wall_s"] = round(time.perf_counter() - t, 2)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    kw = dict(attention_mask=torch.ones_like(ids), max_new_tokens=1 + steps, min_new_tokens=1 + steps,
              do_sample=False, cache_implementation="static", disable_compile=True)
    with torch.inference_mode():
        model.generate(ids, **kw)  # warm-up at this very length
        bd.sync(dev)
        model._serve12_count["fwd"] = 0
        t0 = time.perf_counter()
        with torch.profiler.profile(activities=acts, record_shapes=False, with_stack=False) as prof:
            model.generate(ids, **kw)
            bd.sync(dev)
        res["profiled_generate_s"] = time.perf_counter() - t0
    trace = os.path.join(workdir, f"trace_{tag}.json")
    prof.export_chrome_trace(trace)
    res["trace_bytes"] = os.path.getsize(trace)
    res["profiled_steps"] = steps
    t = time.perf_counter()
    res["reduced"] = reduce_trace(trace, model.config.num_hidden_layers)
    res["reduce_s"] = round(time.perf_counter() - t, 2)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["1b", "8b"], default="1b")
    ap.add_argument("--points", default="16x4096,16x512,1x4096")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", required=True, help="a folder: result.json and the raw traces")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=0.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    shape = dict(bd.SHAPES[a.model])
    if a.quick:
        shape.update(hidden_size=128, intermediate_size=256, num_hidden_layers=2, vocab_size=1000,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=32)
    t_start = time.perf_counter()
    result = {"tool": "scripts/gpu/profile_decode.py", "env": bd.env(dev), "model": a.model, "shape": shape,
              "settings": "generate: static cache, disable_compile=True (eager), greedy, sdpa (default), bf16",
              "points": []}
    model = bd.build(shape, dev)
    mark(model)
    pts = [tuple(int(v) for v in x.split("x")) for x in a.points.split(",")]
    for batch, prompt in pts:
        if a.deadline_s and time.perf_counter() - t_start > a.deadline_s:
            result["points"].append({"batch": batch, "prompt_tokens": prompt, "error": "not started: deadline"})
            continue
        try:
            r = profile_point(model, batch, prompt, dev, a.steps, a.out, f"{a.model}_{batch}x{prompt}", a.quick)
        except Exception as exc:  # noqa: BLE001 - recorded, the other points go on
            r = {"batch": batch, "prompt_tokens": prompt, "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                 "tb": traceback.format_exc()[-2000:]}
        result["points"].append(r)
        red = r.get("reduced", {})
        print(a.model, batch, prompt, "unprofiled ms", round(r.get("unprofiled", {}).get("decode_step_s", 0) * 1e3, 2),
              "decode fwd", json.dumps(red.get("decode_forward_stats", {}))[:600], "syncs", red.get("n_sync_calls"),
              r.get("error", ""), flush=True)
        with open(os.path.join(a.out, "result.json"), "w") as fh:
            json.dump(result, fh, indent=1)
    result["wall_s"] = time.perf_counter() - t_start
    with open(os.path.join(a.out, "result.json"), "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
