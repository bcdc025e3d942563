"""Count the bytes and ATen ops the eager Hugging Face training program (scripts/gpu/train_hf.py: fp32 weights,
torch.autocast bf16, labels=input_ids) moves outside matmuls and attention, per token and layer, forward and
backward (a 2-layer model less a 1-layer one), on the CPU: the count is of the program, not of a card.

Usage: T=128 python scripts/gpu/count_train_bytes.py "Qwen3,Llama-3.2" > counts.json  (model names of the
measured one-GPU runs, by prefix; needs torch and transformers). Bytes are per token, per layer, over the
hidden width; the "_to_copy" entries include the per-layer weight casts (6 bytes a weight, over T tokens).
"""
import json
import os
import sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..")); sys.path.insert(0, HERE)
import torch
from torch.utils._python_dispatch import TorchDispatchMode
import transformers
from mlcalc import hfruns
import dataclasses
from train_hf import hf_config

MATMUL = {"mm", "addmm", "bmm", "baddbmm", "linear", "_grouped_mm", "matmul", "addbmm"}
ATT = {n for n in dir(torch.ops.aten) if "scaled_dot_product" in n or "flash_attention" in n or "efficient_attention" in n}
NO_KERNEL = {"view", "_unsafe_view", "t", "transpose", "expand", "slice", "select", "unsqueeze", "squeeze",
             "as_strided", "permute", "detach", "alias", "split", "split_with_sizes", "unbind", "chunk", "narrow",
             "_reshape_alias", "reshape", "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty",
             "sym_size", "sym_stride", "sym_numel", "is_nonzero", "_local_scalar_dense", "item", "diagonal",
             "unflatten", "flatten", "size", "stride", "dim", "set_", "resolve_conj", "resolve_neg", "_to_copy_noop"}

def _bytes(x):
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_bytes(y) for y in x)
    return 0

class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__(); self.bytes = {}; self.ops = 0; self.kops = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        self.ops += 1
        if name not in MATMUL and name not in ATT and name not in NO_KERNEL:
            b = _bytes(list(args)) + _bytes(list((kwargs or {}).values())) + _bytes(out)
            self.bytes[name] = self.bytes.get(name, 0) + b
        return out

def run(m, layers, T, rc):
    kind, kw = hf_config(dataclasses.replace(m, n_layers=layers, vocab=256), T)
    cfg = transformers.AutoConfig.for_model(kind, **kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    if rc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    idx = torch.randint(0, 256, (1, T))
    res = {}
    for _ in range(2):
        cf, cb = Count(), Count()
        with cf:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                loss = model(input_ids=idx, labels=idx).loss
        with cb:
            loss.backward()
        model.zero_grad(set_to_none=True)
    return cf, cb

def main():
    T = int(os.environ.get("T", "128"))
    names = sys.argv[1].split(",")
    seen = {}
    for c in hfruns.cases("h100-2026-11-26-train-hf"):
        seen.setdefault(c.model.name, c.model)
    out = {}
    for nm in names:
        m = [v for k, v in seen.items() if k.startswith(nm)][0]
        rec = {}
        for rc in (False, True):
            f1, b1 = run(m, 1, T, rc); f2, b2 = run(m, 2, T, rc)
            fb = {k: (f2.bytes.get(k, 0) - f1.bytes.get(k, 0)) / T / m.hidden for k in set(f2.bytes) | set(f1.bytes)}
            bb = {k: (b2.bytes.get(k, 0) - b1.bytes.get(k, 0)) / T / m.hidden for k in set(b2.bytes) | set(b1.bytes)}
            rec["rc" if rc else "plain"] = {"fwd_bytes_per_tok_layer_over_h": sum(fb.values()),
                "bwd_bytes_per_tok_layer_over_h": sum(bb.values()), "fwd_ops_layer": f2.ops - f1.ops,
                "bwd_ops_layer": b2.ops - b1.ops,
                "fwd_by": {k: round(v, 1) for k, v in sorted(fb.items(), key=lambda kv: -kv[1]) if abs(v) > 0.05},
                "bwd_by": {k: round(v, 1) for k, v in sorted(bb.items(), key=lambda kv: -kv[1]) if abs(v) > 0.05}}
        out[m.name] = rec
        print(m.name, {k: (round(v["fwd_bytes_per_tok_layer_over_h"], 1), round(v["bwd_bytes_per_tok_layer_over_h"], 1), v["fwd_ops_layer"], v["bwd_ops_layer"]) for k, v in rec.items()}, file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))

main()
