"""Where the device time of one training step of ``train_hf.py``'s program goes, by ATen operation and input shape:
the forward, the backward and the optimizer step each under its own ``torch.profiler`` (CUDA activity, shapes
recorded), after a warm-up and beside the program's own timed steps (issue 24: why Qwen3 0.6B's one-GPU steps run
13-19 % longer than the step-time engine says while Qwen2.5 0.5B and Llama-3.2 1B hold).

The models: Qwen3 0.6B, the same widths without its query/key norms (transformers' Llama classes: head_dim 128,
16 query and 8 KV heads, tied embeddings), Qwen2.5 0.5B and Llama-3.2 1B, at 8 x 1024 tokens (Qwen3 0.6B also
checkpointed), as ``train_hf.py`` trains them (fp32 weights, bf16 autocast, SDPA, fused AdamW).

    python scripts/gpu/profile_hf_step.py --out profile.json [--cpu-tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mlcalc import models  # noqa: E402


def cases(tiny: bool) -> list[dict[str, Any]]:
    q3 = models.preset("Qwen3 0.6B")
    rows = [(q3, False), (q3.replace(name="Qwen3 0.6B (no q/k norm)", qk_norm=False, published_params=0.0), False),
            (models.preset("Qwen2.5 0.5B"), False), (models.preset("Llama-3.2 1B"), False), (q3, True)]
    b, s = (2, 32) if tiny else (8, 1024)
    out = []
    for m, rc in rows:
        if tiny:
            m = m.replace(n_layers=2, hidden=64, ffn_hidden=128, vocab=256, published_params=0.0,
                          n_heads=4, n_kv_heads=2, head_dim=32 if m.head_dim == 128 else 16)
        out.append({"model": models.as_dict(m), "batch": b, "seq_len": s, "recompute": rc})
    return out


def table(prof: Any, top: int) -> list[dict[str, Any]]:
    rows = []
    for e in prof.key_averages(group_by_input_shape=True):
        dev = float(getattr(e, "self_device_time_total", 0.0) or 0.0)
        if dev <= 0:
            continue
        rows.append({"op": e.key, "shapes": str(e.input_shapes)[:200], "count": int(e.count),
                     "self_device_us": round(dev, 1)})
    rows.sort(key=lambda r: -r["self_device_us"])
    return rows[:top]


def run(torch: Any, transformers: Any, dev: Any, c: dict[str, Any], top: int) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    from train_hf import hf_config

    m = models.from_dict(c["model"])
    kind, kw = hf_config(m, c["seq_len"])
    cfg = transformers.AutoConfig.for_model(kind, **kw)
    torch.manual_seed(0)
    with torch.device(dev):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    if c["recompute"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    cuda = dev.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.1, fused=cuda)
    idx = torch.randint(0, m.vocab, (c["batch"], c["seq_len"]), device=dev,
                        generator=torch.Generator(device=dev).manual_seed(1))

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(dev)

    def fwd() -> Any:
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            return model(input_ids=idx, labels=idx).loss

    def step() -> None:
        loss = fwd()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    sync()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    out: dict[str, Any] = {"case": c, "hf_model_type": kind, "step_s": statistics.median(times), "step_s_all": times,
                           "phases": {}}
    for rep in range(2):
        ph: dict[str, Any] = {}
        with profile(activities=acts, record_shapes=True) as pf:
            t0 = time.perf_counter()
            loss = fwd()
            sync()
            ph["forward_s"] = time.perf_counter() - t0
        with profile(activities=acts, record_shapes=True) as pb:
            t0 = time.perf_counter()
            loss.backward()
            sync()
            ph["backward_s"] = time.perf_counter() - t0
        with profile(activities=acts, record_shapes=True) as po:
            t0 = time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            ph["optimizer_s"] = time.perf_counter() - t0
        if rep == 1:  # the second profiled step (the first warms the profiler)
            for name, p in (("forward", pf), ("backward", pb), ("optimizer", po)):
                rows = table(p, 100000)
                ph[f"{name}_device_us"] = round(sum(r["self_device_us"] for r in rows), 1)
                ph[name] = rows[:top]
            out["phases"] = ph
    del model, opt
    if cuda:
        torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu-tiny", action="store_true")
    ap.add_argument("--top", type=int, default=120)
    args = ap.parse_args(argv)
    import torch
    import transformers

    dev = torch.device("cpu" if args.cpu_tiny else "cuda")
    res: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__,
                           "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", "cases": []}
    for c in cases(args.cpu_tiny):
        t0 = time.time()
        try:
            r = run(torch, transformers, dev, c, args.top)
        except Exception as e:  # keep the other cases
            r = {"case": c, "error": repr(e)[:500]}
        r["wall_s"] = round(time.time() - t0, 1)
        res["cases"].append(r)
        print(c["model"]["name"], c["batch"], c["seq_len"], c["recompute"], r.get("step_s"), r.get("error", ""),
              {k: v for k, v in r.get("phases", {}).items() if k.endswith("_s") or k.endswith("_us")}, flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
