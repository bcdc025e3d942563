"""What activation checkpointing (``gradient_checkpointing_enable(use_reentrant=False)``, as
``scripts/gpu/train_hf.py`` trains) adds to the host's work per layer, counted on the CPU (no GPU needed): for each
floor model of the sweep (``train_hf.floor_cases``, tiny widths, the same layer structure) at 2 and 4 layers,
one training step's ATen operations in the forward and in the backward pass (a TorchDispatchMode), the tensors
autograd saves in the forward (a ``saved_tensors_hooks`` pack count: each one is a pack and an unpack hook of
``torch.utils.checkpoint`` when checkpointed), with and without checkpointing; the difference over the two layer
counts is per layer. Optionally (``--time``) the CPU seconds of the forward and backward pass (min over repeats).

    python scripts/gpu/count_checkpoint.py OUT.json [--time]
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import train_hf

from mlcalc import models


def _tiny(m: models.ModelConfig, layers: int) -> models.ModelConfig:
    kv = min(m.n_kv_heads, 2) if m.n_kv_heads < m.n_heads else 4
    return m.replace(n_layers=layers, hidden=64, n_heads=4, n_kv_heads=kv, head_dim=16, ffn_hidden=128, vocab=256,
                     learned_positions=64 if m.learned_positions else 0, moe_ffn_hidden=0,
                     n_experts=min(m.n_experts, 8) if m.is_moe else m.n_experts)


def _build(m: models.ModelConfig, rc: bool):
    import transformers
    kind, kw = train_hf.hf_config(m, 64)
    cfg = transformers.AutoConfig.for_model(kind, **kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    if rc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def count(m: models.ModelConfig, rc: bool, seq: int = 8, reps: int = 0) -> dict:
    from torch.utils._python_dispatch import TorchDispatchMode

    model = _build(m, rc)
    idx = torch.randint(0, 256, (1, seq), generator=torch.Generator().manual_seed(1))
    hist = {"forward": collections.Counter(), "backward": collections.Counter()}
    phase = ["forward"]
    packs = [0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            hist[phase[0]][str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    def pack(t):
        packs[0] += 1
        return t

    def fwd():
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            return model(input_ids=idx, labels=idx).loss

    fwd().backward()  # warm-up
    model.zero_grad(set_to_none=True)
    with Count():
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = fwd()
        phase[0] = "backward"
        loss.backward()
    model.zero_grad(set_to_none=True)
    out = {"forward_ops": sum(hist["forward"].values()), "backward_ops": sum(hist["backward"].values()),
           "saved_tensors": packs[0],
           "backward_hist": dict(hist["backward"]), "forward_hist": dict(hist["forward"])}
    if reps:
        tf, tb = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            loss = fwd()
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            model.zero_grad(set_to_none=True)
            tf.append(t1 - t0)
            tb.append(t2 - t1)
        out["forward_s"], out["backward_s"] = min(tf), min(tb)
    return out


def main() -> None:
    import transformers
    reps = 200 if "--time" in sys.argv else 0
    res = {"tool": "scripts/gpu/count_checkpoint.py", "torch": torch.__version__,
           "transformers": transformers.__version__, "device": "cpu", "models": {}}
    seen = []
    for c in train_hf.floor_cases():
        m = models.from_dict(c["model"])
        if m.name in seen:
            continue
        seen.append(m.name)
        row = {}
        for rc in (False, True):
            a, b = count(_tiny(m, 2), rc, reps=reps), count(_tiny(m, 4), rc, reps=reps)
            key = "checkpointed" if rc else "plain"
            row[key] = {k: (b[k] - a[k]) / 2 for k in ("forward_ops", "backward_ops", "saved_tensors")
                        + (("forward_s", "backward_s") if reps else ())}
            row[key]["backward_hist_per_layer"] = {k: (b["backward_hist"].get(k, 0) - a["backward_hist"].get(k, 0)) / 2
                                                   for k in set(b["backward_hist"]) | set(a["backward_hist"])
                                                   if b["backward_hist"].get(k, 0) != a["backward_hist"].get(k, 0)}
        res["models"][m.name] = row
        p, k = row["plain"], row["checkpointed"]
        print(f"{m.name:30s} plain fwd {p['forward_ops']:6.1f} bwd {p['backward_ops']:6.1f} saved {p['saved_tensors']:5.1f}"
              f" | rc fwd {k['forward_ops']:6.1f} bwd {k['backward_ops']:6.1f} saved {k['saved_tensors']:5.1f}"
              + (f" | t plain {p['forward_s']*1e6:6.0f} {p['backward_s']*1e6:6.0f} rc {k['forward_s']*1e6:6.0f}"
                 f" {k['backward_s']*1e6:6.0f} us" if reps else ""), flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
