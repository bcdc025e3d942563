"""What a Llama-family query/key norm (Qwen3's) adds to the bytes the element-wise kernels of the eager Hugging Face
training program move, forward and backward, per token and layer: Qwen3 0.6B against the same widths without its
q/k norms (transformers' Llama classes), counted on the CPU with scripts/gpu/count_train_bytes.py's dispatch mode
(fp32 weights, bf16 autocast; a 2-layer model less a 1-layer one; matmuls, attention and views not counted; the
weight casts taken out). Issue 24: the engine's backward charges every element-wise kind twice its forward bytes.

    T=128 python scripts/gpu/count_qk_norm_bytes.py > counts.json   (needs torch and transformers)
"""
import dataclasses
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import transformers  # noqa: E402

from mlcalc import models  # noqa: E402
from train_hf import hf_config  # noqa: E402

sys.argv = sys.argv[:1] + ["-"]  # count_train_bytes runs its main() on import: give it no model
_src = open(os.path.join(HERE, "count_train_bytes.py")).read().replace("\nmain()\n", "\n")
_ns: dict = {"__file__": os.path.join(HERE, "count_train_bytes.py"), "__name__": "count_train_bytes"}
exec(compile(_src, "count_train_bytes.py", "exec"), _ns)
Count = _ns["Count"]


def counts(m, layers, T):
    kind, kw = hf_config(dataclasses.replace(m, n_layers=layers, vocab=256), T)
    cfg = transformers.AutoConfig.for_model(kind, **kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    idx = torch.randint(0, 256, (1, T))
    for _ in range(2):
        cf, cb = Count(), Count()
        with cf:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                loss = model(input_ids=idx, labels=idx).loss
        with cb:
            loss.backward()
        model.zero_grad(set_to_none=True)
    return kind, cf, cb


def per_layer(m, T):
    kind, f1, b1 = counts(m, 1, T)
    _, f2, b2 = counts(m, 2, T)
    out = {"hf_model_type": kind}
    for name, a, b in (("forward", f1, f2), ("backward", b1, b2)):
        by = {k: (b.bytes.get(k, 0) - a.bytes.get(k, 0)) / T for k in set(a.bytes) | set(b.bytes)}
        out[name] = {k: round(v, 1) for k, v in sorted(by.items(), key=lambda kv: -kv[1]) if abs(v) > 0.05}
        out[f"{name}_ops"] = b.ops - a.ops
    return out


def main():
    T = int(os.environ.get("T", "128"))
    q3 = models.preset("Qwen3 0.6B")
    rows = {"Qwen3 0.6B": q3, "Qwen3 0.6B (no q/k norm)": q3.replace(name="Qwen3 0.6B (no q/k norm)", qk_norm=False,
                                                                      published_params=0.0)}
    out = {"T": T, "torch": torch.__version__, "transformers": transformers.__version__,
           "unit": "bytes per token and layer (not over the hidden width); '_to_copy' holds the weight casts "
                   "(6 bytes a weight over T tokens) too", "models": {}}
    for k, m in rows.items():
        out["models"][k] = per_layer(m, T)
        print(k, out["models"][k]["forward_ops"], out["models"][k]["backward_ops"], file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


main()
