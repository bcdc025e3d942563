"""The serve5 call (issue 25): what the serving model's last measured misses are made of, one GPU.

* ``machine``: the card's read rate (a 4 GiB bf16 reduction) and matmul rate (8192^3 bf16), as every serving run.
* ``matmul``: the plain engine's decode matmuls as it runs them, ``x @ W`` with ``W`` stored (in, out)
  (scripts/gpu/serve_engine.py), next to ``F.linear`` with the same matrix stored (out, in) (the kernel probe's
  layout, scripts/gpu/bench_kernels.py): every engine matrix of Llama 3 8B and 70B and its tensor-parallel shards
  (tp 2 and 4), batch 1-128; many distinct copies replayed from one CUDA graph (past the L2), seconds per matmul.
* ``engine``: the engine's decode step (tp 1) of the Llama 3 70B layer x 20 and of Llama 3 8B, and of one GPU's
  shard of their tp 2 / tp 4 layouts (the same step with a half / quarter of the heads, FFN columns and vocabulary,
  no all-reduce), replayed from a CUDA graph and timed as bench_serve_tp.py times it; then the kernels of three
  replays and of two eager steps under torch.profiler (name, count, GPU time), and the eager step's ATen matmuls by
  input shape.
* ``mla``: DeepSeek-V2-Lite (8 of 27 layers) prefill through transformers, timed as bench_serve.py times it, then
  one more prefill with CUDA events around every module of every layer (GPU time by module: projections, the latent
  norm, rotary, SDPA, experts, router, shared experts) and one under torch.profiler (kernels by name, ATen ops).

Every section writes its JSON after each point (``--out-dir``), each point under its own try; ``--deadline-s``
bounds the whole.  CPU dry run: ``python serve5_probe.py --quick --device cpu --out-dir /tmp/x``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_engine  # noqa: E402

T0 = time.perf_counter()
DEADLINE = float("inf")

#: (name, Cfg): the engine's two shapes and one GPU's shard of their tp 2 / tp 4 layouts (heads, KV heads, FFN
#: columns and vocabulary divided; the step of one rank without its all-reduces)
def _shard(c: serve_engine.Cfg, tp: int) -> serve_engine.Cfg:
    return serve_engine.Cfg(c.hidden, c.layers, c.heads // tp, c.kv_heads // tp, c.head_dim, c.ffn // tp,
                            c.vocab // tp, c.rope_theta)


ENGINE_CASES = [("llama70b_20l", 1, [(128, 2048), (32, 2048), (64, 2048), (128, 1024)]),
                ("llama70b_20l", 2, [(128, 2048), (32, 2048)]),
                ("llama70b_20l", 4, [(128, 2048), (32, 2048)]),
                ("llama8b", 1, [(128, 2048), (32, 2048)]),
                ("llama8b", 2, [(128, 2048)]),
                ("llama8b", 4, [(128, 2048)])]
MM_BATCHES = [1, 8, 32, 64, 128]
MLA_POINTS = [(1, 8192), (4, 2048), (1, 4096), (2, 4096), (8, 512), (1, 2048)]


def engine_matrices(cfg: serve_engine.Cfg, tp: int) -> list[tuple[str, int, int]]:
    """(what, K in, N out) of one layer's four matmuls on one GPU of ``tp`` (serve_engine.Engine's weights)."""
    hd = cfg.head_dim
    h, kvh, ffn = cfg.heads // tp, cfg.kv_heads // tp, cfg.ffn // tp
    return [("qkv", cfg.hidden, (h + 2 * kvh) * hd), ("o", h * hd, cfg.hidden), ("gate_up", cfg.hidden, 2 * ffn),
            ("down", ffn, cfg.hidden)]


def left() -> float:
    return DEADLINE - (time.perf_counter() - T0)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def free(dev):
    import gc
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()


def timeit(fn, dev, n: int, groups: int = 3) -> dict:
    """Median over groups of (n back-to-back calls, synchronized) / n (bench_serve_tp.py's method)."""
    fn()
    fn()
    sync(dev)
    res = []
    for _ in range(groups):
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync(dev)
        res.append((time.perf_counter() - t0) / n)
    order = list(res)
    res.sort()
    return {"s": res[len(res) // 2], "groups_in_order_s": order, "n": n}


def n_for(fn, dev, target_s: float, n_max: int) -> int:
    fn()
    sync(dev)
    t0 = time.perf_counter()
    fn()
    sync(dev)
    return int(min(n_max, max(3, target_s / max(time.perf_counter() - t0, 1e-7))))


def graphed(fn, dev):
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


def _dev_time(ev) -> float:
    for k in ("device_time_total", "cuda_time_total"):
        v = getattr(ev, k, None)
        if v is not None:
            return float(v)
    return 0.0


def _self_dev_time(ev) -> float:
    for k in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(ev, k, None)
        if v is not None:
            return float(v)
    return 0.0


def profiled(fn, dev, steps: int, shapes: bool = False) -> dict:
    """Kernels of ``steps`` calls of ``fn`` under torch.profiler: by kernel name (count and GPU us per call of
    ``fn``), the GPU busy time per call, and the ATen ops (GPU us per call; by input shape when ``shapes``)."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    fn()
    sync(dev)
    with profile(activities=acts, record_shapes=shapes) as prof:
        for _ in range(steps):
            fn()
        sync(dev)
    kern: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    busy = 0.0
    for e in prof.events():
        dt = getattr(e, "device_type", None)
        if dt is not None and "CUDA" in str(dt) and getattr(e, "name", ""):
            try:
                d = float(e.time_range.elapsed_us())
            except Exception:  # noqa: BLE001
                d = float(getattr(e, "device_time", 0.0) or 0.0)
            k = kern[e.name[:160]]
            k[0] += 1
            k[1] += d
            busy += d
    ops = []
    for ev in prof.key_averages(group_by_input_shape=shapes):
        if ev.key.startswith("aten::") and _dev_time(ev) > 0:
            rec = {"op": ev.key, "count": ev.count / steps, "device_us": _dev_time(ev) / steps,
                   "self_device_us": _self_dev_time(ev) / steps}
            if shapes:
                rec["shapes"] = str(getattr(ev, "input_shapes", ""))[:200]
            ops.append(rec)
    ops.sort(key=lambda r: -r["device_us"])
    ks = sorted(({"kernel": k, "count": v[0] / steps, "us": v[1] / steps} for k, v in kern.items()),
                key=lambda r: -r["us"])
    return {"steps": steps, "gpu_busy_us": busy / steps, "kernels": ks[:80], "ops": ops[:80]}


# ----------------------------------------------------------------------------------------------- sections

def machine(dev, quick, res, save):
    nbytes = 2**20 if quick else 4 * 2**30
    x = torch.randn(nbytes // 2, device=dev).to(torch.bfloat16)
    r = timeit(lambda: x.sum(dtype=torch.float32), dev, 3 if quick else 20)
    res["read_bandwidth"] = {"bytes": nbytes, "bytes_per_s": nbytes / r["s"], "timing": r,
                             "method": "torch.sum (fp32 accumulate) over a bf16 tensor"}
    del x
    n = 256 if quick else 8192
    a = torch.randn(n, n, device=dev).to(torch.bfloat16)
    b = torch.randn(n, n, device=dev).to(torch.bfloat16)
    r = timeit(lambda: a @ b, dev, 3 if quick else 30)
    res["matmul"] = {"n": n, "flops_per_s": 2 * n**3 / r["s"], "timing": r}
    del a, b
    free(dev)
    save()
    print("machine", round(res["read_bandwidth"]["bytes_per_s"] / 1e12, 3), "TB/s",
          round(res["matmul"]["flops_per_s"] / 1e12), "TFLOP/s", flush=True)


def matmul(dev, quick, res, save):
    cfgs = {"tiny": serve_engine.CFGS["tiny"]} if quick else {m: serve_engine.CFGS[m] for m in ("llama8b", "llama70b_20l")}
    seen = set()
    shapes = []
    for m, cfg in cfgs.items():
        for tp in (1, 2, 4):
            for what, k, n in engine_matrices(cfg, tp):
                if (k, n) not in seen:
                    seen.add((k, n))
                    shapes.append((m, tp, what, k, n))
    batches = [1, 4] if quick else MM_BATCHES
    target = 2**20 if quick else 384 * 2**20
    res["points"] = []
    for m, tp, what, k, n in shapes:
        nbytes = k * n * 2
        copies = int(max(3, min(128, -(-target // nbytes))))
        for layout in ("hw", "linear"):
            if left() < 15:
                res["points"].append({"model": m, "tp": tp, "what": what, "k": k, "n": n, "layout": layout,
                                      "error": "skipped: out of time"})
                continue
            try:
                shape = (k, n) if layout == "hw" else (n, k)
                ws = [torch.empty(*shape, device=dev, dtype=torch.bfloat16).normal_() for _ in range(copies)]
                for b in batches:
                    x = torch.randn(b, k, device=dev, dtype=torch.bfloat16)
                    ys: list = []
                    if layout == "hw":
                        def f():
                            ys.clear()
                            for w in ws:
                                ys.append(x @ w)
                    else:
                        def f():
                            ys.clear()
                            for w in ws:
                                ys.append(F.linear(x, w))
                    g = graphed(f, dev)
                    r = timeit(g, dev, n_for(g, dev, 0.03, 40))
                    s = r["s"] / copies
                    res["points"].append({"model": m, "tp": tp, "what": what, "k": k, "n": n, "layout": layout,
                                          "batch": b, "copies": copies, "weight_bytes": nbytes, "s": s,
                                          "bytes_per_s": nbytes / s, "timing": r})
                    print("mm", layout, m, tp, what, k, n, b, f"{s * 1e6:.1f} us", f"{nbytes / s / 1e12:.2f} TB/s",
                          flush=True)
                    del g, ys
                del ws
            except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
                res["points"].append({"model": m, "tp": tp, "what": what, "k": k, "n": n, "layout": layout,
                                      "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            free(dev)
            save()


def engine(dev, quick, res, save):
    cases = [("tiny", 1, [(4, 64)]), ("tiny", 2, [(4, 64)])] if quick else ENGINE_CASES
    res["decode"] = []
    for mname, tp, points in cases:
        if left() < 25:
            res["decode"].append({"model": mname, "tp_shard": tp, "error": "skipped: out of time"})
            continue
        cfg = _shard(serve_engine.CFGS[mname], tp)
        try:
            eng = serve_engine.Engine(cfg, dev)
        except Exception as exc:  # noqa: BLE001
            res["decode"].append({"model": mname, "tp_shard": tp, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            continue
        with torch.inference_mode():
            for b, c in points:
                if left() < 15:
                    res["decode"].append({"model": mname, "tp_shard": tp, "batch": b, "context": c,
                                          "error": "skipped: out of time"})
                    continue
                pt = {"model": mname, "tp_shard": tp, "batch": b, "context": c, "cfg": cfg.__dict__,
                      "weight_bytes": eng.n_weight_bytes}
                try:
                    pt["kv_bytes"] = eng.alloc_cache(b, c)
                    ids = torch.randint(0, cfg.vocab, (b,), device=dev)
                    pos = torch.full((b,), c - 1, dtype=torch.long, device=dev)
                    gs = serve_engine.GraphStep(eng, b)
                    pt["graph"] = timeit(lambda: gs(ids, pos), dev, 20)
                    pt["graph_s"] = pt["graph"]["s"]
                    pt["eager"] = timeit(lambda: eng.decode(ids, pos), dev, 8)
                    pt["eager_s"] = pt["eager"]["s"]
                    pt["profile_graph"] = profiled(lambda: gs(ids, pos), dev, 3)
                    pt["profile_eager"] = profiled(lambda: eng.decode(ids, pos), dev, 2, shapes=True)
                    del gs
                except Exception as exc:  # noqa: BLE001
                    pt["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                eng.k = eng.v = None
                free(dev)
                res["decode"].append(pt)
                print("engine", mname, tp, b, c, {k: pt.get(k) for k in ("graph_s", "eager_s", "error")},
                      "busy us", pt.get("profile_graph", {}).get("gpu_busy_us"), flush=True)
                save()
        del eng
        free(dev)


SMALL_CASES = [("llama8b", 1), ("llama8b", 2), ("llama8b", 4), ("llama70b_20l", 1), ("llama70b_20l", 2),
               ("llama70b_20l", 4)]
SMALL_BATCHES = [1, 8, 32, 64, 128]


def small_step(eng, ids, pos, bufs, n_layers: int):
    """serve_engine.Engine.decode over its first ``n_layers`` layers with every weight matmul and the attention
    call replaced by a ready tensor of the same shape (``bufs``): what is left are the layer's other kernels at full
    width (RMS norms in fp32, rotary, the cache writes, the gate's SiLU and product, residual adds)."""
    hd = eng.cfg.head_dim
    b = ids.shape[0]
    slots = torch.arange(b, device=ids.device)
    x = eng.emb[ids]
    ang = pos[:, None].float() * eng.inv_freq
    cos, sin = ang.cos()[:, None, :].to(x.dtype), ang.sin()[:, None, :].to(x.dtype)
    keep = []
    for li, L in enumerate(eng.layers[:n_layers]):
        h = serve_engine._rms(x, L["n1"])
        qkv = bufs["qkv"]  # stands for h @ wqkv (one stream: the norm before it still runs, in order)
        q = qkv[:, : eng.h * hd].view(b, eng.h, hd)
        k = qkv[:, eng.h * hd: (eng.h + eng.kvh) * hd].view(b, eng.kvh, hd)
        v = qkv[:, (eng.h + eng.kvh) * hd:].view(b, eng.kvh, hd)
        q, k = serve_engine._rope(q, cos, sin), serve_engine._rope(k, cos, sin)
        eng.k[li][slots, :, pos] = k
        eng.v[li][slots, :, pos] = v
        keep.append(q)
        x = x + bufs["attn_out"]  # stands for SDPA, then o @ wo
        h = serve_engine._rms(x, L["n2"])
        gu = bufs["gu"]  # stands for h @ wgu
        a = F.silu(gu[:, : eng.ffn]) * gu[:, eng.ffn:]
        keep.append(a)
        x = x + bufs["down"]  # stands for a @ wd
    return x, keep


def small(dev, quick, res, save):
    """The engine layer's kernels other than its matmuls and attention, replayed from a CUDA graph at 2 and 8
    layers (per layer: the difference over 6), at full width, for every shape and shard and batch 1-128."""
    cases = [("tiny", 1), ("tiny", 2)] if quick else SMALL_CASES
    batches = [1, 4] if quick else SMALL_BATCHES
    res["points"] = []
    for mname, tp in cases:
        if left() < 10:
            res["points"].append({"model": mname, "tp_shard": tp, "error": "skipped: out of time"})
            continue
        base = _shard(serve_engine.CFGS[mname], tp)
        cfg = serve_engine.Cfg(base.hidden, 8 if not quick else 2, base.heads, base.kv_heads, base.head_dim, base.ffn,
                               base.vocab, base.rope_theta)
        try:
            eng = serve_engine.Engine(cfg, dev)
            eng.alloc_cache(max(batches), 64 if quick else 2048)
        except Exception as exc:  # noqa: BLE001
            res["points"].append({"model": mname, "tp_shard": tp, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            free(dev)
            continue
        hd = cfg.head_dim
        with torch.inference_mode():
            for b in batches:
                if left() < 6:
                    res["points"].append({"model": mname, "tp_shard": tp, "batch": b, "error": "skipped: out of time"})
                    continue
                pt = {"model": mname, "tp_shard": tp, "batch": b, "hidden": cfg.hidden, "ffn": cfg.ffn}
                try:
                    def rnd(*shape):
                        return torch.randn(*shape, device=dev).to(torch.bfloat16)
                    bufs = {"qkv": rnd(b, (eng.h + 2 * eng.kvh) * hd), "attn_out": rnd(b, cfg.hidden),
                            "gu": rnd(b, 2 * eng.ffn), "down": rnd(b, cfg.hidden)}
                    ids = torch.randint(0, cfg.vocab, (b,), device=dev)
                    pos = torch.randint(0, 64 if quick else 2048, (b,), device=dev)
                    t = {}
                    for n in ((1, 2) if quick else (2, 8)):
                        g = graphed(lambda n=n: small_step(eng, ids, pos, bufs, n), dev)
                        t[n] = timeit(g, dev, 4 if quick else 100)["s"]
                        del g
                    lo, hi = sorted(t)
                    pt.update({"layers_s": {str(k): v for k, v in t.items()}, "per_layer_s": (t[hi] - t[lo]) / (hi - lo)})
                except Exception as exc:  # noqa: BLE001
                    pt["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                res["points"].append(pt)
                print("small", mname, tp, b, pt.get("per_layer_s", pt.get("error")), flush=True)
                save()
        del eng
        free(dev)


#: module name suffixes timed by CUDA events in a DeepSeek-V2 layer (transformers 5.17 names)
MLA_MODULES = ("input_layernorm", "self_attn", "self_attn.q_proj", "self_attn.kv_a_proj_with_mqa",
               "self_attn.kv_a_layernorm", "self_attn.kv_b_proj", "self_attn.o_proj", "post_attention_layernorm",
               "mlp", "mlp.gate", "mlp.experts", "mlp.shared_experts", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def module_times(model, step, dev) -> dict:
    """GPU ms of each module kind (summed over layers) in one call of ``step``: CUDA events recorded in forward
    pre- and post-hooks (one stream: the time between them is the GPU's time in that module, host gaps included)."""
    import re
    if dev.type != "cuda":
        return {}
    evs: list = []
    hooks = []
    for name, mod in model.named_modules():
        mm = re.match(r".*layers\.(\d+)\.(.*)$", name)
        if not mm or mm.group(2) not in MLA_MODULES:
            continue
        key = (int(mm.group(1)), mm.group(2))

        def pre(m, a, key=key):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            evs.append((key, "pre", e))

        def post(m, a, o, key=key):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            evs.append((key, "post", e))

        hooks.append(mod.register_forward_pre_hook(pre))
        hooks.append(mod.register_forward_hook(post))
    try:
        sync(dev)
        t0 = time.perf_counter()
        step()
        sync(dev)
        wall = time.perf_counter() - t0
    finally:
        for h in hooks:
            h.remove()
    open_: dict = {}
    out: dict[str, float] = defaultdict(float)
    per_layer: dict[str, dict] = defaultdict(dict)
    for key, kind, e in evs:
        if kind == "pre":
            open_[key] = e
        elif key in open_:
            ms = open_.pop(key).elapsed_time(e)
            out[key[1]] += ms
            per_layer[key[1]][key[0]] = ms
    return {"wall_s": wall, "module_ms": dict(out), "per_layer_ms": {k: dict(v) for k, v in per_layer.items()}}


def mla(dev, quick, res, save):
    import bench_serve
    import serve_archs
    res["prefill"] = []
    points = [(1, 32), (2, 16)] if quick else MLA_POINTS
    try:
        model = serve_archs.build("dsv2lite_8l", dev, tiny_layers=2 if quick else None)
        res["config"] = model.config.to_dict() if hasattr(model.config, "to_dict") else {}
        res["experts_implementation"] = str(getattr(model.config, "_experts_implementation", None))
    except Exception as exc:  # noqa: BLE001
        res["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        save()
        return
    from transformers import StaticCache
    for b, p in points:
        if left() < 12:
            res["prefill"].append({"batch": b, "prompt": p, "error": "skipped: out of time"})
            continue
        pt = {"batch": b, "prompt": p}
        try:
            pt.update(bench_serve.hf_prefill(model, b, p, dev))
            cache = StaticCache(config=model.config, max_cache_len=p)
            vocab = model.config.vocab_size
            ids = torch.randint(1, vocab, (b, p), device=dev)
            cp = torch.arange(p, device=dev)
            am = torch.ones(b, p, dtype=torch.long, device=dev)

            def step():
                bench_serve.set_pos(cache, 0)
                return model(input_ids=ids, past_key_values=cache, cache_position=cp, attention_mask=am,
                             use_cache=True, logits_to_keep=1).logits[:, -1].argmax(-1)

            with torch.inference_mode():
                step()
                pt["modules"] = module_times(model, step, dev)
                pt["profile"] = profiled(step, dev, 1, shapes=True)
            del cache
        except Exception as exc:  # noqa: BLE001
            pt["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        free(dev)
        res["prefill"].append(pt)
        print("mla prefill", b, p, pt.get("prefill_s", pt.get("error")),
              {k: round(v, 2) for k, v in pt.get("modules", {}).get("module_ms", {}).items()}, flush=True)
        save()


SECTIONS = {"machine": machine, "matmul": matmul, "engine": engine, "mla": mla, "small": small}


def main() -> None:
    global DEADLINE
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--sections", default="machine,engine,mla,matmul")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=float("inf"))
    ap.add_argument("--caps", default="", help="seconds per section, e.g. matmul=90,engine=120")
    a = ap.parse_args()
    caps = {k: float(v) for k, v in (x.split("=") for x in a.caps.split(",") if x)}
    DEADLINE = a.deadline_s
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    torch.manual_seed(0)
    os.makedirs(a.out_dir, exist_ok=True)
    env = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "torch": torch.__version__,
           "device": str(dev), "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "cuda": torch.version.cuda}
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    for name in [s for s in a.sections.split(",") if s]:
        res = {"schema": 1, "tool": "scripts/gpu/serve5_probe.py", "section": name, "env": env}
        path = os.path.join(a.out_dir, f"serve5_{name}.json")

        def save(res=res, path=path):
            res["wall_s"] = time.perf_counter() - T0
            with open(path + ".tmp", "w") as fh:
                json.dump(res, fh, indent=1)
            os.replace(path + ".tmp", path)

        if left() < 10:
            res["error"] = "skipped: out of time"
            save()
            continue
        t = time.perf_counter()
        whole = a.deadline_s
        DEADLINE = min(whole, t - T0 + caps.get(name, float("inf")))
        try:
            SECTIONS[name](dev, a.quick, res, save)
        except Exception as exc:  # noqa: BLE001
            res["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        DEADLINE = whole
        res["section_s"] = time.perf_counter() - t
        save()
        free(dev)
        print("section", name, round(res["section_s"], 1), "s; total", round(time.perf_counter() - T0, 1), flush=True)


if __name__ == "__main__":
    main()
