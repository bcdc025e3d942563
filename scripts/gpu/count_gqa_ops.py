"""Does a grouped-query attention layer cost the host more than a multi-head one in the multi-GPU program? (meter12's
one metered miss: TP 4 Llama-2 7B, 32 KV heads, took 0.84 of the host work per layer the engine charges, where the
grouped-query shapes took 1.00-1.15.) On one GPU, without parallelism, the program's own model classes
(``train_dist.build_model_classes``: ``F.scaled_dot_product_attention(..., enable_gqa=True)``), fp32 parameters under
bf16 autocast as its tensor-parallel cases, at 2 and 6 layers of the real widths (sequence 64: the device idles):
  * every aten operation of one forward and one backward, counted with a TorchDispatchMode (by name);
  * the host time of forward and backward (Python returned, before synchronizing), REPS passes each, the main thread
    pinned to one vCPU; per layer = the difference over the layer counts.

    python scripts/gpu/count_gqa_ops.py OUT.json [CPU]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from mlcalc import models  # noqa: E402

#: (label, preset, KV heads or None for the preset's own): the miss and the shapes beside it on meter12, and each
#: model's other attention kind at the same widths.
SHAPES = (("Llama-2 7B (MHA, 32 KV)", "Llama-2 7B", None), ("Llama-2 7B widths, 8 KV", "Llama-2 7B", 8),
          ("Mistral 7B (GQA, 8 KV)", "Mistral 7B", None), ("Mistral 7B widths, 32 KV", "Mistral 7B", 32),
          ("Llama-3.2 3B (GQA, 8 KV)", "Llama-3.2 3B", None), ("Llama-3.2 3B widths, 24 KV", "Llama-3.2 3B", 24))
LAYERS = (2, 6)
SEQ = 64
REPS = int(os.environ.get("REPS", "30"))


def main(argv: list[str]) -> int:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    import train_dist

    out_path = argv[0]
    cpu = int(argv[1]) if len(argv) > 1 else -1
    if cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
    dev = torch.device("cuda", 0)
    Llama = train_dist.build_model_classes(torch)

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n: dict[str, int] = {}

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            k = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
            self.n[k] = self.n.get(k, 0) + 1
            return func(*args, **(kwargs or {}))

    result: dict[str, Any] = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "seq_len": SEQ,
                              "layers": LAYERS, "reps": REPS, "cpu": cpu, "shapes": {}}
    for label, preset, kv in SHAPES:
        row: dict[str, Any] = {}
        try:
            base = models.preset(preset)
            m0 = base.replace(name=label, n_kv_heads=kv or base.n_kv_heads, tied_embeddings=False,
                              published_params=0.0)
            for n in LAYERS:
                m = m0.replace(n_layers=n)
                with torch.device(dev):
                    model = Llama(m)
                tok = torch.randint(0, m.vocab, (1, SEQ), device=dev)

                def fwd(model: Any = model, tok: Any = tok, m: Any = m) -> Any:
                    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                        logits = model(tok)
                    return torch.nn.functional.cross_entropy(logits.float().view(-1, m.vocab), tok.view(-1))

                for _ in range(3):  # warm-up
                    fwd().backward()
                    model.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
                cf, cb = Count(), Count()
                with cf:
                    loss = fwd()
                with cb:
                    loss.backward()
                torch.cuda.synchronize()
                model.zero_grad(set_to_none=True)
                f_s, b_s = [], []
                for _ in range(REPS):
                    t0 = time.perf_counter()
                    loss = fwd()
                    t1 = time.perf_counter()
                    torch.cuda.synchronize()
                    t2 = time.perf_counter()
                    loss.backward()
                    t3 = time.perf_counter()
                    torch.cuda.synchronize()
                    model.zero_grad(set_to_none=True)
                    f_s.append(t1 - t0)
                    b_s.append(t3 - t2)
                row[str(n)] = {"forward_ops": cf.n, "backward_ops": cb.n, "n_forward": sum(cf.n.values()),
                               "n_backward": sum(cb.n.values()), "forward_s": statistics.median(f_s),
                               "backward_s": statistics.median(b_s), "forward_all_s": f_s, "backward_all_s": b_s}
                del model, loss, fwd
                torch.cuda.empty_cache()
            lo, hi = (row[str(n)] for n in LAYERS)
            row["per_layer"] = {k: (hi[k] - lo[k]) / (LAYERS[1] - LAYERS[0])
                                for k in ("n_forward", "n_backward", "forward_s", "backward_s")}
            row["model"] = models.as_dict(m0)
        except Exception as e:  # noqa: BLE001 - record and go on
            row["error"] = f"{type(e).__name__}: {e}"[:600]
        result["shapes"][label] = row
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)
        p = row.get("per_layer")
        print(f"{label:30s} " + (f"ops/layer fwd {p['n_forward']:.0f} bwd {p['n_backward']:.0f}; host/layer fwd "
                                 f"{p['forward_s'] * 1e6:.0f} us bwd {p['backward_s'] * 1e6:.0f} us" if p
                                 else row.get("error", "")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
