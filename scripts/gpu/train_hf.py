"""Train Hugging Face ``transformers`` models built from config: peak memory and step time.

Ground truth for ``mlcalc.memory.training_peak`` and ``mlcalc.steptime``: each case builds a
model from an :class:`mlcalc.models.ModelConfig` (random weights, nothing downloaded) with
``attn_implementation="sdpa"``, trains it on random tokens with fp32 weights, bf16
``torch.autocast`` and fused AdamW, the way ``transformers.Trainer`` calls it
(``loss = model(input_ids, labels=input_ids).loss``: the output object, and with it the bf16 logits,
is dropped before ``backward``), with or without gradient checkpointing of every layer, and records
``torch.cuda.max_memory_allocated`` over the timed steps, the median step time, and one
instrumented step (memory and time after forward, backward, optimizer step).

    python scripts/gpu/train_hf.py --out result.json [--part 0/2] [--cpu-tiny]

``--part i/n`` runs every n-th case starting at i (to spread the cases over GPUs).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any

from mlcalc import models
from mlcalc.models import ModelConfig

_ACT = {"silu": "silu", "gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu"}


def hf_config(m: ModelConfig, seq_len: int) -> tuple[str, dict[str, Any]]:
    """The ``transformers`` model type and config keywords that build ``m`` (pure, no imports).

    Llama-, Qwen2-, Qwen3-, Mistral-, Mixtral-, Gemma3-text- and GPT-2-shaped models; sliding windows
    are switched off (every layer attends to the whole causal context).
    """
    common = dict(vocab_size=m.vocab, hidden_size=m.hidden, intermediate_size=m.ffn_hidden,
                  num_hidden_layers=m.n_layers, num_attention_heads=m.n_heads,
                  num_key_value_heads=m.n_kv_heads, tie_word_embeddings=m.tied_embeddings,
                  max_position_embeddings=max(seq_len, 2048), use_cache=False)
    if m.learned_positions:  # GPT-2 layout
        return "gpt2", dict(vocab_size=m.vocab, n_embd=m.hidden, n_layer=m.n_layers, n_head=m.n_heads,
                            n_positions=max(seq_len, m.learned_positions), n_inner=m.ffn_hidden,
                            activation_function="gelu_new", resid_pdrop=m.dropout, embd_pdrop=m.dropout,
                            attn_pdrop=m.dropout, use_cache=False, tie_word_embeddings=True)
    if m.norms_per_layer == 4:
        return "gemma3_text", dict(common, head_dim=m.head_dim, hidden_activation=_ACT[m.activation],
                                   query_pre_attn_scalar=m.head_dim, sliding_window=4096,
                                   layer_types=["full_attention"] * m.n_layers)
    if m.is_moe:
        return "mixtral", dict(common, head_dim=m.head_dim, intermediate_size=m.expert_ffn,
                               num_local_experts=m.n_experts, num_experts_per_tok=m.experts_per_token,
                               sliding_window=None, output_router_logits=False)
    if m.qkv_bias:
        return "qwen2", dict(common, sliding_window=None, use_sliding_window=False)
    if m.qk_norm:
        return "qwen3", dict(common, head_dim=m.head_dim, sliding_window=None, use_sliding_window=False)
    if m.vocab == 32000:
        return "mistral", dict(common, head_dim=m.head_dim, sliding_window=None)
    return "llama", dict(common, head_dim=m.head_dim, attention_bias=False, mlp_bias=False)


def _cut(name: str, n_layers: int) -> ModelConfig:
    """A preset's widths with fewer layers (so it trains on one GPU with fp32 AdamW states)."""
    p = models.preset(name)
    return p.replace(name=f"{name} widths, {n_layers} layers", n_layers=n_layers, published_params=0.0,
                     published_active_params=0.0, first_dense_layers=0)


def gpu_cases() -> list[dict[str, Any]]:
    """The sweep: 7 architectures, two sequence lengths, gradient checkpointing off and on."""
    grid: list[tuple[ModelConfig, int, int, bool]] = []
    l32, q25, q3 = models.preset("Llama-3.2 1B"), models.preset("Qwen2.5 0.5B"), models.preset("Qwen3 0.6B")
    g3, gpt2 = models.preset("Gemma-3 1B"), models.preset("GPT-2 355M")
    mis, mix = _cut("Mistral 7B", 4), _cut("Mixtral 8x7B", 2)
    for m, b, s in [(l32, 4, 1024), (l32, 2, 4096), (q25, 8, 1024), (q25, 4, 2048), (q3, 8, 1024),
                    (mis, 4, 2048), (g3, 4, 1024), (mix, 2, 1024), (gpt2, 8, 1024)]:
        grid += [(m, b, s, False), (m, b, s, True)]
    grid += [(mis, 2, 1024, False), (g3, 2, 2048, False), (q3, 4, 2048, True)]
    return [{"model": models.as_dict(m), "batch": b, "seq_len": s, "recompute": r} for m, b, s, r in grid]


def blind10_cases() -> list[dict[str, Any]]:
    """The blind10 check (session 35): shapes, batches and lengths the sweep never ran, predicted before the call
    (``scripts/gpu/blind10_predictions.json``): a 3B model whole, cut Qwen2.5 7B / Qwen3 8B / Gemma-3 4B / Mistral 7B
    widths, GPT-2 774M, and the sweep's 1B / 0.5B at new batch x length. Sized for fp32 AdamW states on an 80 GB card."""
    l32, l3b, q25 = models.preset("Llama-3.2 1B"), models.preset("Llama-3.2 3B"), models.preset("Qwen2.5 0.5B")
    q7, q8, g4, mis = _cut("Qwen2.5 7B", 6), _cut("Qwen3 8B", 4), _cut("Gemma-3 4B", 8), _cut("Mistral 7B", 4)
    gpt = models.preset("GPT-2 774M")
    grid = [(l3b, 1, 2048, True), (q7, 2, 2048, True), (g4, 2, 2048, False), (q8, 1, 4096, False),
            (l32, 8, 512, False), (l32, 1, 16384, True), (q25, 16, 512, True), (gpt, 4, 1024, False),
            (mis, 2, 4096, True), (g4, 1, 4096, True)]
    return [{"model": models.as_dict(m), "batch": b, "seq_len": s, "recompute": r} for m, b, s, r in grid]


def floor_cases(seqs: tuple[int, ...] = (64,)) -> list[dict[str, Any]]:
    """Every model of the sweep at 1 x 64 tokens, checkpointing off and on: the host-bound floor. ``seqs``: the same
    at each of these sequence lengths (host8: the host's work per op at training-like token counts)."""
    seen, out = set(), []
    for c in gpu_cases():
        key = (c["model"]["name"], c["recompute"])
        if key not in seen:
            seen.add(key)
            out += [{**c, "batch": 1, "seq_len": s} for s in seqs]
    return out


def cpu_cases(source: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Tiny versions of every architecture, for a test on a CPU (``source``: of these cases, each one)."""
    out = []
    for c in (gpu_cases()[::2][:9] if source is None else source):
        m = models.from_dict(c["model"])
        kv = min(m.n_kv_heads, 2) if m.n_kv_heads < m.n_heads else 4
        tiny = m.replace(n_layers=2, hidden=64, n_heads=4, n_kv_heads=kv, head_dim=16, ffn_hidden=128, vocab=256,
                         learned_positions=64 if m.learned_positions else 0, moe_ffn_hidden=0)
        out.append({"model": models.as_dict(tiny), "batch": 2, "seq_len": 32, "recompute": c["recompute"]})
    out[0]["recompute"] = True
    return out


def _environment(torch: Any, transformers: Any, dev: Any) -> dict[str, Any]:
    env = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "python": platform.python_version(),
           "torch": torch.__version__, "transformers": transformers.__version__, "cuda": torch.version.cuda,
           "device_type": dev.type}
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        env.update(device_name=props.name, total_memory_bytes=props.total_memory,
                   multiprocessors=props.multi_processor_count)
        try:
            env["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", f"--id={dev.index or 0}",
                 "--query-gpu=name,driver_version,pci.bus_id,clocks.max.sm,power.limit,memory.total",
                 "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        except OSError:
            pass
    return env


def place_threads(spec: str) -> dict[str, Any]:
    """``BUSY:LIGHT`` (vCPU numbers, LIGHT comma-separated): this process's main thread and PyTorch's autograd threads
    on vCPU BUSY, every other thread on the LIGHT vCPUs, as ``train_dist.py``'s "meter" condition places a rank's
    threads (host7: the calibration program measured in the training runs' placement). {} where unsupported."""
    import threading

    if not spec or not hasattr(os, "sched_setaffinity"):
        return {}
    busy_s, light_s = spec.split(":", 1)
    allowed = os.sched_getaffinity(0)
    busy = {int(busy_s)} & allowed or allowed
    light = {int(x) for x in light_s.split(",") if x.strip()} & allowed or allowed
    main = threading.get_native_id()
    out: dict[str, list[int]] = {}
    for t in os.listdir("/proc/self/task"):
        tid = int(t)
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        where = busy if tid == main or name.lower().startswith("pt_autograd") else light
        try:
            os.sched_setaffinity(tid, where)
        except OSError:
            continue
        out.setdefault("busy" if where is busy else "light", []).append(tid)
    return {"busy_cpus": sorted(busy), "light_cpus": sorted(light), "threads": {k: len(v) for k, v in out.items()}}


def run_case(torch: Any, transformers: Any, dev: Any, case: dict[str, Any], warmup: int, steps: int) -> dict[str, Any]:
    m = models.from_dict(case["model"])
    b, s, rc = int(case["batch"]), int(case["seq_len"]), bool(case["recompute"])
    kind, kw = hf_config(m, s)
    cfg = transformers.AutoConfig.for_model(kind, **kw)
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    with torch.device(dev):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    if rc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    row: dict[str, Any] = {**case, "hf_model_type": kind, "hf_class": type(model).__name__,
                           "n_params": sum(p.numel() for p in model.parameters()),
                           "n_params_mlcalc": m.n_params()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.1, fused=cuda)
    gen = torch.Generator(device=dev).manual_seed(1)
    idx = torch.randint(0, m.vocab, (b, s), device=dev, generator=gen)

    def step() -> Any:
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=idx, labels=idx).loss  # as transformers.Trainer: outputs dropped
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(warmup):
        step()
    if case.get("place"):  # after the warm-up: the autograd threads exist
        row["placed"] = place_threads(str(case["place"]))
    if cuda:
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        row["static_bytes"] = torch.cuda.memory_allocated(dev)
    times = []
    row["timed_epoch_s"] = [round(time.time(), 4)]  # first timed step's start (the end: after the phases below)
    for _ in range(steps):
        if cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            loss = step()
            e1.record()
            torch.cuda.synchronize(dev)
            times.append(e0.elapsed_time(e1) / 1e3)
        else:
            t0 = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t0)
    row["step_s"] = statistics.median(times)
    row["step_s_all"] = times
    row["loss"] = float(loss.detach())
    if cuda:
        row["peak_bytes"] = torch.cuda.max_memory_allocated(dev)
        row["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(dev)
        # One instrumented step: memory at each phase boundary and the peak within each phase.
        ph: dict[str, Any] = {}
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        e0, t0 = time.time(), time.perf_counter()
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=idx, labels=idx).loss
        torch.cuda.synchronize(dev)
        ph.update(forward_s=time.perf_counter() - t0, forward_epoch_s=[round(e0, 4), round(time.time(), 4)],
                  forward_alloc_bytes=torch.cuda.memory_allocated(dev),
                  forward_peak_bytes=torch.cuda.max_memory_allocated(dev))
        torch.cuda.reset_peak_memory_stats(dev)
        e0, t0 = time.time(), time.perf_counter()
        loss.backward()
        torch.cuda.synchronize(dev)
        ph.update(backward_s=time.perf_counter() - t0, backward_epoch_s=[round(e0, 4), round(time.time(), 4)],
                  backward_alloc_bytes=torch.cuda.memory_allocated(dev),
                  backward_peak_bytes=torch.cuda.max_memory_allocated(dev))
        torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize(dev)
        ph.update(optimizer_s=time.perf_counter() - t0, optimizer_peak_bytes=torch.cuda.max_memory_allocated(dev))
        row["phases"] = ph
        reps = []  # --repeat: the instrumented forward and backward again, each with its time window (dist6)
        for _ in range(int(case.get("repeat", 0))):
            e0, t0 = time.time(), time.perf_counter()
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
                loss = model(input_ids=idx, labels=idx).loss
            ti0 = time.perf_counter()  # host8: the forward issued (Python returned), before the device finished
            torch.cuda.synchronize(dev)
            e1, t1 = time.time(), time.perf_counter()
            loss.backward()
            ti1 = time.perf_counter()  # the backward issued (autograd returned)
            torch.cuda.synchronize(dev)
            e2, t2 = time.time(), time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize(dev)
            reps.append({"forward_s": t1 - t0, "backward_s": t2 - t1, "forward_issue_s": ti0 - t0,
                         "backward_issue_s": ti1 - t1, "forward_epoch_s": [round(e0, 4), round(e1, 4)],
                         "backward_epoch_s": [round(e1, 4), round(e2, 4)]})
        if reps:
            row["phase_repeats"] = reps
    row["timed_epoch_s"].append(round(time.time(), 4))
    del model, opt
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--part", default="0/1", help="i/n: run cases i, i+n, i+2n, ...")
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny configs on the CPU (a test)")
    ap.add_argument("--floor", action="store_true", help="every model at 1 x 64 tokens (host-bound floor)")
    ap.add_argument("--floor-seq", default="64", help="with --floor: comma-separated sequence lengths (host8)")
    ap.add_argument("--repeat", type=int, default=0, help="time the instrumented forward/backward this often more")
    ap.add_argument("--models", default="", help="comma-separated model names: only these (default: all)")
    ap.add_argument("--place", default="", help="BUSY:LIGHT,...: the main and autograd threads on vCPU BUSY, the "
                    "other threads on the LIGHT vCPUs, after each case's warm-up (host7)")
    ap.add_argument("--sweep", default="main", choices=("main", "blind10"), help="which list of GPU cases")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args(argv)
    import torch
    import transformers

    i, n = (int(x) for x in args.part.split("/"))
    dev = torch.device("cpu") if args.cpu_tiny else torch.device("cuda", torch.cuda.current_device())
    cases = (cpu_cases(blind10_cases() if args.sweep == "blind10" else None) if args.cpu_tiny else floor_cases(tuple(int(x) for x in args.floor_seq.split(","))) if args.floor
             else blind10_cases() if args.sweep == "blind10" else gpu_cases())[i::n]
    if args.models:
        cases = [c for c in cases if c["model"]["name"] in args.models.split(",")]
    cases = [{**c, "repeat": args.repeat} if args.repeat else c for c in cases]
    cases = [{**c, "place": args.place} if args.place else c for c in cases]
    result: dict[str, Any] = {
        "benchmark": "train_hf", "environment": _environment(torch, transformers, dev),
        "parameters": {"precision": "fp32 weights, gradients and AdamW states; torch.autocast bf16",
                       "optimizer": "torch.optim.AdamW(fused=True on CUDA), lr 1e-5, weight decay 0.1",
                       "attention": "attn_implementation='sdpa', causal, no padding mask",
                       "loss": "labels=input_ids (Hugging Face ForCausalLMLoss); outputs dropped before backward",
                       "recompute": "model.gradient_checkpointing_enable(use_reentrant=False)",
                       "zero_grad": "set_to_none=True", "warmup": args.warmup, "steps": args.steps,
                       "step_s": "median of CUDA-event times of whole steps after warm-up",
                       "peak_bytes": "torch.cuda.max_memory_allocated over the timed steps"},
        "cases": []}
    for case in cases:
        t0 = time.time()
        try:
            row = run_case(torch, transformers, dev, case, args.warmup, args.steps)
        except torch.OutOfMemoryError as err:
            row = {**case, "oom": True, "error": str(err).splitlines()[0]}
        except Exception as err:  # record and go on: one broken case must not lose the others
            row = {**case, "error": f"{type(err).__name__}: {err}"[:500]}
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        row["wall_s"] = time.time() - t0
        result["cases"].append(row)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        m = case["model"]
        print(f"{m['name']:36s} b={case['batch']} s={case['seq_len']} rc={int(case['recompute'])} "
              + (row.get("error", "")[:200] if "step_s" not in row else
                 f"{row['step_s'] * 1e3:8.1f} ms {row.get('peak_bytes', 0) / 2**30:6.2f} GiB ({row['wall_s']:.0f} s)"),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
