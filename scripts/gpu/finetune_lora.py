"""LoRA fine-tuning of random-weight Llama-shaped models with ``peft``: peak memory and step time.

Ground truth for ``mlcalc.finetune``: each case builds a model from an :class:`mlcalc.models.ModelConfig`
preset (random weights, nothing downloaded) in bf16 with ``attn_implementation="sdpa"``, wraps it with
``peft.get_peft_model`` (``LoraConfig(r, lora_alpha=2r, target_modules, lora_dropout=0)``, peft's defaults
otherwise: the adapters are kept in fp32), optionally with gradient checkpointing of every layer, trains the
adapters with fused AdamW on random tokens the way ``transformers.Trainer`` calls the model (the output
object dropped before ``backward``), and records ``torch.cuda.max_memory_allocated`` over the timed steps,
the memory held between steps, the median step time and the parameter counts.

    python scripts/gpu/finetune_lora.py --out result.json [--cpu-tiny] [--budget-s 170]

Each case is run in a try block (an error is recorded, the next case runs); the results file is rewritten
after every case; cases stop once ``--budget-s`` seconds have passed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train_hf import hf_config  # noqa: E402  (the same model builder as the full-training runs)

from mlcalc import models  # noqa: E402

ATTN = ["q_proj", "v_proj"]
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def gpu_cases() -> list[dict[str, Any]]:
    """Llama-3.1 8B and Llama-3.2 1B shapes: rank, target modules, checkpointing."""
    big, small = models.as_dict(models.preset("Llama-3.1 8B")), models.as_dict(models.preset("Llama-3.2 1B"))
    out = []
    for r, targets, rc in [(16, ATTN, False), (16, ALL, False), (16, ALL, True), (64, ALL, True), (16, ATTN, True)]:
        out.append({"model": big, "batch": 1, "seq_len": 2048, "rank": r, "targets": targets, "recompute": rc})
    for r, targets, rc in [(16, ALL, False), (16, ALL, True), (16, ATTN, False)]:
        out.append({"model": small, "batch": 4, "seq_len": 1024, "rank": r, "targets": targets, "recompute": rc})
    return out


def cpu_cases() -> list[dict[str, Any]]:
    """A tiny Llama for a test on a CPU."""
    m = models.preset("Llama-3.2 1B").replace(n_layers=2, hidden=64, n_heads=4, n_kv_heads=2, head_dim=16,
                                               ffn_hidden=128, vocab=256)
    d = models.as_dict(m)
    return [{"model": d, "batch": 2, "seq_len": 32, "rank": 4, "targets": ALL, "recompute": False},
            {"model": d, "batch": 2, "seq_len": 32, "rank": 8, "targets": ATTN, "recompute": True}]


def run_case(torch: Any, transformers: Any, peft: Any, dev: Any, case: dict[str, Any], warmup: int,
             steps: int) -> dict[str, Any]:
    m = models.from_dict(case["model"])
    b, s, rc = int(case["batch"]), int(case["seq_len"]), bool(case["recompute"])
    kind, kw = hf_config(m, s)
    cfg = transformers.AutoConfig.for_model(kind, **kw)
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.device(dev):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
    build_s = time.perf_counter() - t0
    if rc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    lcfg = peft.LoraConfig(r=int(case["rank"]), lora_alpha=2 * int(case["rank"]), lora_dropout=0.0,
                           target_modules=list(case["targets"]), task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lcfg)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    row: dict[str, Any] = {**case, "hf_model_type": kind, "build_s": build_s,
                           "n_params": sum(p.numel() for p in model.parameters()),
                           "n_trainable": sum(p.numel() for p in trainable),
                           "trainable_dtypes": sorted({str(p.dtype) for p in trainable})}
    opt = torch.optim.AdamW(trainable, lr=1e-4, weight_decay=0.0, fused=cuda)
    gen = torch.Generator(device=dev).manual_seed(1)
    idx = torch.randint(0, m.vocab, (b, s), device=dev, generator=gen)

    def step() -> Any:
        loss = model(input_ids=idx, labels=idx).loss  # as transformers.Trainer: outputs dropped
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        row["static_bytes"] = torch.cuda.memory_allocated(dev)
    times = []
    for _ in range(steps):
        if cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            loss = step()
            e1.record()
            torch.cuda.synchronize(dev)
            times.append(e0.elapsed_time(e1) / 1e3)
        else:
            t1 = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t1)
    row["step_s"] = statistics.median(times)
    row["step_s_all"] = times
    row["loss"] = float(loss.detach())
    if cuda:
        row["peak_bytes"] = torch.cuda.max_memory_allocated(dev)
        row["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(dev)
    del model, opt, trainable, idx
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny models on the CPU (a test of the script)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=170.0, help="start no case after this many seconds")
    a = ap.parse_args(argv)
    start = time.perf_counter()
    import peft
    import torch
    import transformers

    dev = torch.device("cpu" if a.cpu_tiny or not torch.cuda.is_available() else "cuda:0")
    env: dict[str, Any] = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "python": platform.python_version(), "torch": torch.__version__,
                           "transformers": transformers.__version__, "peft": peft.__version__,
                           "cuda": torch.version.cuda, "device_type": dev.type}
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        env.update(device_name=props.name, total_memory_bytes=props.total_memory)
    cases = cpu_cases() if dev.type == "cpu" else gpu_cases()
    out: dict[str, Any] = {"script": "scripts/gpu/finetune_lora.py", "environment": env, "cases": []}
    for i, case in enumerate(cases):
        if time.perf_counter() - start > a.budget_s:
            out["cases"].append({**case, "skipped": "time budget spent"})
            continue
        t0 = time.perf_counter()
        try:
            row = run_case(torch, transformers, peft, dev, case, a.warmup, a.steps)
        except Exception as exc:  # noqa: BLE001 - record it and go on with the next case
            row = {**case, "error": f"{type(exc).__name__}: {exc}"[:2000]}
            gc.collect()
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        row["case_wall_s"] = time.perf_counter() - t0
        out["cases"].append(row)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
        name = case["model"]["name"]
        print(f"[{i + 1}/{len(cases)}] {name} r={case['rank']} {len(case['targets'])} targets rc={case['recompute']}: "
              f"peak {row.get('peak_bytes', 0) / 2**30:.2f} GiB, step {row.get('step_s', 0) * 1e3:.1f} ms "
              f"{row.get('error', '')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
