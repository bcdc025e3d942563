"""Decode throughput of transformers ``generate`` with a static KV cache, on random-weight models.

Nothing is downloaded: each model is built from a config (Llama-shaped) with random weights, in
bf16, on one GPU. For each (batch, context) point we time ``generate`` twice with the same prompt:
once for 1 new token (the prefill) and once for 1 + N new tokens; the decode step time is the
difference over N. Besides the decode points the script measures, on the same card:

- ``read_bandwidth``: bytes/s of a reduction over a large bf16 tensor (a pure memory read);
- ``overhead``: the step time of tiny models (width 64, small vocabulary) with 2, 8 and 32 layers,
  whose GPU work is negligible, i.e. the CPU/launch floor of eager ``generate`` per step.

The prediction in mlcalc.serving uses the first two and the model's bytes; it never sees the
decode points it is checked against.

Usage: python bench_decode.py --model 1b|8b|probe --device cuda:0 --out result.json [--quick] [--host-probe]
[--deadline-s S] [--rounds R --round-seed S] [--forward-times]
(--quick: tiny sizes for a CPU smoke test).

The first point of each process is measured twice and the first result kept apart (``warmup_discarded``):
on a freshly started H100 machine (2026-11-26) the first point of each model ran 1.2 to 1.9 times slower
than the same batch at 8 times the context in the same process, although a point's own warm-up had run.

``--host-probe`` (the serve9 call): the host probe, the 8-layer tiny model's decode point (as ``overhead``), timed in
the same process before the warm-up point, before every decode point and after the last (``host_probe``), so each
point has the host's pace beside it. ``--deadline-s``: no point starts after that many seconds.

Every timed ``generate`` call records its window (the serve10 call): epoch start and end, wall and thread CPU seconds,
and the clock ticks of its vCPU in /proc/stat over it (steal included), so a pace meter on that vCPU
(scripts/gpu/pacemeter.py) can price each point, each host probe and each floor probe over its own window.

``--rounds R`` (the serve13 call): every point R times in the one process, the first round in the script's order and
each later one shuffled with a fixed seed (``round_orders``), the host probe before every point of every round; each
round's points are kept (``rounds``) and a point's ``decode_step_s`` is the median of its rounds (``median_points``).
``--forward-times``: a forward pre-hook and hook on the model time the host's side of every forward of every timed
generate call (``forwards`` in its window; ``host_forward_s`` and ``forward_interval_s`` of each round's point).

On CUDA, transformers compiles the forward (CUDA graphs) by default when the cache is static; we turn
that off (``disable_compile=True``): each new (batch, cache length) would recompile, longer than the
whole measurement. So these are eager-mode numbers, whose small batches sit on the CPU launch floor.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import time
from datetime import datetime, timezone

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

# Llama-shaped configs. 1B: the shape of Llama 3.2 1B (Meta's model card / config.json);
# 8B: the shape of Llama 3 8B (Dubey et al. 2024, Table 3). Random weights, so only the shapes matter.
SHAPES = {
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True),
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False),
}
POINTS = {  # (batch, prompt tokens)
    "1b": [(1, 512), (8, 512), (32, 512), (128, 512), (1, 4096), (16, 4096), (64, 4096)],
    "8b": [(1, 512), (8, 512), (32, 512), (64, 512), (1, 4096), (16, 4096), (32, 4096)],
}
NEW_TOKENS = 32


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def build(shape: dict, dev: torch.device) -> LlamaForCausalLM:
    cfg = LlamaConfig(**shape, max_position_embeddings=16384, rope_theta=500000.0)
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    with dev:
        model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(old)
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def cpu_stat() -> list[int]:
    """The /proc/stat row (user nice system idle iowait irq softirq steal, in clock ticks) of the one vCPU this
    process is pinned to, or of the whole machine where it is not pinned; [] where there is no /proc/stat."""
    try:
        import os
        cpus = sorted(os.sched_getaffinity(0))
        name = f"cpu{cpus[0]}" if len(cpus) == 1 else "cpu"
        with open("/proc/stat") as fh:
            for line in fh:
                f = line.split()
                if f and f[0] == name:
                    return [int(x) for x in f[1:9]]
    except (AttributeError, OSError, ValueError):
        pass
    return []


def add_forward_timer(model) -> None:
    """Time the host's side of every forward call of ``model`` (the serve13 call): a forward pre-hook and a forward
    hook on the whole model read ``time.perf_counter`` as the call starts and as it returns, before the GPU has run
    its kernels (nothing here synchronises), so their difference is the host's time to issue one forward's work (longer
    only where the launch queue is full). :func:`timed_generate` keeps each timed call's forwards."""
    fwd: list[tuple[float, float]] = []
    pre: list[float] = []

    def before(_mod, _args, _kwargs=None):
        pre.append(time.perf_counter())

    def after(_mod, _args, _out, _kwargs=None):
        fwd.append((pre.pop(), time.perf_counter()) if pre else (float("nan"), time.perf_counter()))

    model.register_forward_pre_hook(before)
    model.register_forward_hook(after)
    model._fwd_log = fwd


def timed_generate(model, ids, new: int, dev: torch.device, repeats: int = 2, log: list | None = None) -> float:
    """Best wall time of ``repeats`` generate calls; ``log`` gets each call's window (serve10): epoch start and end,
    wall and thread CPU seconds, and the /proc/stat ticks of its vCPU over it (:func:`cpu_stat`); where the model has
    a forward timer (:func:`add_forward_timer`, the serve13 call) also each forward's start from the call's start and
    its host seconds (``forwards``: the first forward is the prefill)."""
    best = float("inf")
    fwd = getattr(model, "_fwd_log", None)
    for _ in range(repeats):
        sync(dev)
        if fwd is not None:
            fwd.clear()
        st0, c0, e0, t0 = cpu_stat(), time.thread_time(), time.time(), time.perf_counter()
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                       do_sample=False, cache_implementation="static", disable_compile=True)
        sync(dev)
        s = time.perf_counter() - t0
        if log is not None:
            st1 = cpu_stat()
            entry = {"epoch": [e0, time.time()], "s": s, "thread_cpu_s": time.thread_time() - c0,
                     "stat_ticks": [b - a for a, b in zip(st0, st1)] if st0 and st1 else [],
                     "static_cache_len": getattr(model, "_previous_max_cache_length", None)}
            if fwd is not None:
                entry["forwards"] = {"start_s": [round(a - t0, 7) for a, _ in fwd],
                                     "host_s": [round(b - a, 7) for a, b in fwd]}
            log.append(entry)
        best = min(best, s)
    return best


def decode_point(model, batch: int, prompt: int, dev: torch.device, new: int) -> dict:
    ids = torch.randint(1, model.config.vocab_size, (batch, prompt), device=dev)
    # transformers 5.17 sizes a static cache to the largest length this model has used (generate's
    # _prepare_static_cache keeps _previous_max_cache_length): without this a short point measured after a long one runs
    # over the long cache (it did in the serve13 call's rounds 2 and 3 of the 512-token points; every earlier run measured
    # its points in increasing length). Within the point the calls size it as every run did: prompt + 1, then prompt + N.
    if hasattr(model, "_previous_max_cache_length"):
        del model._previous_max_cache_length
    g1: list[dict] = []
    gn: list[dict] = []
    with torch.inference_mode():
        timed_generate(model, ids, 2, dev, repeats=1)  # warm-up (allocations, kernels)
        t1 = timed_generate(model, ids, 1, dev, log=g1)
        tn = timed_generate(model, ids, 1 + new, dev, log=gn)
    step = max(tn - t1, 1e-9) / new
    return {"batch": batch, "prompt_tokens": prompt, "new_tokens": new, "max_cache_len": prompt + 1 + new,
            "prefill_s": t1, "generate_s": tn, "decode_step_s": step, "decode_tokens_per_s": batch / step,
            "windows": {"stat_fields": "user nice system idle iowait irq softirq steal", "generate_1": g1,
                        f"generate_{1 + new}": gn}}


def read_bandwidth(dev: torch.device, nbytes: int) -> dict:
    x = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=dev)
    for _ in range(3):
        x.sum(dtype=torch.float32)
    sync(dev)
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        x.sum(dtype=torch.float32)
        sync(dev)
        times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    del x
    return {"bytes": nbytes, "median_s": med, "bytes_per_s": nbytes / med,
            "method": "torch.sum (fp32 accumulate) over a bf16 tensor; bytes read / median of 10"}


def tiny_shape(n_layers: int) -> dict:
    return dict(hidden_size=64, intermediate_size=128, num_hidden_layers=n_layers, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, vocab_size=256, tie_word_embeddings=False)


def overhead_probes(dev: torch.device, layers: list[int], new: int, forward_times: bool = False) -> list[dict]:
    out = []
    for i, n_layers in enumerate(layers):
        model = build(tiny_shape(n_layers), dev)
        if forward_times:
            add_forward_timer(model)
        first = decode_point(model, 1, 64, dev, new) if i == 0 else None  # process warm-up, kept apart
        point = decode_point(model, 1, 64, dev, new)
        if first is not None:
            point["warmup_discarded"] = first
        point["n_layers"] = n_layers
        out.append(point)
        del model
    return out


def round_orders(points: list, model: str, rounds: int, seed: int) -> list[list]:
    """The order of the points in each round (the serve13 call): the first in the script's order, each later one
    shuffled by ``random.Random(f"{seed}-{model}-{round}")``; one round: the script's order."""
    out = [list(points)]
    for r in range(1, max(1, rounds)):
        o = list(points)
        random.Random(f"{seed}-{model}-{r + 1}").shuffle(o)
        out.append(o)
    return out


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def forward_summary(p: dict) -> dict:
    """The host side of a point's decode forwards (the serve13 call; {} without a forward timer): over its timed
    generate(1 + N) calls, the median host seconds of a decode forward (the first forward, the prefill, left out) and
    the median interval from one decode forward's start to the next one's (a decode step as the host saw it)."""
    calls = (p.get("windows") or {}).get(f"generate_{1 + int(p.get('new_tokens', 0))}", [])
    host, gap = [], []
    for c in calls:
        f = c.get("forwards")
        if not f:
            continue
        host += f["host_s"][1:]
        st = f["start_s"][1:]
        gap += [b - a for a, b in zip(st, st[1:])]
    return {"host_forward_s": _median(host), "forward_interval_s": _median(gap)} if host else {}


def median_points(rounds: list[dict], points: list) -> list[dict]:
    """Each point's record over the rounds so far (the serve13 rule, stated before the call): the median of its
    rounds' decode steps (of two, their mean), every round's value kept beside it."""
    out = []
    for b, q in points:
        got = [p for r in rounds for p in r["points"] if (p["batch"], p["prompt_tokens"]) == (b, q)]
        ok = [p for p in got if "decode_step_s" in p]
        if not ok:
            out.append({"batch": b, "prompt_tokens": q, "error": "; ".join(p.get("error", "") for p in got)
                        or "not measured"})
            continue
        step = _median([p["decode_step_s"] for p in ok])
        out.append({"batch": b, "prompt_tokens": q, "new_tokens": ok[0]["new_tokens"],
                    "max_cache_len": ok[0]["max_cache_len"], "decode_step_s": step, "decode_tokens_per_s": b / step,
                    "rounds": [p["round"] for p in ok], "rounds_decode_step_s": [p["decode_step_s"] for p in ok],
                    "rounds_host_forward_s": [p.get("host_forward_s") for p in ok],
                    "rounds_forward_interval_s": [p.get("forward_interval_s") for p in ok],
                    "rule": "median of the rounds' decode steps"})
    return out


def env(dev: torch.device) -> dict:
    info = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "device": str(dev)}
    try:
        import os
        info["cpu_affinity"] = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    if dev.type == "cuda":
        info["device_name"] = torch.cuda.get_device_name(dev)
        info["cuda"] = torch.version.cuda
        try:
            info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=20).stdout.split()[0]
        except Exception as exc:  # noqa: BLE001 - recorded, not fatal
            info["driver"] = f"unknown ({exc})"
    return info


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["1b", "8b", "probe"], required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for a CPU smoke test")
    ap.add_argument("--points", default="", help="only these (batch x prompt) points, e.g. 1x512,1x4096 "
                    "(the serve7 call: the first point of the process against itself and the same batch at 8x the context)")
    ap.add_argument("--host-probe", action="store_true", help="the 8-layer tiny model's decode point beside every point")
    ap.add_argument("--deadline-s", type=float, default=0.0, help="start no point after this many seconds (0: none); "
                    "after the first round, none that took longer in its first round than is left")
    ap.add_argument("--rounds", type=int, default=1, help="every point this many times in one process (serve13)")
    ap.add_argument("--round-seed", type=int, default=13, help="seed of the rounds' orders")
    ap.add_argument("--forward-times", action="store_true", help="time the host side of every forward (serve13)")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    result = {"schema": 1, "tool": "scripts/gpu/bench_decode.py", "env": env(dev), "model": a.model,
              "attn_implementation": "sdpa (transformers default)", "dtype": "bf16", "cache": "static",
              "compile": "off (disable_compile=True: eager PyTorch)",
              "method": "decode step = (generate(1+N) - generate(1)) / N, best of 2 each, after a warm-up"}
    new = 4 if a.quick else NEW_TOKENS
    t_start = time.perf_counter()
    result["epoch_start_s"] = time.time()  # t_s of the host probe samples count from here
    if a.model == "probe":
        result["read_bandwidth"] = read_bandwidth(dev, 2**24 if a.quick else 4 * 2**30)
        result["overhead"] = overhead_probes(dev, [2, 8] if a.quick else [2, 8, 32], new, a.forward_times)
    else:
        shape = dict(SHAPES[a.model])
        points = POINTS[a.model]
        if a.points:
            points = [tuple(int(v) for v in x.split("x")) for x in a.points.split(",")]
            result["points_only"] = a.points
        if a.quick:
            shape.update(hidden_size=128, intermediate_size=256, num_hidden_layers=2, vocab_size=1000,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32)
            points = [(1, 16), (4, 32)]
        probe_model = build(tiny_shape(8), dev) if a.host_probe else None
        if probe_model is not None and a.forward_times:
            add_forward_timer(probe_model)
        samples: list[dict] = []

        def host_probe(before: str) -> None:
            if probe_model is None:
                return
            p = decode_point(probe_model, 1, 64, dev, new)
            samples.append({"before": before, "t_s": time.perf_counter() - t_start, "s": p["decode_step_s"],
                            "windows": p["windows"]})
            result["host_probe"] = {"model": "tiny Llama, 8 layers, width 64 (as overhead)", "batch": 1,
                                    "prompt_tokens": 64, "new_tokens": new, "samples": samples}

        model = build(shape, dev)
        if a.forward_times:
            add_forward_timer(model)
        result["shape"] = shape
        result["n_params"] = sum(p.numel() for p in model.parameters())
        result["points"] = []
        orders = round_orders(points, a.model, a.rounds, a.round_seed)
        if a.rounds > 1:
            result["rounds"] = []
            result["method"] += (f"; {a.rounds} rounds in one process, each in its own order (seed {a.round_seed}); "
                                 "a point's decode_step_s is the median of its rounds (rounds_decode_step_s)")
        host_probe("warmup")
        try:  # process warm-up: the first point once, kept apart from the results
            result["warmup_discarded"] = decode_point(model, *orders[0][0], dev, new)
        except torch.OutOfMemoryError as exc:
            result["warmup_discarded"] = {"error": f"out of memory: {str(exc)[:200]}"}
        took: dict[tuple[int, int], float] = {}  # seconds a point took in its first round (host probe included)
        for r, order in enumerate(orders):
            rnd = {"round": r + 1, "order": [f"{b}x{q}" for b, q in order], "points": []}
            if a.rounds > 1:
                result["rounds"].append(rnd)
            for batch, prompt in order:
                left = a.deadline_s - (time.perf_counter() - t_start)
                if a.deadline_s and left < took.get((batch, prompt), 0.0):
                    p = {"batch": batch, "prompt_tokens": prompt, "error": "not started: deadline"}
                else:
                    t_pt = time.perf_counter()
                    host_probe(f"r{r + 1} {batch}x{prompt}" if a.rounds > 1 else f"{batch}x{prompt}")
                    try:
                        p = decode_point(model, batch, prompt, dev, new)
                    except torch.OutOfMemoryError as exc:  # recorded, the other points go on
                        p = {"batch": batch, "prompt_tokens": prompt, "error": f"out of memory: {str(exc)[:200]}"}
                        if dev.type == "cuda":
                            torch.cuda.empty_cache()
                    took.setdefault((batch, prompt), time.perf_counter() - t_pt)
                if a.rounds > 1:
                    p["round"] = r + 1
                    p.update(forward_summary(p))
                    rnd["points"].append(p)
                    result["points"] = median_points(result["rounds"], points)
                else:
                    result["points"].append(p)
                print(a.model, f"round {r + 1}", {k: (round(v, 5) if isinstance(v, float) else v) for k, v in p.items()
                                                 if k != "windows"}, flush=True)
                with open(a.out, "w") as fh:  # keep what we have if the run is cut short
                    json.dump(result, fh, indent=1)
        if a.deadline_s == 0 or time.perf_counter() - t_start <= a.deadline_s:
            host_probe("end")
    result["wall_s"] = time.perf_counter() - t_start
    with open(a.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "points"}, indent=1)[:2000], flush=True)


if __name__ == "__main__":
    main()
