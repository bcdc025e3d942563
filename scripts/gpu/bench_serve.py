"""Serving measurements on one GPU: decode and prefill of five architectures (Hugging Face ``transformers``
forward, random weights) on two paths, the launch-floor probes, and a load test of a small continuous-
batching loop.

Modes (one process per GPU; each writes its JSON after every point, so a run cut short keeps what it made):

``--mode arch --archs a,b``: for each architecture of ``serve_archs.ARCHS``:
  * ``tiny``: the same class at width 64 with 2 and 8 layers (batch 1, cache 64): step time eager and
    replayed as a CUDA graph, and the operations one eager step dispatches (counted with a dispatch mode)
    and the CUDA kernels it launches (torch.profiler): the per-architecture floor;
  * ``warmup_discarded``: the first decode point of the process, measured once and kept apart;
  * ``decode``: for each (batch, context): a static cache of ``context`` positions (filled with random
    values), one new token per sequence at position context-1, called as ``generate`` calls the model
    (2-D attention mask of ones, ``cache_position``, ``position_ids``) plus the greedy pick of the next token;
    ``eager_s``: the step in eager PyTorch; ``graph_s``: the same step captured once in a
    ``torch.cuda.CUDAGraph`` and replayed (what a serving engine's CUDA-graph decode removes: the launches);
  * ``prefill``: one forward over (batch, prompt) tokens into a static cache of ``prompt`` positions, logits of
    the last position only (eager).
``--mode probe``: the floor probe (tiny Llama, 2/8/32 layers, eager and graph), the read bandwidth and an
  8192^3 bf16 matmul: run at the start and the end of every process (the host's spread).
``--mode load``: a continuous-batching loop over ``serve_engine.Engine`` (Llama 3 8B shape, one GPU):
  Poisson arrivals at several rates; per request TTFT and TPOT; per iteration what it ran and how long.

Times: a step is repeated n times back to back (n from a first timing, 0.3 s worth, 5 to 60) with one
synchronization at the end, three such groups, the median group's time / n.

Usage: python bench_serve.py --mode arch --archs llama8b --device cuda:0 --out x.json [--quick] [--deadline-s 300]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from datetime import datetime, timezone

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_archs  # noqa: E402
import serve_engine  # noqa: E402

T0 = time.perf_counter()
DEADLINE = float("inf")

DECODE_POINTS = [(1, 512), (8, 512), (32, 512), (128, 512), (8, 2048), (32, 2048), (1, 8192), (16, 8192)]
DECODE_POINTS_MHA = [(1, 512), (8, 512), (32, 512), (128, 512), (8, 2048), (32, 2048), (1, 8192), (4, 8192)]
PREFILL_POINTS = [(1, 512), (1, 2048), (1, 8192), (8, 512), (4, 2048)]
#: Points none of the earlier calls measured (``--points heldout``: the serve4 call checks the model on them)
HELDOUT_DECODE = [(2, 1024), (16, 1024), (64, 1024), (4, 4096), (24, 4096)]
HELDOUT_PREFILL = [(2, 1024), (1, 4096), (2, 4096)]
#: ``--points misses`` (the serve7 call): per architecture, the eager decode and prefill points that missed in the first
#: two calls (no host probe next to them) and passing controls of the same architecture, measured again with the probe
#: next to every timing group (``--adjacent-probe``)
MISSES_DECODE = {
    "llama8b": [(1, 512), (8, 512), (8, 2048), (1, 8192), (32, 512), (128, 512)],
    "mha7b": [(1, 512), (8, 512), (128, 512), (8, 2048), (32, 2048), (1, 8192)],
    "gemma3_4b": [(1, 512), (8, 512), (32, 512), (128, 512), (8, 2048), (32, 2048), (1, 8192), (16, 8192)],
    "mixtral_8l": [(1, 512), (8, 2048), (16, 8192)],
    "dsv2lite_8l": [(1, 512), (32, 512), (128, 512), (8, 2048), (16, 8192)],
}
MISSES_PREFILL = {
    "llama8b": [(1, 512), (8, 512)],
    "mha7b": [(1, 512), (8, 512)],
    "gemma3_4b": [(1, 512), (1, 2048)],
    "mixtral_8l": [(1, 512), (1, 2048)],
    "dsv2lite_8l": [(1, 512), (1, 2048), (8, 512)],
}
#: ``--points all`` (the serve8 call): every eager decode and prefill point of the first calls (``DECODE_POINTS``,
#: ``PREFILL_POINTS``) and of the serve4 call (``HELDOUT_*``), all in one protocol (``--adjacent-probe``)
ALL_DECODE = {"mha7b": DECODE_POINTS_MHA + HELDOUT_DECODE}
ALL_PREFILL = PREFILL_POINTS + HELDOUT_PREFILL
#: ``--points blind10`` (session 35's blind check, predicted before the call: scripts/gpu/blind10_predictions.json):
#: batch x context points no earlier call measured; Gemma 3's graph-capturable points (cache within its 1,024 window)
#: first, since its process captures no more graphs once one capture fails
BLIND10_DECODE = {"llama8b": [(4, 1024), (48, 1024), (12, 4096), (3, 6144), (96, 768)],
                  "gemma3_4b": [(4, 768), (48, 768), (12, 4096)]}
BLIND10_PREFILL = {"llama8b": [(4, 1024), (1, 6144), (16, 256)], "gemma3_4b": [(4, 1024), (1, 6144)]}
POINTS = "main"
#: timing groups per point (``--groups``): with ``--adjacent-probe`` a probe before each and after the last
GROUPS = 3
#: ``--adjacent-probe``: before each timing group of an eager decode point, the host probe (a tiny 8-layer Llama,
#: one eager decode step, 5 back to back) is timed too, so each point carries the host's speed at that moment
HOST_PROBE = None


def host_state() -> dict:
    """CPU counters at this moment (Linux): jiffies of steal and of all states, the mean clock of the CPUs."""
    out = {"t": time.time()}
    try:
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:]]
        out["jiffies"] = sum(f)
        out["steal_jiffies"] = f[7] if len(f) > 7 else 0
        out["idle_jiffies"] = f[3] + f[4]
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            mhz = [float(line.split(":")[1]) for line in fh if line.startswith("cpu MHz")]
        if mhz:
            out["cpu_mhz_mean"] = sum(mhz) / len(mhz)
    except (OSError, ValueError):
        pass
    try:
        out["loadavg"] = [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except (OSError, ValueError):
        pass
    return out


class HostProbe:
    """A tiny Llama (8 layers, width 64) held in the process; ``__call__`` times n of its eager decode steps."""

    def __init__(self, dev: torch.device, layers: int = 8):
        from transformers import StaticCache
        self.dev = dev
        self.model = serve_archs.build("llama8b", dev, tiny_layers=layers)
        self.cache = StaticCache(config=self.model.config, max_cache_len=64)
        self.ids = torch.randint(1, 200, (1, 1), device=dev)
        self.cp = torch.tensor([63], device=dev)
        self.pos = torch.full((1, 1), 63, device=dev)
        self.am = torch.ones(1, 64, dtype=torch.long, device=dev)
        self.layers = layers
        self.samples: list = []
        with torch.inference_mode():
            for _ in range(3):
                self._step()

    def _step(self):
        set_pos(self.cache, 60)
        return self.model(input_ids=self.ids, past_key_values=self.cache, cache_position=self.cp,
                          position_ids=self.pos, attention_mask=self.am, use_cache=True).logits[:, -1].argmax(-1)

    def __call__(self, n: int = 5) -> float:
        with torch.inference_mode():
            sync(self.dev)
            t0 = time.perf_counter()
            for _ in range(n):
                self._step()
            sync(self.dev)
            s = (time.perf_counter() - t0) / n
        self.samples.append({"t_process_s": time.perf_counter() - T0, "s": s})
        return s


def left() -> float:
    return DEADLINE - (time.perf_counter() - T0)


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def timed(fn, dev: torch.device, target_s: float = 0.3, n_min: int = 5, n_max: int = 60, groups: int = 3,
          reset=None, probe=None) -> dict:
    """``reset(k)``, if given, is called before ``k`` calls (it rewinds a static cache's write position);
    ``probe()``, if given, is timed before each group and after the last (the host's speed next to each group)."""
    if reset:
        reset(2)
    fn()
    sync(dev)
    t0 = time.perf_counter()
    fn()
    sync(dev)
    one = max(time.perf_counter() - t0, 1e-7)
    n = int(min(n_max, max(n_min, target_s / one)))
    res, probes, order = [], [], []
    for _ in range(groups):
        if probe is not None:
            probes.append(probe())
        if reset:
            reset(n)
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync(dev)
        res.append((time.perf_counter() - t0) / n)
    if probe is not None:
        probes.append(probe())
    order = list(res)
    res.sort()
    out = {"s": res[len(res) // 2], "groups_s": res, "n": n, "first_s": one}
    if probe is not None:
        out["groups_in_order_s"] = order
        out["host_probe_s"] = probes  # before group 1, 2, 3, after group 3
    return out


def capture(fn, dev: torch.device):
    """Capture ``fn`` in a CUDA graph (after warm-up on a side stream); returns the replay function."""
    s = torch.cuda.Stream(dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(dev).wait_stream(s)
    sync(dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    sync(dev)
    return g


def env(dev: torch.device) -> dict:
    import transformers
    info = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "device": str(dev),
            "host": platform.node(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    if dev.type == "cuda":
        info["device_name"] = torch.cuda.get_device_name(dev)
        info["cuda"] = torch.version.cuda
        info["total_memory"] = torch.cuda.get_device_properties(dev).total_memory
    else:
        info["device_name"] = "cpu"
    return info


def free(dev: torch.device) -> None:
    import gc
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------- HF paths

def cache_tensors(cache):
    out = []
    for lay in cache.layers:
        for name in ("keys", "values"):
            t = getattr(lay, name, None)
            if isinstance(t, torch.Tensor):
                out.append(t)
    return out


def set_pos(cache, start: int) -> None:
    """Rewind every layer of a transformers 5.17 ``StaticCache`` to write at ``start`` next.

    Its layers keep their own write position (a device counter, ``cumulative_length``, advanced by every
    call; ``cache_position`` is not used to write), so repeated steps would run past the end. A sliding-window
    layer whose window is full (start >= its length) takes the rolling path (roll + copy every step), as in a
    long generation; otherwise it writes in place like a full layer.
    """
    for lay in cache.layers:
        if getattr(lay, "is_sliding", False):
            lay.cumulative_length_int = start
            if start >= lay.max_cache_len:
                continue
        if isinstance(lay.cumulative_length, torch.Tensor):
            lay.cumulative_length.fill_(start)
        else:
            lay.cumulative_length = start


def hf_decode(model, batch: int, ctx: int, dev: torch.device, graph: bool = True) -> dict:
    from transformers import StaticCache
    cache = StaticCache(config=model.config, max_cache_len=ctx)
    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(1, vocab, (batch, 1), device=dev)
    cp = torch.tensor([ctx - 1], device=dev)
    pos = torch.full((batch, 1), ctx - 1, device=dev)
    am = torch.ones(batch, ctx, dtype=torch.long, device=dev)
    out = {"batch": batch, "context": ctx}

    def step():
        return model(input_ids=ids, past_key_values=cache, cache_position=cp, position_ids=pos, attention_mask=am,
                     use_cache=True).logits[:, -1].argmax(-1)

    with torch.inference_mode():
        step()  # allocates the cache
        ts = cache_tensors(cache)
        for t in ts:
            t.normal_()  # never time on zeros
        out["cache_bytes"] = sum(t.numel() * t.element_size() for t in ts)
        out["cache_shapes"] = sorted({str(tuple(t.shape)) for t in ts})
        def reset(k):
            set_pos(cache, max(0, ctx - k - 2))

        out["eager"] = timed(step, dev, n_max=min(60, ctx - 4), reset=reset, probe=HOST_PROBE, groups=GROUPS)
        out["eager_s"] = out["eager"]["s"]
        if graph and dev.type == "cuda":
            try:
                reset(4)
                g = capture(step, dev)
                out["graph"] = timed(g.replay, dev, n_max=min(200, ctx - 4), reset=reset)
                out["graph_s"] = out["graph"]["s"]
                del g
            except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
                out["graph_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    del cache
    free(dev)
    return out


def hf_prefill(model, batch: int, prompt: int, dev: torch.device) -> dict:
    from transformers import StaticCache
    cache = StaticCache(config=model.config, max_cache_len=prompt)
    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(1, vocab, (batch, prompt), device=dev)
    cp = torch.arange(prompt, device=dev)
    am = torch.ones(batch, prompt, dtype=torch.long, device=dev)

    def step():
        set_pos(cache, 0)
        return model(input_ids=ids, past_key_values=cache, cache_position=cp, attention_mask=am, use_cache=True,
                     logits_to_keep=1).logits[:, -1].argmax(-1)

    with torch.inference_mode():
        r = timed(step, dev, target_s=0.3, n_min=2, n_max=20, probe=HOST_PROBE, groups=GROUPS)
    del cache
    free(dev)
    return {"batch": batch, "prompt": prompt, "prefill_s": r["s"], "timing": r}


def count_ops(model, dev: torch.device, ctx: int = 64) -> dict:
    """Operations one eager decode step dispatches (ATen, bottom of the dispatcher) and CUDA kernels it launches."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers import StaticCache

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    cache = StaticCache(config=model.config, max_cache_len=ctx)
    ids = torch.randint(1, 200, (1, 1), device=dev)
    cp = torch.tensor([ctx - 1], device=dev)
    pos = torch.full((1, 1), ctx - 1, device=dev)
    am = torch.ones(1, ctx, dtype=torch.long, device=dev)

    def step():
        return model(input_ids=ids, past_key_values=cache, cache_position=cp, position_ids=pos, attention_mask=am,
                     use_cache=True).logits[:, -1].argmax(-1)

    out = {}
    with torch.inference_mode():
        step()
        set_pos(cache, ctx - 4)
        Count.n = 0
        with Count():
            step()
        out["aten_ops"] = Count.n
        if dev.type == "cuda":
            try:
                from torch.profiler import ProfilerActivity, profile
                set_pos(cache, ctx - 4)
                sync(dev)
                with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                    step()
                    sync(dev)
                ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                out["cuda_kernels"] = sum(1 for e in ev if "memcpy" not in e.name.lower() and "memset" not in e.name.lower())
                out["cuda_memcpy_memset"] = len(ev) - out["cuda_kernels"]
            except Exception as exc:  # noqa: BLE001
                out["profiler_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return out


def tiny_probe(arch: str, layers: list[int], dev: torch.device) -> list[dict]:
    res = []
    for n in layers:
        try:
            m = serve_archs.build(arch, dev, tiny_layers=n)
            p = hf_decode(m, 1, 64, dev, graph=True)
            p.update(count_ops(m, dev))
            p["n_layers"] = n
            del m
        except Exception as exc:  # noqa: BLE001
            p = {"n_layers": n, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        free(dev)
        res.append(p)
        print(arch, "tiny", n, {k: v for k, v in p.items() if k in ("eager_s", "graph_s", "aten_ops", "cuda_kernels", "error")},
              flush=True)
    return res


def run_arch(arch: str, dev: torch.device, quick: bool, result: dict, save) -> None:
    rec = {"arch": arch, "source": serve_archs.ARCHS[arch]["source"], "tiny": [], "decode": [], "prefill": []}
    result["archs"][arch] = rec
    rec["tiny"] = tiny_probe(arch, [1, 2] if quick else [2, 8], dev)
    # capture the full model only if the tiny one captured (a failed capture can leave the device unusable)
    graph_ok = dev.type == "cuda" and all("graph_s" in t for t in rec["tiny"])
    rec["graph_ok_on_tiny"] = graph_ok
    save()
    model = serve_archs.build(arch, dev, tiny_layers=2 if quick else None)
    cfg = model.config
    rec["config"] = {k: v for k, v in cfg.to_dict().items() if isinstance(v, (int, float, str, bool, list, type(None)))
                     and k not in ("id2label", "label2id")}
    rec["experts_implementation"] = getattr(cfg, "_experts_implementation", None)
    rec["attn_implementation"] = cfg._attn_implementation
    rec["n_params"] = sum(p.numel() for p in model.parameters())
    rec["param_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    dpts = DECODE_POINTS_MHA if arch == "mha7b" else DECODE_POINTS
    ppts = PREFILL_POINTS
    if POINTS == "heldout":
        dpts, ppts = HELDOUT_DECODE, HELDOUT_PREFILL
    if POINTS == "misses":
        dpts, ppts = MISSES_DECODE[arch], MISSES_PREFILL[arch]
    if POINTS == "all":
        dpts, ppts = ALL_DECODE.get(arch, DECODE_POINTS + HELDOUT_DECODE), ALL_PREFILL
    if POINTS == "blind10":
        dpts, ppts = BLIND10_DECODE[arch], BLIND10_PREFILL[arch]
    rec["points"] = POINTS
    rec["groups"] = GROUPS
    if quick:
        dpts, ppts = [(1, 16), (2, 32)], [(1, 16), (2, 8)]
        if POINTS in ("heldout", "misses"):
            dpts, ppts = [(2, 24), (1, 40)], [(2, 12)]
        if POINTS == "all":
            dpts, ppts = [(1, 16), (2, 32), (2, 24), (1, 40)], [(1, 16), (2, 8), (2, 12)]
    try:
        rec["warmup_discarded"] = hf_decode(model, *dpts[0], dev, graph=graph_ok)
    except Exception as exc:  # noqa: BLE001
        rec["warmup_discarded"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    free(dev)
    save()
    for b, c in dpts:
        if left() < 15:
            rec["decode"].append({"batch": b, "context": c, "error": "skipped: out of time"})
            continue
        try:
            p = hf_decode(model, b, c, dev, graph=graph_ok)
        except Exception as exc:  # noqa: BLE001
            p = {"batch": b, "context": c, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            free(dev)
        if "graph_error" in p:  # one failed capture is enough: no more captures in this process
            graph_ok = False
            rec["graph_stopped_after"] = [b, c]
        rec["decode"].append(p)
        print(arch, "decode", b, c, {k: p.get(k) for k in ("eager_s", "graph_s", "error", "graph_error")}, flush=True)
        save()
    for b, pr in ppts:
        if left() < 10:
            rec["prefill"].append({"batch": b, "prompt": pr, "error": "skipped: out of time"})
            continue
        try:
            p = hf_prefill(model, b, pr, dev)
        except Exception as exc:  # noqa: BLE001
            p = {"batch": b, "prompt": pr, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            free(dev)
        rec["prefill"].append(p)
        print(arch, "prefill", b, pr, p.get("prefill_s", p.get("error")), flush=True)
        save()
    del model
    free(dev)


# ----------------------------------------------------------------------------------------------- probe

def machine_probe(dev: torch.device, quick: bool) -> dict:
    out = {"t_process_s": time.perf_counter() - T0}
    nbytes = 2**20 if quick else 4 * 2**30
    x = torch.randn(nbytes // 2, device=dev).to(torch.bfloat16)
    r = timed(lambda: x.sum(dtype=torch.float32), dev, n_min=5, n_max=20)
    out["read_bandwidth"] = {"bytes": nbytes, "bytes_per_s": nbytes / r["s"], "timing": r,
                             "method": "torch.sum (fp32 accumulate) over a bf16 tensor"}
    del x
    n = 256 if quick else 8192
    a = torch.randn(n, n, device=dev).to(torch.bfloat16)
    b = torch.randn(n, n, device=dev).to(torch.bfloat16)
    r = timed(lambda: a @ b, dev, n_min=5, n_max=50)
    out["matmul"] = {"n": n, "flops_per_s": 2 * n**3 / r["s"], "timing": r}
    del a, b
    free(dev)
    out["warmup_discarded"] = tiny_probe("llama8b", [2], dev)  # the first point of the process, kept apart
    out["tiny_llama"] = tiny_probe("llama8b", [2, 8] if quick else [2, 8, 32], dev)
    return out


def host_probe_series(dev: torch.device, quick: bool, result: dict, save, duration_s: float) -> None:
    """The floor probe over and over for ``duration_s``: the tiny 32-layer Llama's eager step (n = 5 back to back)
    and the same step from a CUDA graph, with the CPU counters (steal time, clock, load) at each repeat: how much the
    host's floor moves within one call while the other lanes work."""
    from transformers import StaticCache
    layers = 4 if quick else 32
    m = serve_archs.build("llama8b", dev, tiny_layers=layers)
    cache = StaticCache(config=m.config, max_cache_len=64)
    ids = torch.randint(1, 200, (1, 1), device=dev)
    cp = torch.tensor([63], device=dev)
    pos = torch.full((1, 1), 63, device=dev)
    am = torch.ones(1, 64, dtype=torch.long, device=dev)

    def step():
        set_pos(cache, 60)
        return m(input_ids=ids, past_key_values=cache, cache_position=cp, position_ids=pos, attention_mask=am,
                 use_cache=True).logits[:, -1].argmax(-1)

    rec = {"n_layers": layers, "model": "tiny llama8b class (width 64), batch 1, cache 64", "repeats": []}
    result["host_series"] = rec
    with torch.inference_mode():
        for _ in range(3):
            step()
        sync(dev)
        g = capture(step, dev) if dev.type == "cuda" else None
        t_end = time.perf_counter() + duration_s
        while time.perf_counter() < t_end and left() > 5:
            h0 = host_state()
            sync(dev)
            t0 = time.perf_counter()
            for _ in range(5):
                step()
            sync(dev)
            e = (time.perf_counter() - t0) / 5
            h1 = host_state()
            r = {"t_process_s": time.perf_counter() - T0, "eager_s": e, "host_before": h0, "host_after": h1}
            if g is not None:
                sync(dev)
                t0 = time.perf_counter()
                for _ in range(20):
                    g.replay()
                sync(dev)
                r["graph_s"] = (time.perf_counter() - t0) / 20
            rec["repeats"].append(r)
            es = sorted(x["eager_s"] for x in rec["repeats"])
            rec["eager_min_s"], rec["eager_median_s"], rec["eager_max_s"] = es[0], es[len(es) // 2], es[-1]
            if len(rec["repeats"]) % 5 == 0:
                save()
            time.sleep(0.5)
    es = sorted(x["eager_s"] for x in rec["repeats"])
    if es:
        print("host series", len(es), "repeats, eager ms min/median/max", round(es[0] * 1e3, 2),
              round(es[len(es) // 2] * 1e3, 2), round(es[-1] * 1e3, 2), flush=True)
    save()


# ----------------------------------------------------------------------------------------------- load test

def load_test(dev: torch.device, quick: bool, result: dict, save) -> None:
    """Continuous batching: a request is admitted into a free slot when it has arrived, its prompt prefilled
    alone (eager; this gives its first token), then every iteration runs one decode step (a CUDA graph for the
    smallest power-of-two bucket covering the highest busy slot) for every busy slot."""
    cfg = serve_engine.CFGS["tiny" if quick else "llama8b"]
    slots, max_len = (8, 64) if quick else (64, 1024)
    in_rng, out_rng = ((4, 16), (4, 12)) if quick else ((256, 768), (64, 192))
    rates = [2.0, 8.0] if quick else [4.0, 12.0, 24.0, 36.0]
    arrive_s, drain_s = (1.0, 2.0) if quick else (15.0, 10.0)
    max_prefill_per_iter = 4
    eng = serve_engine.Engine(cfg, dev)
    eng.alloc_cache(slots, max_len)
    buckets = [1 << i for i in range(int(math.log2(slots)) + 1)]
    pool = torch.cuda.graph_pool_handle() if dev.type == "cuda" else None
    t0 = time.perf_counter()
    with torch.inference_mode():
        graphs = {b: serve_engine.GraphStep(eng, b, pool) for b in buckets}
        # prefill kernels warm-up (every prompt length is new to the allocator)
        for p in (in_rng[0], in_rng[1]):
            eng.prefill(torch.randint(0, cfg.vocab, (1, p), device=dev), 0)
        sync(dev)
    rec = {"engine": "scripts/gpu/serve_engine.py (plain PyTorch, GQA-aware SDPA with a mask, static slots)",
           "model": "llama8b", "cfg": cfg.__dict__, "slots": slots, "max_len": max_len,
           "input_tokens_uniform": in_rng, "output_tokens_uniform": out_rng, "arrivals": "Poisson",
           "arrive_window_s": arrive_s, "drain_s": drain_s, "max_prefill_per_iteration": max_prefill_per_iter,
           "decode": "CUDA graph per power-of-two batch bucket; a step reads every busy bucket slot's whole cache (max_len)",
           "prefill": "eager, one request at a time, causal SDPA (enable_gqa), writes the slot's cache",
           "capture_s": time.perf_counter() - t0, "weight_bytes": eng.n_weight_bytes, "runs": []}
    result["load"] = rec
    save()
    for ri, rate in enumerate(rates):
        if left() < 20:
            rec["runs"].append({"rate": rate, "error": "skipped: out of time"})
            continue
        rnd = random.Random(1234 + ri)
        reqs, t = [], 0.0
        while True:
            t += rnd.expovariate(rate)
            if t > arrive_s:
                break
            reqs.append({"arrival": t, "in": rnd.randint(*in_rng), "out": rnd.randint(*out_rng)})
        waiting = list(range(len(reqs)))
        slot_req = [None] * slots
        pos = torch.zeros(slots, dtype=torch.long, device=dev)
        tok = torch.zeros(slots, dtype=torch.long, device=dev)
        iters = []
        start = time.perf_counter()
        stop_at = arrive_s + drain_s
        with torch.inference_mode():
            while True:
                now = time.perf_counter() - start
                if now > stop_at or left() < 10:
                    break
                busy = [i for i in range(slots) if slot_req[i] is not None]
                if not busy and (not waiting or reqs[waiting[0]]["arrival"] > now):
                    if not waiting:
                        break
                    time.sleep(max(0.0, min(reqs[waiting[0]]["arrival"] - now, 0.05)))
                    continue
                it = {"t": now, "prefill_tokens": 0, "n_prefill": 0}
                tp0 = time.perf_counter()
                while waiting and reqs[waiting[0]]["arrival"] <= now and it["n_prefill"] < max_prefill_per_iter:
                    free_slots = [i for i in range(slots) if slot_req[i] is None]
                    if not free_slots:
                        break
                    s, q = free_slots[0], waiting.pop(0)
                    r = reqs[q]
                    ids = torch.randint(0, cfg.vocab, (1, r["in"]), device=dev)
                    first = eng.prefill(ids, s)
                    tok[s] = first[0]
                    pos[s] = r["in"]
                    sync(dev)
                    r["first"] = time.perf_counter() - start
                    r["done"] = 1
                    r["slot"] = s
                    slot_req[s] = q
                    it["n_prefill"] += 1
                    it["prefill_tokens"] += r["in"]
                    if r["done"] >= r["out"]:
                        r["finish"] = r["first"]
                        slot_req[s] = None
                it["prefill_s"] = time.perf_counter() - tp0
                busy = [i for i in range(slots) if slot_req[i] is not None]
                if busy:
                    hi = max(busy) + 1
                    b = next(x for x in buckets if x >= hi)
                    td = time.perf_counter()
                    nxt = graphs[b](tok[:b], pos[:b])
                    tok[:b] = nxt
                    pos[:b] = (pos[:b] + 1).clamp_(max=max_len - 1)  # idle slots of the bucket stay in bounds
                    sync(dev)
                    tn = time.perf_counter()
                    it.update(decode_bucket=b, busy=len(busy), decode_s=tn - td,
                              max_pos=int(max(reqs[slot_req[i]]["in"] + reqs[slot_req[i]]["done"] for i in busy)))
                    for i in busy:
                        r = reqs[slot_req[i]]
                        r["done"] += 1
                        if r["done"] >= r["out"]:
                            r["finish"] = tn - start
                            slot_req[i] = None
                iters.append(it)
        done = [r for r in reqs if "finish" in r]
        ttft = sorted(r["first"] - r["arrival"] for r in reqs if "first" in r)
        tpot = sorted((r["finish"] - r["first"]) / (r["out"] - 1) for r in done if r["out"] > 1)
        elapsed = time.perf_counter() - start

        def pct(v, q):
            return v[min(len(v) - 1, int(q * len(v)))] if v else None

        run = {"rate": rate, "n_requests": len(reqs), "n_finished": len(done), "elapsed_s": elapsed,
               "output_tokens": sum(r["out"] for r in done),
               "ttft_p50_s": pct(ttft, 0.5), "ttft_p90_s": pct(ttft, 0.9), "ttft_p99_s": pct(ttft, 0.99),
               "tpot_p50_s": pct(tpot, 0.5), "tpot_p90_s": pct(tpot, 0.9), "tpot_p99_s": pct(tpot, 0.99),
               "requests": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in reqs],
               "iterations": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in it.items()} for it in iters]}
        rec["runs"].append(run)
        print("load", rate, {k: v for k, v in run.items() if k not in ("requests", "iterations")}, flush=True)
        save()
    del graphs, eng
    free(dev)


# ----------------------------------------------------------------------------------------------- main

def main() -> None:
    global DEADLINE
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["arch", "probe", "load", "hostseries"], required=True)
    ap.add_argument("--points", choices=["main", "heldout", "misses", "all", "blind10"], default="main")
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--adjacent-probe", action="store_true")
    ap.add_argument("--duration-s", type=float, default=60.0)
    ap.add_argument("--archs", default="")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=float("inf"))
    a = ap.parse_args()
    global POINTS, HOST_PROBE, GROUPS
    DEADLINE = a.deadline_s
    POINTS = a.points
    GROUPS = max(1, a.groups)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    torch.manual_seed(0)
    if a.adjacent_probe:
        HOST_PROBE = HostProbe(dev, 2 if a.quick else 8)
    result = {"schema": 1, "tool": "scripts/gpu/bench_serve.py", "mode": a.mode, "env": env(dev), "dtype": "bf16",
              "archs": {}}

    def save():
        result["wall_s"] = time.perf_counter() - T0
        tmp = a.out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(result, fh, indent=1)
        os.replace(tmp, a.out)

    result["host_start"] = host_state()
    if a.mode == "probe":
        result["probe"] = machine_probe(dev, a.quick)
    elif a.mode == "hostseries":
        host_probe_series(dev, a.quick, result, save, a.duration_s)
    elif a.mode == "arch":
        for arch in [x for x in a.archs.split(",") if x]:
            if left() < 20:
                result["archs"][arch] = {"error": "skipped: out of time"}
                continue
            try:
                run_arch(arch, dev, a.quick, result, save)
            except Exception as exc:  # noqa: BLE001
                result["archs"].setdefault(arch, {})["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
                free(dev)
            save()
    else:
        load_test(dev, a.quick, result, save)
    result["host_end"] = host_state()
    if HOST_PROBE is not None:
        result["host_probe"] = {"layers": HOST_PROBE.layers, "samples": HOST_PROBE.samples}
    save()
    print("done", a.mode, a.archs, round(time.perf_counter() - T0, 1), "s", flush=True)


if __name__ == "__main__":
    main()
